#!/usr/bin/env bash
# `make bench`: the benchmarks, on a private throwaway cluster.
#
#   1. installs missing Debian packages (as root; otherwise names them)
#   2. builds and installs the module
#   3. starts a private PostgreSQL 15 cluster (test/lib/cluster.sh), removed
#      on exit
#   4. runs every benchmark script bench/NAME.sh (all but run.sh, lib.sh
#      and report.sh), each in its own database with the extension and the
#      timer installed
#   5. writes the report to bench/results/latest.md and stdout, and the
#      timings of each function against the SQL a user would hand-write,
#      at every size, to bench/results/latest.tsv
#   6. bench/report.sh: from the TSV, the size tables at the top of
#      latest.md and the chart bench/results/latest.svg
#
# BENCH_SIZES ("10000 100000 1000000") sets the table sizes, in rows;
# BENCH_ONLY="checksum ..." runs only those benchmarks; BENCH_ROUNDS (7) and
# BENCH_WARMUP (1) set the rounds of every comparison; BENCH_RESULTS
# (bench/results) is where the report goes (a quick run with small sizes
# can write elsewhere and leave the committed report alone). A missed goal
# is reported, not hidden, and does not fail the run; an error does.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
source test/lib/deps.sh
source test/lib/cluster.sh
source bench/lib.sh

# Bad sizes fail before anything is built.
bench_parse_sizes
BENCH_RESULTS=$(mkdir -p "${BENCH_RESULTS:-$ROOT/bench/results}" && cd "${BENCH_RESULTS:-$ROOT/bench/results}" && pwd)

# gnuplot draws the report's chart (bench/report.sh); pgbench comes with
# postgresql-15.
BENCH_DEPS=(gnuplot-nox)
ensure_deps "${BUILD_DEPS[@]}" "${BENCH_DEPS[@]}"

echo "== build" >&2
# The installed module is shared by every run on this machine (make test,
# CI, another worktree): build and install holding the lock exclusively, as
# test/run_all.sh does, then hold it shared until the benchmarks end, so no
# other run replaces the module being measured.
exec 9>>/tmp/pg_idempotent-install.lock
chmod a+rw /tmp/pg_idempotent-install.lock 2>/dev/null || true
flock 9
BUILD_LOG=$(mktemp /tmp/pg_idempotent-bench-build.XXXXXX)
if ! make -s -j2 >"$BUILD_LOG" 2>&1; then
    cat "$BUILD_LOG" >&2; rm -f "$BUILD_LOG"; exit 1
fi
if ! make -s install >"$BUILD_LOG" 2>&1; then
    # Not root: fine when what is installed is exactly what was just built.
    libdir=$("$PGBIN/pg_config" --pkglibdir)
    sharedir=$("$PGBIN/pg_config" --sharedir)/extension
    if cmp -s pg_idempotent.so "$libdir/pg_idempotent.so" &&
       cmp -s pg_idempotent.control "$sharedir/pg_idempotent.control" &&
       cmp -s pg_idempotent--0.1.0.sql "$sharedir/pg_idempotent--0.1.0.sql"; then
        echo "   make install failed, but the installed module is this build: going on" >&2
    else
        cat "$BUILD_LOG" >&2; rm -f "$BUILD_LOG"
        echo "make install failed: run as root, or with write access to $libdir and $sharedir" >&2
        exit 1
    fi
fi
rm -f "$BUILD_LOG"
flock -s 9

trap cluster_stop EXIT
trap 'exit 130' INT TERM
echo "== starting a private PostgreSQL 15 cluster" >&2
cluster_start

BENCH_REPORT=$BENCH_RESULTS/latest.md
BENCH_TSV=$BENCH_RESULTS/latest.tsv
: >"$BENCH_REPORT"
printf 'bench\tcase\tsize\tours_ms\thandwritten_ms\tratio\tours\thandwritten\n' >"$BENCH_TSV"

scripts=()
for f in bench/*.sh; do
    name=$(basename "$f" .sh)
    case "$name" in run|lib|report) continue ;; esac
    if [ -n "${BENCH_ONLY:-}" ] && [[ " $BENCH_ONLY " != *" $name "* ]]; then continue; fi
    scripts+=("$f")
done
[ ${#scripts[@]} -gt 0 ] || { echo "no benchmark matches BENCH_ONLY='${BENCH_ONLY:-}'" >&2; exit 1; }

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain 2>/dev/null | head -1)" ]; then commit+=" (with uncommitted changes)"; fi
cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)

report "# pg_idempotent benchmarks"
report ""
report "- run: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $commit"
report "- machine: $(nproc) CPU(s)${cpu:+, $cpu}, $(awk '/^MemTotal/ { printf "%.1f GB RAM", $2 / 1048576 }' /proc/meminfo)"
report "- server: $(bench_psql -c 'SHOW server_version') (private cluster, fsync off), $(bench_psql -F ', ' -c "
    SELECT string_agg(name || ' = ' || current_setting(name), ', ' ORDER BY name)
    FROM pg_settings WHERE name IN ('shared_buffers', 'work_mem', 'jit', 'max_parallel_workers_per_gather')")"
report "- sizes (BENCH_SIZES): $(for n in "${BENCH_SIZE_LIST[@]}"; do bench_rows "$n"; done | paste -sd ' ' | sed 's/ /, /g') rows"
report "- timing: server-side clock_timestamp() around EXECUTE of each statement, each its own top-level statement; variants interleaved round-robin (rotating start)"

for f in "${scripts[@]}"; do
    name=$(basename "$f" .sh)
    echo "== benchmark $name" >&2
    db="bench_$name"
    bench_psql -c "CREATE DATABASE \"$db\""
    export PGDATABASE=$db
    bench_psql -c "CREATE EXTENSION pg_idempotent"
    bench_setup_timer
    report ""
    report "## $name"
    source "$f"
    export PGDATABASE=postgres
done

problems=$(cluster_log_problems)
report ""
report "## Summary"
report ""
if [ -n "$problems" ]; then
    report "- the server log shows a crash:"
    report "$problems"
fi
if [ "$BENCH_GOALS_MISSED" -eq 0 ]; then
    report "- all goals met"
else
    report "- **$BENCH_GOALS_MISSED goal(s) not met** (see the tables above)"
fi
bash "$ROOT/bench/report.sh" "$BENCH_RESULTS"
echo "report written to ${BENCH_REPORT#"$ROOT"/}, chart to ${BENCH_RESULTS#"$ROOT"/}/latest.svg" >&2
[ -z "$problems" ]
