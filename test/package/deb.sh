#!/usr/bin/env bash
# The Debian package, end to end (suite "package" of make test):
#
#   1. the release numbers agree (control file, Makefile, debian/changelog);
#   2. build_deb.sh builds the package in a copy of the tree, with the
#      build-time pg_regress run against the packaged files;
#   3. dpkg-deb -I / -c / -x: name, version, dependencies, the files a DBA
#      needs, byte-identical SQL scripts and control file;
#   4. as root, holding /tmp/pg_idempotent-install.lock exclusively:
#      apt installs it, CREATE EXTENSION on a throwaway cluster (and an
#      update along every packaged upgrade path), a merge and its replay,
#      the command line tool against it, dpkg --purge, and the files that
#      were installed before put back byte for byte.
#
# For the PostgreSQL major PG_MAJOR (15, Debian 12's, by default): the suite
# runs in the Debian roots of 17 and 18 too (test/run_all.sh), where
# debian/pgversions (15+) gives postgresql-17-pg-idempotent and
# postgresql-18-pg-idempotent.
#
# The package installs into the same paths as `make install`. Other test runs
# hold the lock shared while they use the installed module, so this waits
# until none does; the caller must not hold the lock itself (run_all.sh
# releases it before the package suite). Prints "ok N - ..." lines; exits
# non-zero if any check failed.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/test/lib/cluster.sh"

MAJOR=${PG_MAJOR:-15}
PKG=postgresql-$MAJOR-pg-idempotent
LOCK=/tmp/pg_idempotent-install.lock
EXTDIR=usr/share/postgresql/$MAJOR/extension
BINDIR=usr/lib/postgresql/$MAJOR/bin
LIBDIR=usr/lib/postgresql/$MAJOR/lib

n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $1"; failed=$((failed + 1)); }
check() {  # description command...: one check from a command's status
    local d=$1; shift
    if "$@"; then ok "$d"; else not_ok "$d"; fi
}
same() {  # description got expected
    if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1 (got '$2', expected '$3')"; fi
}
done_testing() {
    echo "1..$n"
    exit $((failed > 0))
}

WORK=$(mktemp -d /tmp/pg_idempotent-deb.XXXXXX)
chmod 755 "$WORK"
INSTALLED_BY_US=
RESTORED=

