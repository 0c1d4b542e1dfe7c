#!/usr/bin/env bash
# `make sanitize` (and the suite `sanitize` of `make test`): the pg_regress
# suite and the isolation specs against the module built with AddressSanitizer
# and UndefinedBehaviorSanitizer, in a server with the ASan runtime preloaded.
#
#   1. copies the source tree (the working tree: tracked and untracked files,
#      no build output) into a directory of its own, because PGXS builds in
#      the tree and other engineers build in theirs
#   2. copies PostgreSQL's installation (programs, modules, share files,
#      headers; none of pg_idempotent's files) into that directory, as a
#      private installation (step 2 below says how that works). Nothing is
#      written into PostgreSQL's own installation, so other clusters'
#      servers never load the sanitized module, and no lock is taken: other
#      runs go on meanwhile.
#   3. builds the copy with -fsanitize=address,undefined
#      -fno-sanitize-recover=undefined and installs it into the private
#      installation
#   4. starts a private cluster of the private installation's programs, with
#      LD_PRELOAD of gcc 12's libasan (and preload.c, see there), runs regress
#      and isolation, and checks that ASan wrote no report, that the server
#      log shows no UBSan report ("runtime error:") and no crash
#   5. self-test: calls two deliberate bugs (selftest.cpp) in that server and
#      fails unless ASan and UBSan report them, so "no report" above means
#      the sanitizers were watching
#
# Prints "ok N - name" / "not ok N - name" per check (test/run_all.sh counts
# them) and "N passed, N failed" last; exits non-zero on any failure.
# SANITIZE_SOURCE: the tree to test (default: this checkout); SANITIZE_OUT:
# where logs and reports go (default: a new /tmp/pg_idempotent-sanitize.*),
# kept after the run. The build copy and the private installation are
# removed.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
source test/lib/deps.sh
source test/lib/cluster.sh
source test/lib/private_pg.sh
source test/lib/copy_tree.sh

