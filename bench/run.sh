#!/usr/bin/env bash
# `make bench`: the benchmarks, on a private throwaway cluster.
#
#   1. installs missing Debian packages (as root; otherwise names them)
#   2. copies the PostgreSQL installation of PG_CONFIG into a directory of
#      its own (a private installation, as test/sanitize/run.sh makes one),
#      builds a copy of this tree against it and installs the module there:
#      nothing is written into PostgreSQL's own installation, so no other
#      run's module is replaced, and no lock is taken
#   3. starts a private cluster of that installation (test/lib/cluster.sh),
#      removed on exit with the installation and the build
#   4. runs every benchmark script bench/NAME.sh (all but run.sh, lib.sh,
#      report.sh and compare.sh), each in its own database with the
#      extension and the timer installed
#   5. writes the report to RESULTS/latest.md and stdout, and the timings
#      of each function against the SQL a user would hand-write, at every
#      size, to RESULTS/latest.tsv
#   6. bench/report.sh: from the TSV, the size tables at the top of
#      latest.md and the chart RESULTS/latest.svg
#
# PG_CONFIG (default /usr/lib/postgresql/15/bin/pg_config): the PostgreSQL
# to measure on, any major the Makefile builds against; e.g.
# the pg_config of PostgreSQL 18 in its Debian root (tools/in_debian_root.sh
# 18 make bench). RESULTS is BENCH_RESULTS when set, else bench/results
# for PostgreSQL 15 and bench/results/pgN for another major N.
# BENCH_SIZES ("10000 100000 1000000") sets the table sizes, in rows;
# BENCH_ONLY="checksum ..." runs only those benchmarks; BENCH_ROUNDS (7) and
# BENCH_WARMUP (1) set the rounds of every comparison; BENCH_RESULTS (see
# above) is where the report goes (a quick run with small sizes can write
# elsewhere and leave the committed report alone). BENCH_DATA_CHECKSUMS
# (on|off; default: initdb's, off on 15 and on on 18) sets the cluster's
# data checksums. A missed goal is
# reported, not hidden, and does not fail the run; an error does.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
source test/lib/deps.sh
source test/lib/cluster.sh
source test/lib/private_pg.sh
source bench/lib.sh

# Bad sizes and a missing or unsupported pg_config fail before anything is
# built.
bench_parse_sizes
SYSTEM_PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
unset PG_CONFIG
if [ ! -x "$SYSTEM_PG_CONFIG" ]; then
    echo "bench/run.sh: PG_CONFIG=$SYSTEM_PG_CONFIG is not an executable pg_config" >&2
    exit 2
fi
PG_MAJOR=$("$SYSTEM_PG_CONFIG" --version | sed -n 's/^PostgreSQL \([0-9][0-9]*\).*/\1/p')
case "$PG_MAJOR" in
    15) default_results=$ROOT/bench/results ;;
    16|17|18) default_results=$ROOT/bench/results/pg$PG_MAJOR ;;
    *) echo "bench/run.sh: $SYSTEM_PG_CONFIG is $("$SYSTEM_PG_CONFIG" --version); the module builds against 15 to 18" >&2
       exit 2 ;;
esac
BENCH_RESULTS=${BENCH_RESULTS:-$default_results}
BENCH_RESULTS=$(mkdir -p "$BENCH_RESULTS" && cd "$BENCH_RESULTS" && pwd)

# gnuplot draws the report's chart (bench/report.sh); pgbench comes with
# the PostgreSQL measured (postgresql-15's, or the one PG_CONFIG names).
BENCH_DEPS=(gnuplot-nox)
ensure_deps "${BUILD_DEPS[@]}" "${BENCH_DEPS[@]}"

# WORK holds the private installation, the build and nothing else; it goes
# on exit.
WORK=$(mktemp -d /tmp/pg_idempotent-bench.XXXXXX)
chmod 755 "$WORK"
trap 'cluster_stop; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

echo "== private installation of $("$SYSTEM_PG_CONFIG" --version) (from $SYSTEM_PG_CONFIG)" >&2
# The module measured is installed there, never over the installed one
# (test/lib/private_pg.sh).
PRIVATE=$WORK/install
PRIVATE_BIN=$(private_pg_copy "$SYSTEM_PG_CONFIG" "$PRIVATE") || exit 1
PG_CONFIG_PRIVATE=$PRIVATE_BIN/pg_config

echo "== build (a copy of this tree, against the private installation)" >&2
# PGXS builds in the tree: a copy, so that this tree's objects (built by
# its owner against another major, maybe) are neither used nor replaced.
# Tracked and untracked files as they are now, without what .gitignore
# lists.
mkdir -p "$WORK/src"
git ls-files -z -co --exclude-standard | tar --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -C "$WORK/src" -xf -
BUILD_LOG=$WORK/build.log
if ! make -C "$WORK/src" -s -j2 PG_CONFIG="$PG_CONFIG_PRIVATE" >"$BUILD_LOG" 2>&1 ||
   ! make -C "$WORK/src" -s PG_CONFIG="$PG_CONFIG_PRIVATE" install >>"$BUILD_LOG" 2>&1; then
    cat "$BUILD_LOG" >&2
    exit 1