# Whatever happens, the machine is left as it was: the cluster stopped, the
# package purged, the files it replaced put back, the lock released.
restore_machine() {
    cluster_stop
    if [ -n "$INSTALLED_BY_US" ]; then
        dpkg_wait --purge "$PKG" >"$WORK/purge.log" 2>&1 || cat "$WORK/purge.log"
        INSTALLED_BY_US=
    fi
    if [ -z "$RESTORED" ] && [ -s "$WORK/before.list" ]; then
        tar -xPf "$WORK/before.tar"
        RESTORED=1
    fi
}
cleanup() {
    restore_machine
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# dpkg refuses to start while another dpkg or apt holds its lock (another
# engineer's apt-get install): wait for it rather than fail.
dpkg_wait() {
    local i
    for i in $(seq 1 120); do
        if dpkg "$@" >"$WORK/dpkg.out" 2>&1; then
            cat "$WORK/dpkg.out"; return 0
        fi
        if ! grep -qiE "lock.*(another process|held by)|database is locked" "$WORK/dpkg.out"; then
            cat "$WORK/dpkg.out"; return 1
        fi
        sleep 5
    done
    cat "$WORK/dpkg.out"; return 1
}

# 1. One release, written in three places that must agree.
cd "$ROOT"
VERSION=$(sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" pg_idempotent.control)
mk_version=$(sed -n 's/^EXTVERSION *= *\([^ ]*\).*/\1/p' Makefile)
deb_version=$(dpkg-parsechangelog -l debian/changelog -S Version)
upstream=${deb_version#*:}
upstream=${upstream%-*}
same "Makefile EXTVERSION equals the control file's default_version" "$mk_version" "$VERSION"
same "debian/changelog's version equals the control file's default_version" "$upstream" "$VERSION"
same "debian/pgversions covers PostgreSQL 15 and later" "$(grep -v '^#' debian/pgversions | xargs)" "15+"
same "the package is built for this machine's PostgreSQL, $MAJOR" "$(pg_buildext supported-versions "$ROOT" 2>&1 | xargs)" "$MAJOR"
# The scripts the package must ship: every install and upgrade script.
mapfile -t SCRIPTS < <(cd "$ROOT" && ls pg_idempotent--*.sql | LC_ALL=C sort)

# 2. Build.
ARCH=$(dpkg --print-architecture)
DEB="$WORK/out/${PKG}_${VERSION}_${ARCH}.deb"
start=$SECONDS
if bash "$ROOT/test/package/build_deb.sh" "$WORK/out" >"$WORK/build.log" 2>&1 && [ -f "$DEB" ]; then
    ok "dpkg-buildpackage built $(basename "$DEB") in $((SECONDS - start)) s (build-time pg_regress: $(grep -oE 'All [0-9]+ tests passed' "$WORK/build.log" || echo skipped))"
else
    not_ok "dpkg-buildpackage built $(basename "$DEB"); the end of its log:"
    tail -60 "$WORK/build.log"
    done_testing
fi

# 3. What is inside.
same "package name" "$(dpkg-deb -f "$DEB" Package)" "$PKG"
same "package version" "$(dpkg-deb -f "$DEB" Version)" "$VERSION"
depends=$(dpkg-deb -f "$DEB" Depends)
check "depends on postgresql-$MAJOR ($depends)" grep -qE "(^|, )postgresql-$MAJOR( |,|$)" <<<"$depends"
check "depends on libpq5, for the command line tool" grep -qE "(^|, )libpq5( |,|$)" <<<"$depends"

dpkg-deb -c "$DEB" | awk '$1 ~ /^-/ { sub(/^\.\//, "", $6); print $6 }' | LC_ALL=C sort >"$WORK/files"
for f in "$LIBDIR/pg_idempotent.so" "$BINDIR/pg_idempotent" "$EXTDIR/pg_idempotent.control" \
         "usr/share/doc/$PKG/copyright"; do
    check "contains /$f" grep -qxF "$f" "$WORK/files"
done
expected_ext=$( (echo pg_idempotent.control; printf '%s\n' "${SCRIPTS[@]}") | LC_ALL=C sort | xargs)
packaged_ext=$(sed -n "s|^$EXTDIR/||p" "$WORK/files" | xargs)
same "extension directory holds the control file and every pg_idempotent--*.sql of the tree" \
    "$packaged_ext" "$expected_ext"

dpkg-deb -x "$DEB" "$WORK/x"
for f in pg_idempotent.control "${SCRIPTS[@]}"; do
    check "packaged $f is the tree's" cmp -s "$ROOT/$f" "$WORK/x/$EXTDIR/$f"
done
check "the command line tool finds all its libraries" \
    bash -c "! ldd '$WORK/x/$BINDIR/pg_idempotent' | grep -q 'not found'"

# 4. Install and use it.
if [ "$(id -u)" -ne 0 ]; then
    not_ok "installing the package needs root (dpkg -i)"
    done_testing
fi
status=$(dpkg-query -W -f='${db:Status-Status}' "$PKG" 2>/dev/null || true)
if [ -n "$status" ] && [ "$status" != not-installed ]; then
    not_ok "$PKG is already on this machine ($status): this test would replace and then purge it; remove it (dpkg --purge $PKG, then make install) or leave package out of SUITES"
    done_testing
fi

exec 8>>"$LOCK"
chmod a+rw "$LOCK" 2>/dev/null || true
start=$SECONDS
if ! flock -w 1800 8; then
    not_ok "took $LOCK exclusively (other test runs still hold it after 30 min)"
    done_testing
fi
ok "took $LOCK exclusively after $((SECONDS - start)) s"

# The files the package will overwrite (a `make install` of some checkout),
# saved with their checksums, to be put back after the purge.
while IFS= read -r f; do
    [ -e "/$f" ] && echo "/$f"
done <"$WORK/files" >"$WORK/before.list"
if [ -s "$WORK/before.list" ]; then
    tar -cPf "$WORK/before.tar" -T "$WORK/before.list"
    xargs -d '\n' sha256sum <"$WORK/before.list" >"$WORK/before.sha256"
fi

# Set first: an install that fails halfway leaves a package to purge too.
# apt, as a DBA installs a downloaded package: it checks the dependencies
# against the archive's packages, and waits for another apt or dpkg.
INSTALLED_BY_US=1
if DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        -o DPkg::Lock::Timeout=600 "$DEB" >"$WORK/install.log" 2>&1; then
    ok "apt-get install ./$(basename "$DEB")"
else
    not_ok "apt-get install ./$(basename "$DEB"):"
    cat "$WORK/install.log"
    done_testing
fi
same "dpkg --verify: the installed files are the package's" "$(dpkg --verify "$PKG" 2>&1)" ""

# The server must not inherit the lock: a server left running would hold it.
if cluster_start 8>&- >"$WORK/cluster.log" 2>&1; then
    ok "throwaway cluster started"
    psql_q() { "$PGBIN/psql" -X -q -At -v ON_ERROR_STOP=1 "$@"; }
    same "CREATE EXTENSION pg_idempotent installs the default version" \
        "$(psql_q -d postgres -c 'CREATE EXTENSION pg_idempotent' \
              -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_idempotent'" 2>&1)" "$VERSION"

    # Every older version with a packaged update path to the default one
    # (the previous release among them): install it (CREATE EXTENSION runs
    # 0.1.0's script and the upgrades up to it), then ALTER EXTENSION ...
    # UPDATE.
    paths=$(psql_q -d postgres -c "SELECT source FROM pg_extension_update_paths('pg_idempotent')
                                   WHERE target = '$VERSION' AND path IS NOT NULL ORDER BY 1" 2>&1)
    for old in $paths; do
        db="idem_pkg_from_${old//[^0-9a-z]/_}"
        same "CREATE EXTENSION ... VERSION '$old', then ALTER EXTENSION ... UPDATE reaches $VERSION" \
            "$(psql_q -d postgres -c "CREATE DATABASE $db" >/dev/null 2>&1;
               psql_q -d "$db" -c "CREATE EXTENSION pg_idempotent VERSION '$old'" \
                   -c 'ALTER EXTENSION pg_idempotent UPDATE' \
                   -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_idempotent'" 2>&1)" "$VERSION"
    done

    # A merge and its replay: the second call writes nothing.
    merged=$(psql_q -d postgres -c "CREATE TABLE pkg_src (id int PRIMARY KEY, v text)" \
        -c "CREATE TABLE pkg_dst (id int PRIMARY KEY, v text)" \
        -c "INSERT INTO pkg_src SELECT g, 'v' || g FROM generate_series(1, 50) g" \
        -c "SELECT inserted, unchanged FROM idem.merge('pkg_dst', 'pkg_src')" \
        -c "SELECT inserted, unchanged FROM idem.merge('pkg_dst', 'pkg_src')" \
        -c "SELECT count(*) FROM pkg_dst" 2>&1 | xargs)
    same "idem.merge inserts 50 rows; its replay finds them unchanged" "$merged" "50|0 0|50 50"

    sql_sum=$(psql_q -d postgres -c "CREATE TABLE pkg_t (id int PRIMARY KEY, v text)" \
        -c "INSERT INTO pkg_t SELECT g, 'row ' || g FROM generate_series(1, 100) g" \
        -c "SELECT idem.checksum('pkg_t')" 2>&1)
    check "idem.checksum works ($sql_sum)" grep -qE '^v1:100:[0-9a-f]{32}$' <<<"$sql_sum"

    CLI="/$BINDIR/pg_idempotent"
    CONN="host=$PGHOST port=$PGPORT dbname=postgres user=postgres"
    same "the packaged command line tool: pg_idempotent checksum equals idem.checksum" \
        "$("$CLI" checksum -d "$CONN" pkg_t 2>"$WORK/cli.err" | cut -f2)" "$sql_sum"
    "$CLI" rerun -d "$CONN" -t pkg_t -- "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$CONN" \
        -c "INSERT INTO pkg_t VALUES (0, 'zero') ON CONFLICT DO NOTHING" >"$WORK/rerun-safe.out" 2>&1
    same "pg_idempotent rerun of an idempotent job exits 0" "$?" 0
    "$CLI" rerun -d "$CONN" -t pkg_t -- "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$CONN" \
        -c "INSERT INTO pkg_t SELECT max(id) + 1, 'more' FROM pkg_t" >"$WORK/rerun-unsafe.out" 2>&1
    same "pg_idempotent rerun of an appending job exits 1" "$?" 1
    problems=$(cluster_log_problems)
    same "server log shows no crash" "$problems" ""
    cluster_stop
else
    not_ok "throwaway cluster started:"
    cat "$WORK/cluster.log"
fi

# Purge, and check that nothing of the package is left before putting back
# what was there.
if dpkg_wait --purge "$PKG" >"$WORK/purge.log" 2>&1; then
    INSTALLED_BY_US=
    ok "dpkg --purge $PKG"
else
    not_ok "dpkg --purge $PKG:"
    cat "$WORK/purge.log"
fi
status=$(dpkg-query -W -f='${db:Status-Status}' "$PKG" 2>/dev/null)
same "dpkg knows the package no more" "${status:-not-installed}" not-installed
left=$(while IFS= read -r f; do [ -e "/$f" ] && echo "/$f"; done <"$WORK/files")
same "no file of the package is left" "$left" ""
if [ -s "$WORK/before.list" ]; then
    restore_machine
    check "the $(wc -l <"$WORK/before.list") files installed before are back, byte for byte" \
        sha256sum --quiet -c "$WORK/before.sha256"
fi
flock -u 8
done_testing
