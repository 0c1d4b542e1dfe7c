#!/usr/bin/env bash
# The pg_idempotent rerun command against a Citus coordinator (issue 25):
# a merge job into a distributed table is rerun-safe (exit 0), a job that
# appends to one is not (exit 1, naming the table), and the table's
# checksum is the one idem.checksum gives. Prints "ok N - name" or
# "not ok N - name" per check (the harness counts them); the CLI's progress
# goes to stderr, into the same log.
# Usage: cli.sh CLI PSQL CONNINFO
set -uo pipefail
cli=$1 psql=$2 conninfo=$3
n=0
failed=0
check() {  # name, then the command that must succeed
    local name=$1
    shift
    n=$((n + 1))
    if "$@"; then echo "ok $n - $name"; else echo "not ok $n - $name"; failed=$((failed + 1)); fi
}
sql() { "$psql" -X -q -At -v ON_ERROR_STOP=1 -d "$conninfo" -c "$1"; }

sql "SET citus.shard_count = 4;
     CREATE TABLE cli_raw (store int, amount numeric);
     SELECT create_distributed_table('cli_raw', 'store');
     INSERT INTO cli_raw SELECT g % 5, g FROM generate_series(1, 50) g;
     CREATE TABLE cli_totals (store int PRIMARY KEY, revenue numeric);
     SELECT create_distributed_table('cli_totals', 'store', colocate_with => 'cli_raw');
     CREATE TABLE cli_log (id bigserial, store int, amount numeric);
     SELECT create_distributed_table('cli_log', 'store', colocate_with => 'cli_raw');" >/dev/null ||
    { echo "not ok 1 - setup"; exit 1; }

merge_job="SELECT * FROM idem.merge_query('cli_totals', 'SELECT store, sum(amount) AS revenue FROM cli_raw GROUP BY store')"
out=$("$cli" rerun -d "$conninfo" -t cli_totals -- "$psql" -X -q -o /dev/null -d "$conninfo" -c "$merge_job")
rc=$?
check "merge-job-rerun-safe (a merge job into a distributed table: exit 0)" test "$rc" -eq 0
check "merge-job-says-so" grep -q '^rerun-safe' <<<"$out"
check "merge-job-checksum (each run's checksum is idem.checksum's)" \
    grep -q "^run 2	cli_totals	$(sql "SELECT idem.checksum('cli_totals')")\$" <<<"$out"

append_job="INSERT INTO cli_log (store, amount) SELECT store, amount FROM cli_raw WHERE amount < 5"
out=$("$cli" rerun -d "$conninfo" -t cli_log -- "$psql" -X -q -o /dev/null -d "$conninfo" -c "$append_job")
rc=$?
check "append-job-not-rerun-safe (a job appending to a distributed table: exit 1)" test "$rc" -eq 1
check "append-job-named (names the run and the table)" grep -q 'NOT rerun-safe: run 2 changed cli_log' <<<"$out"

sql "DROP TABLE cli_raw, cli_totals, cli_log" >/dev/null
echo "1..$n"
# Non-zero when a check failed or the script ended early (the harness counts
# the ok lines and fails the run on this status too).
[ "$n" -eq 5 ] && [ "$failed" -eq 0 ]
