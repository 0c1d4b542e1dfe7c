#!/usr/bin/env bash
# The stress suite (issue 30): every family under concurrency, with pgbench
# against a private cluster. Each scenario runs a bounded number of
# transactions per client (pgbench -t, never only -T), so its length depends
# on the machine but its verdict never does: it passes when
#   - every pgbench run processed all its transactions with 0 failed (PG15
#     pgbench aborts a client on any error other than a serialization failure
#     or a deadlock, and counts those two as failed: both make the run fail),
#   - readers running beside the writers never saw a torn state (they check
#     it themselves with stress_assert, whose error aborts them), and
#   - the end state checked with psql afterwards is consistent.
# Output is TAP-like: "ok N - name" / "not ok N - name", then "1..N"; on a
# failure the pgbench output and the server log lines of that scenario follow
# as "# " comments. About 60-90 s on 2 cores.
#
#   bash test/stress/run.sh             # all scenarios
#   STRESS_ONLY="merge claim" bash ...  # the scenarios whose name has a word
#   STRESS_SCALE=2 bash ...             # twice the transactions per client
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
source test/lib/cluster.sh

PGBENCH=$PGBIN/pgbench
PSQL=$PGBIN/psql
SCALE=${STRESS_SCALE:-1}
WORK=$(mktemp -d /tmp/pg_idempotent-stress.XXXXXX)
DB=idem_stress
N=0
FAILED=0

finish() {
    cluster_stop
    rm -rf "$WORK"
}
trap finish EXIT
trap 'exit 130' INT TERM

# Another run's `make install` must not replace the module under these tests
# (test/run_all.sh takes the same lock exclusively to install).
exec 9>>/tmp/pg_idempotent-install.lock
flock -s 9

cluster_start || { echo "not ok 1 - cluster_start"; echo "1..1"; exit 1; }
SERVER_LOG=$CLUSTER_DIR/server.log

q() {  # SQL...: run in the test database, unaligned, stop at the first error
    "$PSQL" -X -q -A -t -v ON_ERROR_STOP=1 -d "$DB" "$@"
}