fi
[ -f "$("$PG_CONFIG_PRIVATE" --pkglibdir)/pg_idempotent.so" ] ||
    { echo "bench/run.sh: make install put no pg_idempotent.so into $("$PG_CONFIG_PRIVATE" --pkglibdir)" >&2; exit 1; }
chmod -R a+rX "$PRIVATE"

# The cluster, psql and pgbench: the private installation's programs.
PGBIN=$PRIVATE_BIN
export PATH="$PGBIN:$PATH"
echo "== starting a private PostgreSQL $PG_MAJOR cluster" >&2
# pg_stat_statements, when the installation has it, loaded but tracking
# nothing: bench/partitions.sh turns it on in its own sessions for the
# planning time of the statements a call runs.
if [ -f "$("$PG_CONFIG_PRIVATE" --pkglibdir)/pg_stat_statements.so" ]; then
    CLUSTER_EXTRA_CONF="${CLUSTER_EXTRA_CONF:-}
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = none"
fi
cluster_start
# initdb's default for data checksums changed in 18 (on; 15: off): a
# checksummed page is checksummed at every write and verified at every read
# into shared buffers.
# BENCH_DATA_CHECKSUMS=on|off sets them (pg_checksums, the cluster
# stopped), to compare majors alike; unset, each major's default stays.
if [ -n "${BENCH_DATA_CHECKSUMS:-}" ]; then
    case "$BENCH_DATA_CHECKSUMS" in
        on|off) ;;
        *) echo "bench/run.sh: BENCH_DATA_CHECKSUMS is on or off, not '$BENCH_DATA_CHECKSUMS'" >&2; exit 2 ;;
    esac
    if [ "$(bench_psql -c 'SHOW data_checksums')" != "$BENCH_DATA_CHECKSUMS" ]; then
        echo "   data checksums $BENCH_DATA_CHECKSUMS (pg_checksums)" >&2
        as_pg "$PGBIN/pg_ctl" -D "$CLUSTER_DIR/data" -w stop >/dev/null
        if [ "$BENCH_DATA_CHECKSUMS" = on ]; then flag=--enable; else flag=--disable; fi
        as_pg "$PGBIN/pg_checksums" "$flag" -D "$CLUSTER_DIR/data" >/dev/null
        as_pg "$PGBIN/pg_ctl" -D "$CLUSTER_DIR/data" -l "$CLUSTER_DIR/server.log" -w -t 60 start >/dev/null ||
            { cat "$CLUSTER_DIR/server.log" >&2; exit 1; }
    fi
fi

BENCH_REPORT=$BENCH_RESULTS/latest.md
BENCH_TSV=$BENCH_RESULTS/latest.tsv
: >"$BENCH_REPORT"
printf 'bench\tcase\tsize\tours_ms\thandwritten_ms\tratio\tours\thandwritten\n' >"$BENCH_TSV"

scripts=()
for name in $(bench_names); do
    if [ -n "${BENCH_ONLY:-}" ] && [[ " $BENCH_ONLY " != *" $name "* ]]; then continue; fi
    scripts+=("bench/$name.sh")
done
[ ${#scripts[@]} -gt 0 ] || { echo "no benchmark matches BENCH_ONLY='${BENCH_ONLY:-}'" >&2; exit 1; }

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
# Changes to what is measured, not to the results (this run has begun
# writing its own; the other major's may be waiting to be committed).
if [ -n "$(git status --porcelain -- . ':(exclude)bench/results' 2>/dev/null | head -1)" ]; then
    commit+=" (with uncommitted changes)"
fi
cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)

report "# pg_idempotent benchmarks on PostgreSQL $PG_MAJOR"
report ""
report "- run: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $commit"
report "- machine: $(nproc) CPU(s)${cpu:+, $cpu}, $(awk '/^MemTotal/ { printf "%.1f GB RAM", $2 / 1048576 }' /proc/meminfo)"
# jit = on does nothing in a server built without LLVM (a source build
# builds 18 so): say whether JIT can run at all.
jit_available=no
[ "$(bench_psql -c 'SELECT pg_jit_available()')" = t ] && jit_available=yes
report "- server: PostgreSQL $(bench_psql -c 'SHOW server_version') (private cluster, fsync off; JIT available: $jit_available), $(bench_psql -F ', ' -c "
    SELECT string_agg(name || ' = ' || current_setting(name), ', ' ORDER BY name)
    FROM pg_settings WHERE name IN ('shared_buffers', 'work_mem', 'jit', 'max_parallel_workers_per_gather', 'data_checksums')")"
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
    # shellcheck source=/dev/null
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
