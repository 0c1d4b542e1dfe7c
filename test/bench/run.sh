#!/usr/bin/env bash
# The bench suite: `make bench` still runs from end to end. bench/run.sh with
# every benchmark at a tiny size and one round each (about three minutes,
# its own build and cluster, as make bench), against PG_CONFIG of $PGBIN,
# writing into a directory of its own: the committed report
# (bench/results/) is left alone. The figures of such a run mean nothing;
# what is checked is that every script runs and the report is whole. Prints
# one TAP line per check:
#   - bench/run.sh exits 0 (an error in any benchmark ends it non-zero);
#   - latest.md has a section for every benchmark script and the summary,
#     and names no server crash;
#   - every row of latest.tsv has positive timings and the ratio of them;
#   - bench/report.sh drew the chart (latest.svg).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
source test/lib/tap.sh
source bench/lib.sh
: "${PGBIN:?PGBIN: the bin directory of the installation to benchmark}"

out=$(mktemp -d /tmp/pg_idempotent-bench.XXXXXX)
trap 'rm -rf "$out"' EXIT
export BENCH_RESULTS="$out/results" PG_CONFIG="$PGBIN/pg_config"
export BENCH_SIZES=2000 BENCH_ROUNDS=1 BENCH_WARMUP=0
export BENCH_APPEND_ROUNDS=1 BENCH_HISTORY_ROUNDS=1 BENCH_HISTORY_SECONDS=1
export BENCH_KEYS_ROUNDS=1 BENCH_KEYS_SECONDS=1 BENCH_KEYS_DUP_N=1000 BENCH_KEYS_CALLS=500 BENCH_FX_ROUNDS=1 BENCH_FX_TPS_ROUNDS=1 BENCH_FX_SECONDS=1
export BENCH_MERGE_ROUNDS=1 BENCH_PUBLISH_ROUNDS=1 BENCH_SNAPSHOT_ROUNDS=1 BENCH_SNAPSHOT_MEMORY_EXTRA=2000
export BENCH_OVERWRITE_ROWS=2000 BENCH_OVERWRITE_FLIP_ROUNDS=1 BENCH_OVERWRITE_ROUNDS=1 BENCH_OVERWRITE_RERUN_ROUNDS=1

bash bench/run.sh >"$out/bench.log" 2>&1
rc=$?
if [ $rc -eq 0 ]; then
    tap_result ok bench-runs
else
    tap_result fail bench-runs "exit status $rc; the end of its output:
$(tail -40 "$out/bench.log")"
fi

report="$BENCH_RESULTS/latest.md"
missing=()
for name in $(bench_names); do
    grep -qx "## $name" "$report" 2>/dev/null || missing+=("$name")
done
grep -qx "## Summary" "$report" 2>/dev/null || missing+=("Summary")
if [ ${#missing[@]} -eq 0 ]; then
    tap_result ok report-has-every-benchmark "$(grep -c '^## ' "$report") sections"
else
    tap_result fail report-has-every-benchmark "no section for: ${missing[*]}"
fi
if [ -f "$report" ] && ! grep -q "the server log shows a crash" "$report"; then
    tap_result ok no-server-crash
else
    tap_result fail no-server-crash "$(grep -A5 "the server log shows a crash" "$report" 2>/dev/null)"
fi

# bench, case, size, ours_ms, handwritten_ms, ratio (3 decimals), ...
bad=$(awk -F'\t' 'NR > 1 {
        rows++
        if (!($4 > 0 && $5 > 0)) { print "line " NR ": timings " $4 ", " $5; next }
        want = sprintf("%.3f", $4 / $5)
        if ($6 + 0 < want - 0.0015 || $6 + 0 > want + 0.0015) print "line " NR ": ratio " $6 ", timings give " want
      }
      END { if (rows == 0) print "no rows" }' "$BENCH_RESULTS/latest.tsv" 2>&1)
if [ -z "$bad" ]; then
    tap_result ok tsv-ratios "$(($(wc -l <"$BENCH_RESULTS/latest.tsv") - 1)) rows"
else
    tap_result fail tsv-ratios "$bad"
fi
if [ -s "$BENCH_RESULTS/latest.svg" ] && grep -q "<svg" "$BENCH_RESULTS/latest.svg"; then
    tap_result ok chart-drawn
else
    tap_result fail chart-drawn "no latest.svg in $BENCH_RESULTS"
fi

tap_finish bench
