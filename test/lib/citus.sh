# Sourced. Citus for the citus suite (issue 25): built once from CITUS_SRC
# into a cache, copied into a run's private PostgreSQL installation, and a
# cluster of a coordinator and two workers on local ports.
#
# CITUS_SRC: a Citus source tarball or directory. CITUS_PATCHES: patches to
# apply (patch -p1), by default the *.patch files beside a tarball (the one
# in ../shared/citus that Citus 13.2.2 needs for PostgreSQL 15.20).
# CITUS_CACHE (/var/cache/pg_idempotent/citus): where builds are kept, one
# per source, patches and PostgreSQL version: a second run does not rebuild.

CITUS_CACHE=${CITUS_CACHE:-/var/cache/pg_idempotent/citus}
# What building Citus needs beyond the server's development files.
CITUS_DEPS=(liblz4-dev libzstd-dev libkrb5-dev libssl-dev libicu-dev libselinux1-dev libxslt1-dev libpam0g-dev)

# citus_patches: CITUS_PATCH_LIST, an array (paths may hold spaces).
citus_patches() {
    CITUS_PATCH_LIST=()
    if [ -n "${CITUS_PATCHES+x}" ]; then
        read -r -a CITUS_PATCH_LIST <<<"$CITUS_PATCHES"
    elif [ -f "$CITUS_SRC" ]; then
        local p
        for p in "$(dirname "$CITUS_SRC")"/*.patch; do
            [ -f "$p" ] && CITUS_PATCH_LIST+=("$p")
        done
    fi
    return 0
}

# The cache key: the source's content, the patches and the server version.
citus_key() {
    local pg_config=$1 p
    {
        if [ -d "$CITUS_SRC" ]; then
            (cd "$CITUS_SRC" && find . -type f ! -path './.git/*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
        else
            sha256sum <"$CITUS_SRC"
        fi
        for p in ${CITUS_PATCH_LIST[@]+"${CITUS_PATCH_LIST[@]}"}; do sha256sum <"$p"; done
        "$pg_config" --version
    } | sha256sum | cut -c1-16
}

# citus_stage PG_CONFIG: builds Citus (once) and prints the directory that
# holds its installed files (make install DESTDIR=...), with the paths the
# pg_config of the build reports. Fails with the build log's tail.
citus_stage() {
    local pg_config=$1 key dir
    citus_patches
    key=$(citus_key "$pg_config") || return 1
    dir="$CITUS_CACHE/$key"
    mkdir -p "$CITUS_CACHE" || return 1
    # One build at a time per cache (CI and a developer may run at once);
    # who waited finds it complete.
    exec {citus_lock}>"$CITUS_CACHE/.lock" && flock "$citus_lock" || return 1
    if [ -f "$dir/.complete" ]; then
        flock -u "$citus_lock"
        echo "$dir/stage"
        return 0
    fi
    citus_build "$dir" "$pg_config"
    local rc=$?
    flock -u "$citus_lock"
    [ $rc -eq 0 ] && echo "$dir/stage"
    return $rc
}

# citus_build DIR PG_CONFIG: the build itself, into DIR/stage (under
# citus_stage's lock).
citus_build() {
    local dir=$1 pg_config=$2
    rm -rf "$dir" && mkdir -p "$dir/src" || return 1
    echo "citus: building from $CITUS_SRC into $dir (about 5 minutes)" >&2
    if [ -d "$CITUS_SRC" ]; then
        cp -a "$CITUS_SRC/." "$dir/src/" || return 1
    else
        tar -xzf "$CITUS_SRC" -C "$dir/src" --strip-components=1 || return 1
    fi
    local p
    for p in ${CITUS_PATCH_LIST[@]+"${CITUS_PATCH_LIST[@]}"}; do
        (cd "$dir/src" && patch -p1 <"$p") >>"$dir/build.log" 2>&1 || { tail -n 20 "$dir/build.log" >&2; return 1; }
    done
    if ! (cd "$dir/src" && ./configure --without-libcurl PG_CONFIG="$pg_config" &&
          make -j2 && make install DESTDIR="$dir/stage") >>"$dir/build.log" 2>&1; then
        tail -n 30 "$dir/build.log" >&2
        return 1
    fi
    rm -rf "$dir/src"  # the build tree is 300 MB; the stage is what runs
    touch "$dir/.complete"
}

# citus_install STAGE PRIVATE_ROOT: Citus's files into a private copy of
# the installation (test/lib/private_pg.sh), at the same paths below it.
citus_install() {
    local stage=$1 root=$2
    (cd "$stage" && tar -cf - .) | tar -C "$root" -xf - && chmod -R a+rX "$root"
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