"$PSQL" -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE $DB" || exit 1
q <<'SQL' || exit 1
CREATE EXTENSION pg_idempotent;
-- Readers and end-state checks assert with this: its error aborts a pgbench
-- client (so the run fails) and names the invariant in the server log.
CREATE FUNCTION stress_assert(ok boolean, what text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  IF ok IS NOT TRUE THEN
    RAISE EXCEPTION 'stress invariant violated: %', what;
  END IF;
  RETURN true;
END $$;
SQL

# --- helpers ---------------------------------------------------------------

script() {  # NAME: write the pgbench script read from stdin to $WORK/NAME.sql
    cat >"$WORK/$1.sql"
}

# bench LABEL CLIENTS TXNS SCRIPT[@WEIGHT]...: one pgbench run; output in
# $WORK/LABEL.out, exit status in $WORK/LABEL.rc. Run it with & to run
# several at once (readers beside writers).
bench() {
    local label=$1 clients=$2 txns=$(( $3 * SCALE )) s args=()
    shift 3
    for s in "$@"; do args+=(-f "$WORK/$s"); done
    "$PGBENCH" -n -c "$clients" -j $(( clients < 2 ? 1 : 2 )) -t "$txns" "${args[@]}" "$DB" \
        >"$WORK/$label.out" 2>&1
    echo $? >"$WORK/$label.rc"
    echo "$label $((clients * txns))" >"$WORK/$label.expect"
}

# bench_ok LABEL...: each run exited 0, processed every transaction and
# failed none. Prints what went wrong (and the run's output) otherwise.
bench_ok() {
    local label ok=0 total
    for label in "$@"; do
        total=$(cut -d' ' -f2 "$WORK/$label.expect")
        if [ "$(cat "$WORK/$label.rc")" != 0 ] \
            || ! grep -q "^number of transactions actually processed: $total/$total\$" "$WORK/$label.out" \
            || ! grep -q "^number of failed transactions: 0 " "$WORK/$label.out"; then
            echo "pgbench run '$label' failed (exit status $(cat "$WORK/$label.rc"), $total transactions expected):"
            sed 's/^/  | /' "$WORK/$label.out"
            ok=1
        fi
    done
    return $ok
}

# check WHAT SQL: SQL returns true. Prints WHAT and the value otherwise.
check() {
    local got
    got=$(q -c "$2" 2>&1)
    if [ "$got" != t ]; then
        echo "end state: $1: got '$got' from: $2"
        return 1
    fi
}

# run_scenario NAME FUNCTION: one TAP line for FUNCTION's result; on failure
# its output and the server's errors since it started.
run_scenario() {
    local name=$1 fn=$2 out=$WORK/scenario.out log_from t0 t1
    if [ -n "${STRESS_ONLY:-}" ]; then
        local w match=
        for w in $STRESS_ONLY; do [[ "$name" == *"$w"* ]] && match=1; done
        [ -n "$match" ] || return 0
    fi
    N=$((N + 1))
    log_from=$(( $(stat -c %s "$SERVER_LOG") + 1 ))
    t0=$(date +%s.%N)
    "$fn" >"$out" 2>&1
    local rc=$?
    t1=$(date +%s.%N)
    if [ $rc -eq 0 ]; then
        echo "ok $N - $name"
    else
        echo "not ok $N - $name"
        FAILED=$((FAILED + 1))
        sed 's/^/# /' "$out"
        echo "# server log (errors) during $name:"
        tail -c +"$log_from" "$SERVER_LOG" \
            | grep -E -A3 "ERROR|FATAL|PANIC|deadlock detected|terminated by signal" | head -80 | sed 's/^/#   /'
    fi
    # Informational only (never part of the verdict): the time, and what the
    # scenario reports about itself (e.g. how many calls wrote or skipped).
    [ -s "$WORK/notes" ] && sed 's/^/# /' "$WORK/notes"
    : >"$WORK/notes"
    awk -v n="$name" -v a="$t0" -v b="$t1" 'BEGIN { printf "# %s: %.1f s\n", n, b - a }'
}
note() { echo "$*" >>"$WORK/notes"; }
: >"$WORK/notes"

# --- overwrite_partition and swap_partition --------------------------------

# make_sales SCHEMA: sales partitioned by day into 3 daily partitions of
# 2000 rows each (amount 0), the writers' log, and a list of the schema's
# relations to compare with at the end (no staging or replaced table left).
make_sales() {
    q <<SQL
CREATE SCHEMA $1;
-- The primary key makes every swap build and attach an index too.
CREATE TABLE $1.sales (day date, store int, amount numeric, PRIMARY KEY (day, store)) PARTITION BY RANGE (day);
CREATE TABLE $1.sales_d0 PARTITION OF $1.sales FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
CREATE TABLE $1.sales_d1 PARTITION OF $1.sales FOR VALUES FROM ('2024-07-08') TO ('2024-07-09');
CREATE TABLE $1.sales_d2 PARTITION OF $1.sales FOR VALUES FROM ('2024-07-09') TO ('2024-07-10');
INSERT INTO $1.sales SELECT '2024-07-07'::date + d, g, 0 FROM generate_series(0, 2) d, generate_series(1, 2000) g;
-- One row per write, inserted by the writer after the write, in its
-- transaction: the writer still holds the partition then, so for one day the
-- id order is the order in which the writes committed.
CREATE TABLE $1.log (id bigserial PRIMARY KEY, day date NOT NULL, amount numeric NOT NULL, action text NOT NULL);
SQL
    relations "$1" >"$WORK/$1.relations"
}

relations() {  # SCHEMA: its relations, as name:kind, sorted
    q -c "SELECT string_agg(relname || ':' || relkind::text, ' ' ORDER BY relname) FROM pg_class
          WHERE relnamespace = '$1'::regnamespace"
}

# sales_reader SCHEMA: every statement sees every (day, store) once and one
# amount per day: the old rows of a partition or the new ones, never a mix,
# never both, never neither.
sales_reader() {
    script "$1_reader" <<SQL
SELECT stress_assert(count(*) = 6000 AND count(DISTINCT (day, store)) = 6000
                     AND count(DISTINCT (day, amount)) = 3,
                     'a reader of $1.sales saw ' || count(*) || ' rows, '
                     || count(DISTINCT (day, amount)) || ' (day, amount) pairs')
  FROM $1.sales;
SQL
}

# sales_end_state SCHEMA: the readers' invariant, the last committed write of
# each day is what the day holds, and the schema has the relations it had
# at the start (the 3 partitions under their names, no staging table).
sales_end_state() {
    local ok=0
    check "6000 rows, each (day, store) once, one amount per day" \
        "SELECT count(*) = 6000 AND count(DISTINCT (day, store)) = 6000 AND count(DISTINCT (day, amount)) = 3
           FROM $1.sales" || ok=1
    check "each partition holds its day's 2000 rows" \
        "SELECT bool_and(n = 2000) AND count(*) = 3 FROM (SELECT tableoid, count(*) AS n FROM $1.sales GROUP BY 1) p" || ok=1
    check "each day holds the amount of its last logged write" \
        "SELECT bool_and(s.amount = l.amount) FROM (SELECT DISTINCT day, amount FROM $1.sales) s
           JOIN (SELECT DISTINCT ON (day) day, amount FROM $1.log ORDER BY day, id DESC) l USING (day)" || ok=1
    check "3 partitions attached" \
        "SELECT count(*) = 3 FROM pg_inherits WHERE inhparent = '$1.sales'::regclass" || ok=1
    local now
    now=$(relations "$1")
    if [ "$now" != "$(cat "$WORK/$1.relations")" ]; then
        echo "end state: the relations of schema $1 changed:"
        echo "  before: $(cat "$WORK/$1.relations")"
        echo "  after:  $now"
        ok=1
    fi
    note "$1 writes: $(q -c "SELECT string_agg(action || '=' || n, ' ' ORDER BY action)
                              FROM (SELECT action, count(*) AS n FROM $1.log GROUP BY 1) a")"
    return $ok
}

# overwrite_scenario SCHEMA MODE DAY_EXPR: 4 writers overwrite_partition the
# day DAY_EXPR (a pgbench expression: random or fixed) with one of 3
# amounts, so some calls find the same rows and skip; 4 readers beside them.
overwrite_scenario() {
    local sc=$1 mode=$2 day=$3
    make_sales "$sc" || return 1
    script "${sc}_writer" <<SQL
\set d $day
\set a random(1, 3)
BEGIN;
SELECT action FROM idem.overwrite_partition('$sc.sales', '2024-07-07'::date + :d,
  \$\$SELECT '2024-07-07'::date + :d, g, :a::numeric FROM generate_series(1, 2000) g\$\$,
  mode => '$mode') \gset
INSERT INTO $sc.log (day, amount, action) VALUES ('2024-07-07'::date + :d, :a, ':action');
COMMIT;
SQL
    sales_reader "$sc"
    bench "${sc}_writers" 4 25 "${sc}_writer.sql" &
    bench "${sc}_readers" 4 60 "${sc}_reader.sql" &
    wait
    local ok=0
    bench_ok "${sc}_writers" "${sc}_readers" || ok=1
    sales_end_state "$sc" || ok=1
    return $ok
}

s1() { overwrite_scenario s1 swap 'random(0, 2)'; }
s2() { overwrite_scenario s2 swap 1; }
s3() { overwrite_scenario s3 rewrite 'random(0, 2)'; }

# 4 writers build a staging table and swap it in with idem.swap_partition,
# in one transaction; 4 readers beside them.
s4() {
    local sc=s4
    make_sales "$sc" || return 1
    script "${sc}_writer" <<SQL
\set d random(0, 2)
\set a random(1, 3)
\set tag :client_id * 1000000 + random(0, 999999)
BEGIN;
CREATE TABLE $sc.stage_:tag (LIKE $sc.sales);
INSERT INTO $sc.stage_:tag SELECT '2024-07-07'::date + :d, g, :a FROM generate_series(1, 2000) g;
SELECT idem.swap_partition('$sc.sales_d:d', '$sc.stage_:tag');
INSERT INTO $sc.log (day, amount, action) VALUES ('2024-07-07'::date + :d, :a, 'swapped');
COMMIT;
SQL
    sales_reader "$sc"
    bench "${sc}_writers" 4 25 "${sc}_writer.sql" &
    bench "${sc}_readers" 4 60 "${sc}_reader.sql" &
    wait
    local ok=0
    bench_ok "${sc}_writers" "${sc}_readers" || ok=1
    sales_end_state "$sc" || ok=1
    return $ok
}

run_scenario overwrite_swap_random_days_with_readers s1
run_scenario overwrite_swap_one_day_with_readers s2
run_scenario overwrite_rewrite_random_days_with_readers s3
run_scenario swap_partition_direct_with_readers s4

echo "1..$N"
[ "$FAILED" -eq 0 ]
