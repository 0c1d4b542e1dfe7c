# Sourced. A private, throwaway PostgreSQL cluster for tests, the demo and
# the benchmarks: its own data directory, Unix socket directory and port, no
# TCP listener (so it runs beside any server on 5432), stopped and removed by
# cluster_stop, which callers put in an EXIT trap.
#
# As root the server runs as the postgres OS user (initdb refuses root);
# clients may stay root and connect as the database user postgres.
# CLUSTER_EXTRA_CONF adds lines to postgresql.conf; CLUSTER_SERVER_ENV, an
# array of NAME=VALUE, adds environment to the server process.

# PGBIN: the programs to run (Debian's PostgreSQL PG_MAJOR, 15, by default).
PGBIN=${PGBIN:-/usr/lib/postgresql/${PG_MAJOR:-15}/bin}

# As root, the command runs as postgres, from a directory postgres can
# enter: a checkout under /root (a 0700 home) is not one, and the server and
# psql would say "could not change directory". Callers that need another
# directory cd into one of their own first.
as_pg() {
    if [ "$(id -u)" -eq 0 ]; then
        if runuser -u postgres -- test -x "$PWD"; then
            runuser -u postgres -- "$@"
        else
            (cd / && runuser -u postgres -- "$@")
        fi
    else
        "$@"
    fi
}

cluster_start() {
    CLUSTER_DIR=$(mktemp -d /tmp/pg_idempotent.XXXXXX)
    chmod 755 "$CLUSTER_DIR"
    mkdir -p "$CLUSTER_DIR/sock" "$CLUSTER_DIR/work"
    if [ "$(id -u)" -eq 0 ]; then
        chown -R postgres:postgres "$CLUSTER_DIR"
    fi
    local port=$(( 20000 + RANDOM % 30000 ))
    as_pg "$PGBIN/initdb" -D "$CLUSTER_DIR/data" -U postgres -A trust -E UTF8 \
        --locale=C.UTF-8 --no-sync >"$CLUSTER_DIR/initdb.log" 2>&1 || {
        cat "$CLUSTER_DIR/initdb.log" >&2; return 1; }
    cat >>"$CLUSTER_DIR/data/postgresql.conf" <<CONF
listen_addresses = ''
port = $port
unix_socket_directories = '$CLUSTER_DIR/sock'
fsync = off
synchronous_commit = off
full_page_writes = off
max_prepared_transactions = 10
max_connections = 40
shared_buffers = 256MB
wal_level = logical
max_wal_senders = 4
log_line_prefix = '%m [%p] %e '
log_min_messages = warning
${CLUSTER_EXTRA_CONF:-}
CONF
    # CLUSTER_SERVER_ENV (an array of NAME=VALUE) reaches the server only, not
    # initdb or the clients: test/sanitize/run.sh preloads the ASan runtime.
    as_pg env ${CLUSTER_SERVER_ENV[@]+"${CLUSTER_SERVER_ENV[@]}"} \
        "$PGBIN/pg_ctl" -D "$CLUSTER_DIR/data" -l "$CLUSTER_DIR/server.log" -w -t 60 start \
        >/dev/null || { cat "$CLUSTER_DIR/server.log" >&2; return 1; }
    export PGHOST="$CLUSTER_DIR/sock" PGPORT="$port" PGUSER=postgres PGDATABASE=postgres
    unset PGPASSWORD PGSERVICE PGOPTIONS
}

cluster_stop() {
    [ -n "${CLUSTER_DIR:-}" ] && [ -d "$CLUSTER_DIR" ] || return 0
    as_pg "$PGBIN/pg_ctl" -D "$CLUSTER_DIR/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$CLUSTER_DIR"
    CLUSTER_DIR=
}

# Crashes that a later test's fresh connection would hide.
cluster_log_problems() {
    grep -E "terminated by signal|PANIC|TRAP:|server process .* was terminated" \
        "$CLUSTER_DIR/server.log" || true
}