SOURCE=$(cd "${SANITIZE_SOURCE:-$ROOT}" && pwd)
OUT=${SANITIZE_OUT:-$(mktemp -d /tmp/pg_idempotent-sanitize.XXXXXX)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SANITIZED="$OUT/sanitized"
PRIVATE="$OUT/install"
REPORTS="$OUT/reports"
# PostgreSQL's own installation: only read, to copy it (step 2).
SYSTEM_PG_CONFIG="$PGBIN/pg_config"

# -fno-sanitize-recover: any UB kills the backend, so it cannot scroll by
# unnoticed. CXXFLAGS replaces PostgreSQL's -O2 -g (a third of the compile
# time, and stacks that match the source), but keeps its code-generation
# flags: with -fwrapv, signed overflow is defined in the real build, and
# UBSan does not flag it here either. The project's PG_CXXFLAGS (-std=c++17
# -Werror ...) still apply. with_llvm=no: no JIT bitcode (the server runs
# with jit = off).
SAN_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
SAN_CXXFLAGS="-O1 -g1 -fwrapv -fno-strict-aliasing $SAN_FLAGS"

N=0
PASSED=0
FAILED=0
check() {  # name ok|fail
    N=$((N + 1))
    if [ "$2" = ok ]; then
        PASSED=$((PASSED + 1)); echo "ok $N - $1"
    else
        FAILED=$((FAILED + 1)); echo "not ok $N - $1"
    fi
}
step() { echo "== $* ($SECONDS s)"; }

finish() {
    cluster_stop
    rm -rf "$SANITIZED" "$PRIVATE"
    echo
    echo "logs: $OUT"
    echo "$PASSED passed, $FAILED failed"
}
trap finish EXIT
trap 'exit 130' INT TERM

ensure_deps "${BUILD_DEPS[@]}" "${TEST_DEPS[@]}"
ensure_locale de_DE.UTF-8

LIBASAN=$(realpath "$(g++ -print-file-name=libasan.so)")
if [ ! -f "$LIBASAN" ]; then
    echo "gcc's ASan runtime (libasan.so) is missing: install libasan8" >&2
    check asan-runtime fail
    exit 1
fi

# --- 1. the source -----------------------------------------------------------
step "copying $SOURCE"
mkdir -p "$SANITIZED"
copy_tree "$SOURCE" "$SANITIZED"

# --- 2. a private PostgreSQL installation ------------------------------------
# The sanitized module never goes where PostgreSQL's servers load modules
# from: another cluster's server that loaded it meanwhile would abort ("ASan
# runtime does not come first"), and other test runs would test it instead
# of their own build (test/lib/private_pg.sh).
step "private PostgreSQL installation"
if PGBIN=$(private_pg_copy "$SYSTEM_PG_CONFIG" "$PRIVATE"); then
    check private-installation ok
else
    check private-installation fail; exit 1
fi
PG_CONFIG="$PGBIN/pg_config"
PGXS_DIR=$(cd "$(dirname "$("$PG_CONFIG" --pgxs)")/../.." && pwd)
PKGLIB=$("$PG_CONFIG" --pkglibdir)

# --- 3. build and install ----------------------------------------------------
step "build (ASan + UBSan) and install into $PRIVATE"
if make -s -C "$SANITIZED" -j2 PG_CONFIG="$PG_CONFIG" with_llvm=no CXXFLAGS="$SAN_CXXFLAGS" COPT="$SAN_FLAGS" \
        pg_idempotent.so >"$OUT/build-sanitized.log" 2>&1 &&
   readelf -d "$SANITIZED/pg_idempotent.so" | grep -q 'NEEDED.*libasan'; then
    check build-sanitized ok
else
    cat "$OUT/build-sanitized.log"; check build-sanitized fail; exit 1
fi
if make -s -C "$SANITIZED" PG_CONFIG="$PG_CONFIG" with_llvm=no CXXFLAGS="$SAN_CXXFLAGS" COPT="$SAN_FLAGS" \
        install >"$OUT/install-sanitized.log" 2>&1 &&
   cmp -s "$SANITIZED/pg_idempotent.so" "$PKGLIB/pg_idempotent.so"; then
    check install-sanitized ok
else
    cat "$OUT/install-sanitized.log"; check install-sanitized fail; exit 1
fi

# preload.c goes after libasan in LD_PRELOAD; selftest.cpp is built like the
# module and loaded by absolute path, never installed.
if gcc -std=c11 -Wall -Wextra -Werror -O2 -fPIC -shared -o "$OUT/preload.so" \
        test/sanitize/preload.c -ldl >"$OUT/build-selftest.log" 2>&1 &&
   g++ -std=c++17 -Wall -Wextra -Werror -fPIC -shared $SAN_CXXFLAGS \
        -isystem "$("$PG_CONFIG" --includedir-server)" -o "$OUT/selftest.so" \
        test/sanitize/selftest.cpp >>"$OUT/build-selftest.log" 2>&1; then
    check build-selftest ok
else
    cat "$OUT/build-selftest.log"; check build-selftest fail; exit 1
fi

# The server runs as postgres: it must read the installation and the
# libraries, and write reports.
mkdir -p "$REPORTS"
chmod a+rx "$OUT"
chmod -R a+rX "$PRIVATE"
chmod a+rwx "$REPORTS"
chmod a+r "$OUT/preload.so" "$OUT/selftest.so"

# --- 4. the suites -----------------------------------------------------------
# detect_leaks=0: PostgreSQL frees memory contexts wholesale and leaves the
# rest to process exit, so LeakSanitizer would report noise. abort_on_error:
# a report kills the backend with SIGABRT, which the postmaster logs too.
# allocator_may_return_null: a failed malloc returns NULL, as glibc's does,
# so PostgreSQL raises its own "out of memory". quarantine_size_mb: 64 MB of
# freed memory held back per process instead of 256, for CI machines with
# 40 backends.
ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:disable_coredump=1:allocator_may_return_null=1"
ASAN_OPTIONS+=":quarantine_size_mb=64:log_path=$REPORTS/asan"
CLUSTER_SERVER_ENV=("LD_PRELOAD=$LIBASAN $OUT/preload.so" "ASAN_OPTIONS=$ASAN_OPTIONS")
CLUSTER_EXTRA_CONF="jit = off"
step "starting a private cluster (the private installation's programs) with the ASan runtime preloaded"
if ! cluster_start; then
    check cluster-start fail; exit 1
fi
echo "   socket $PGHOST, port $PGPORT"

# The backend really runs under ASan and really loaded the sanitized module,
# from the private installation.
maps=$(psql -X -q -At -v ON_ERROR_STOP=1 -c "CREATE DATABASE idem_sanitize_check" 2>&1 &&
       psql -X -q -At -v ON_ERROR_STOP=1 -d idem_sanitize_check \
           -c "CREATE EXTENSION pg_idempotent" \
           -c "SELECT idem.checksum_query('VALUES (1)') IS NOT NULL" \
           -c "SELECT pg_read_file('/proc/self/maps')" 2>&1)
if grep -q "$(basename "$LIBASAN")" <<<"$maps" && grep -q "$PKGLIB/pg_idempotent.so" <<<"$maps" &&
   readelf -d "$PKGLIB/pg_idempotent.so" | grep -q 'NEEDED.*libasan'; then
    check backend-runs-sanitized-module ok
else
    echo "$maps" | grep -E "asan|pg_idempotent|ERROR" | head
    check backend-runs-sanitized-module fail
fi

# pg_regress lines: "test NAME ... ok|FAILED" (PostgreSQL 15) or "ok N - NAME".
check_runner_output() {  # log prefix rc
    local line counted=0
    while IFS= read -r line; do
        if [[ "$line" =~ ^(test|[[:space:]]+)[[:space:]]*([A-Za-z0-9_-]+)[[:space:]]+\.\.\.[[:space:]]+(ok|FAILED|failed) ]]; then
            counted=1
            [ "${BASH_REMATCH[3]}" = ok ] && check "$2-${BASH_REMATCH[2]}" ok || check "$2-${BASH_REMATCH[2]}" fail
        elif [[ "$line" =~ ^(not\ )?ok\ [0-9]+[[:space:]]+[-+][[:space:]]+([A-Za-z0-9_-]+) ]]; then
            counted=1
            [ -z "${BASH_REMATCH[1]}" ] && check "$2-${BASH_REMATCH[2]}" ok || check "$2-${BASH_REMATCH[2]}" fail
        fi
    done <"$1"
    # A runner that could not start, or counted nothing, is a failure too.
    if [ "$counted" = 0 ] || { [ "$3" -ne 0 ] && ! grep -qE "\.\.\. +(FAILED|failed)|^not ok" "$1"; }; then
        sed 's/^/    /' "$1"; check "$2-runner" fail
    fi
}

step "regress (pg_regress, sanitized)"
(cd "$SANITIZED" && timeout 1200 "$PGXS_DIR/src/test/regress/pg_regress" --bindir="$PGBIN" \
    --inputdir=. --outputdir="$OUT/regress" --dbname=idem_regress --load-extension=pg_idempotent \
    $(cd sql && ls *.sql | sed "s/\.sql$//" | LC_ALL=C sort)) >"$OUT/regress.log" 2>&1
check_runner_output "$OUT/regress.log" regress $?
[ -f "$OUT/regress/regression.diffs" ] && cat "$OUT/regress/regression.diffs"

if ls "$SANITIZED"/test/specs/*.spec >/dev/null 2>&1; then
    step "isolation (pg_isolation_regress, sanitized)"
    (cd "$SANITIZED" && timeout 1200 "$PGXS_DIR/src/test/isolation/pg_isolation_regress" --bindir="$PGBIN" \
        --inputdir=test --outputdir="$OUT/isolation" --dbname=idem_isolation \
        --load-extension=pg_idempotent \
        $(cd test/specs && ls *.spec | sed 's/\.spec$//' | LC_ALL=C sort)) >"$OUT/isolation.log" 2>&1
    check_runner_output "$OUT/isolation.log" isolation $?
    [ -f "$OUT/isolation/regression.diffs" ] && cat "$OUT/isolation/regression.diffs"
fi

# ASan writes its reports to $REPORTS/asan.PID; UBSan's go to the server log
# (preload.c says why), as would anything a runtime prints before log_path
# is set up.
step "sanitizer reports and the server log"
if ls "$REPORTS"/asan.* >/dev/null 2>&1; then
    for f in "$REPORTS"/asan.*; do echo "--- $f"; cat "$f"; done
    check no-asan-report fail
else
    check no-asan-report ok
fi
SAN_PATTERN="runtime error:|ERROR: AddressSanitizer|ERROR: LeakSanitizer|SUMMARY: [A-Za-z]*Sanitizer"
if grep -qE "$SAN_PATTERN" "$CLUSTER_DIR/server.log"; then
    grep -E -A20 "$SAN_PATTERN" "$CLUSTER_DIR/server.log" | head -80
    check no-ubsan-report fail
else
    check no-ubsan-report ok
fi
# cluster_log_problems, plus a backend that died through _exit(1) without
# PostgreSQL's cleanup (what a UBSan report does), which the postmaster logs
# as "exited with exit code 1".
problems=$( (cluster_log_problems; grep -E "\(PID [0-9]+\) exited with exit code" "$CLUSTER_DIR/server.log") | sort -u)
if [ -n "$problems" ]; then
    echo "server log shows a crash:"; echo "$problems"
    check server-log-no-crash fail
else
    check server-log-no-crash ok
fi

# --- 5. self-test ------------------------------------------------------------
# Each probe crashes its backend on purpose; the postmaster then restarts
# every backend, so the probes come after the suites and their checks.
wait_for_server() {
    local i
    for i in $(seq 1 120); do
        psql -X -q -At -c "SELECT 1" >/dev/null 2>&1 && return 0
        sleep 0.5
    done
    return 1
}
probe() {  # C function, argument
    psql -X -q -At -d idem_sanitize_check \
        -c "CREATE OR REPLACE FUNCTION $1(int) RETURNS int AS '$OUT/selftest.so' LANGUAGE C STRICT" \
        -c "SELECT $1($2)" >"$OUT/selftest-$1.out" 2>&1
    wait_for_server
}
step "self-test: deliberate bugs must be reported"
log_lines=$(wc -l <"$CLUSTER_DIR/server.log")
probe sanitize_selftest_heap_overflow 8
if grep -ls "heap-buffer-overflow" "$REPORTS"/asan.* 2>/dev/null | xargs -r grep -l "in sanitize_selftest_heap_overflow" |
       grep -q . &&
   tail -n +"$((log_lines + 1))" "$CLUSTER_DIR/server.log" | grep -q "terminated by signal 6"; then
    check selftest-asan-heap-buffer-overflow ok
else
    cat "$OUT/selftest-sanitize_selftest_heap_overflow.out"
    tail -n +"$((log_lines + 1))" "$CLUSTER_DIR/server.log"
    check selftest-asan-heap-buffer-overflow fail
fi
log_lines=$(wc -l <"$CLUSTER_DIR/server.log")
probe sanitize_selftest_shift 40
if tail -n +"$((log_lines + 1))" "$CLUSTER_DIR/server.log" |
       grep -q "selftest.cpp:[0-9:]* runtime error: shift exponent 40 is too large"; then
    check selftest-ubsan-shift ok
else
    cat "$OUT/selftest-sanitize_selftest_shift.out"
    tail -n +"$((log_lines + 1))" "$CLUSTER_DIR/server.log"
    check selftest-ubsan-shift fail
fi
cp "$CLUSTER_DIR/server.log" "$OUT/server.log"
cluster_stop

[ "$FAILED" -eq 0 ]
