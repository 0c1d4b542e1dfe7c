#!/usr/bin/env bash
# Throughput of every family under concurrency: the stress suite's scenarios
# (test/stress/run.sh) with 1, 4 and 8 writing clients, the same total of
# transactions each time, readers beside them as in the suite. Prints a
# markdown table of the writers' transactions per second (pgbench's tps),
# one row per scenario: the table in bench/README.md ("Concurrency") comes
# from it. A change that serializes more than it must shows as a column
# that stops growing. Numbers, not a verdict: the suite's checks still run,
# and a failed scenario is marked.
#
#   bash test/stress/throughput.sh [CLIENTS...]   (default: 1 4 8)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(1 4 8)
out=$(mktemp -d /tmp/pg_idempotent-throughput.XXXXXX)
trap 'rm -rf "$out"' EXIT

for c in "${counts[@]}"; do
    echo "== $c writing clients" >&2
    STRESS_CLIENTS=$c bash test/stress/run.sh >"$out/$c.log" 2>&1
done

# The writers' line of each scenario: "# <label>: N transactions by C clients
# in S s (T tps)"; the scenario is the "ok N - name" line before its notes.
printf '| scenario |'; for c in "${counts[@]}"; do printf ' %s clients |' "$c"; done; echo
printf '|---|'; for c in "${counts[@]}"; do printf -- '---:|'; done; echo
scenarios=$(grep -E "^(not )?ok [0-9]+ - " "$out/${counts[0]}.log" | sed -E 's/^(not )?ok [0-9]+ - //')
for sc in $scenarios; do
    printf '| %s |' "$sc"
    for c in "${counts[@]}"; do
        # The lines of this scenario: from its "ok" line to the next one.
        block=$(sed -n -E "/^(not )?ok [0-9]+ - $sc\$/,/^(not )?ok [0-9]+ - /p" "$out/$c.log")
        tps=$(echo "$block" | grep -E "_writers: |^# s[0-9]+: [0-9]+ transactions" |
              sed -n -E 's/.*\(([0-9.]+) tps[,)].*/\1/p' | head -n 1)
        [ -n "$tps" ] && tps=$(printf '%.0f' "$tps")
        echo "$block" | head -n 1 | grep -q '^not ok' && tps="$tps (failed)"
        printf ' %s |' "${tps:-?}"
    done
    echo
done
