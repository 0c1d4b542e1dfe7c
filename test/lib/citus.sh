# Sourced. Citus for the citus suite (issue 25): where Citus is installed for
# the server under test (Citus's own packages, e.g. postgresql-17-citus-13.2,
# put citus.so in that server's pg_config --pkglibdir), a cluster of a
# coordinator and two workers on local ports. The project never carries,
# fetches or builds Citus's source: without an installation the suite is
# skipped (test/run_all.sh says so in one line).

# citus_pg_config MAJOR SYSTEM_PG_CONFIG: prints the pg_config of a
# PostgreSQL MAJOR that has Citus: CITUS_PG_CONFIG when it names one of
# that major, else SYSTEM_PG_CONFIG when its pkglibdir holds citus.so. Fails
# (prints nothing) when neither has Citus.
citus_pg_config() {
    local major=$1 system=$2 config
    for config in ${CITUS_PG_CONFIG:-} "$system"; do
        [ -x "$config" ] || continue
        [ "$("$config" --version | sed -n 's/^PostgreSQL \([0-9][0-9]*\).*/\1/p')" = "$major" ] || continue
        if [ -f "$("$config" --pkglibdir)/citus.so" ]; then
            echo "$config"
            return 0
        fi
    done
    return 1
}

# citus_version: the Citus release of the running cluster's coordinator.
citus_version() {
    "$PGBIN/psql" -X -q -At -h "$CITUS_DIR" -p "${CITUS_PORTS[0]}" -U postgres -d postgres \
        -c "SELECT extversion FROM pg_extension WHERE extname = 'citus'" 2>/dev/null
}

# citus_cluster_start: a coordinator and two workers under one directory,
# each listening on localhost on its own port (the nodes connect to each
# other over TCP), with citus preloaded; both extensions in database
# postgres of each node; the workers added to the coordinator. Sets
# CITUS_DIR, CITUS_PORTS (coordinator first) and PGHOST/PGPORT for the
# coordinator.
citus_cluster_start() {
    CITUS_DIR=$(mktemp -d /tmp/pg_idempotent-citus.XXXXXX)
    chmod 755 "$CITUS_DIR"
    [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$CITUS_DIR"
    local base=$(( 20000 + RANDOM % 30000 )) i port node
    CITUS_PORTS=()
    for i in 0 1 2; do
        port=$((base + i))
        node="$CITUS_DIR/node$i"
        as_pg "$PGBIN/initdb" -D "$node" -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync \
            >"$CITUS_DIR/initdb$i.log" 2>&1 || { cat "$CITUS_DIR/initdb$i.log" >&2; return 1; }
        cat >>"$node/postgresql.conf" <<CONF
listen_addresses = 'localhost'
port = $port
unix_socket_directories = '$CITUS_DIR'
shared_preload_libraries = 'citus'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 60
max_prepared_transactions = 40
shared_buffers = 64MB
citus.shard_count = 4
log_line_prefix = '%m [%p] %e '
log_min_messages = warning
CONF
        as_pg "$PGBIN/pg_ctl" -D "$node" -l "$CITUS_DIR/node$i.log" -w -t 60 start >/dev/null ||
            { cat "$CITUS_DIR/node$i.log" >&2; return 1; }
        CITUS_PORTS+=("$port")
        "$PGBIN/psql" -X -q -h "$CITUS_DIR" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 \
            -c "CREATE EXTENSION citus" -c "CREATE EXTENSION pg_idempotent" >/dev/null || return 1
    done
    "$PGBIN/psql" -X -q -h "$CITUS_DIR" -p "${CITUS_PORTS[0]}" -U postgres -d postgres -v ON_ERROR_STOP=1 \
        -c "SELECT citus_set_coordinator_host('localhost', ${CITUS_PORTS[0]})" \
        -c "SELECT citus_add_node('localhost', ${CITUS_PORTS[1]})" \
        -c "SELECT citus_add_node('localhost', ${CITUS_PORTS[2]})" >/dev/null || return 1
}

citus_cluster_stop() {
    [ -n "${CITUS_DIR:-}" ] && [ -d "$CITUS_DIR" ] || return 0
    local i
    for i in 0 1 2; do
        [ -d "$CITUS_DIR/node$i" ] &&
            as_pg "$PGBIN/pg_ctl" -D "$CITUS_DIR/node$i" -m immediate stop >/dev/null 2>&1
    done
    rm -rf "$CITUS_DIR"
    CITUS_DIR=
}

# Crashes on any node.
citus_log_problems() {
    grep -E "terminated by signal|PANIC|TRAP:|server process .* was terminated" "$CITUS_DIR"/node*.log || true
}
