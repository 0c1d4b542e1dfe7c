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
cd "$ROOT" || exit 1
source test/lib/cluster.sh

PGBENCH=$PGBIN/pgbench
PSQL=$PGBIN/psql
SCALE=${STRESS_SCALE:-1}
RUN_TIMEOUT=$(( 150 * SCALE ))  # seconds, per pgbench run: only against hangs
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

# With the machine's own PostgreSQL (not a private copy: test/run_all.sh
# passes one), a package install must not replace the module under these
# tests (test/package/deb.sh takes the same lock exclusively).
if [[ "$PGBIN" == /usr/lib/postgresql/*/bin ]]; then
    exec 9>>/tmp/pg_idempotent-install.lock
    flock -s 9
fi

# A deadlock costs deadlock_timeout before it is detected (1 s by default):
# a broken scenario then ends sooner. No verdict depends on it.
CLUSTER_EXTRA_CONF="deadlock_timeout = 100ms"  # read by cluster_start
cluster_start || { echo "not ok 1 - cluster_start"; echo "1..1"; exit 1; }
SERVER_LOG=$CLUSTER_DIR/server.log
# Against hangs only, as RUN_TIMEOUT: no statement here comes near it.
export PGOPTIONS="-c statement_timeout=${RUN_TIMEOUT}s"

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
    local t0=$SECONDS
    # The timeout only stops a hung run (a lock wait that never ends); a
    # normal run takes a few seconds.
    # TRIES (default 1): a scenario that allows serialization failures
    # (40001, the one error a client is told to retry) lets pgbench retry them.
    timeout -k 10 "$RUN_TIMEOUT" \
        "$PGBENCH" -n -c "$clients" -j $(( clients < 2 ? 1 : 2 )) -t "$txns" --max-tries="${TRIES:-1}" \
        "${args[@]}" "$DB" \
        >"$WORK/$label.out" 2>&1
    echo $? >"$WORK/$label.rc"
    echo "$label $((clients * txns))" >"$WORK/$label.expect"
    local tps
    tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$WORK/$label.out" | head -n 1)
    local retried
    retried=$(sed -n 's/^number of transactions retried: \([0-9]*\).*/\1/p' "$WORK/$label.out" | head -n 1)
    note "$label: $((clients * txns)) transactions by $clients clients in $((SECONDS - t0)) s (${tps:-?} tps${retried:+, $retried retried})"
}

# writers DEFAULT: how many clients write in a scenario. STRESS_CLIENTS
# overrides it (test/stress/throughput.sh measures 1, 4 and 8); per_client
# DEFAULT TXNS spreads the default's total over them.
writers() { echo "${STRESS_CLIENTS:-$1}"; }
per_client() {
    local c
    c=$(writers "$1")
    echo $(( ($1 * $2 + c - 1) / c ))
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
            | grep -E -A5 "ERROR|FATAL|PANIC|deadlock detected|terminated by signal" | head -100 | sed 's/^/#   /'
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

# overwrite_scenario SCHEMA MODE DAY_EXPR READS: 4 writers overwrite_partition
# the day DAY_EXPR (a pgbench expression: random or fixed) with one of 3
# amounts, so some calls find the same rows and skip; 4 readers beside them,
# READS statements each (about as long as the writers take).
overwrite_scenario() {
    local sc=$1 mode=$2 day=$3 reads=$4
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
    bench "${sc}_writers" "$(writers 4)" "$(per_client 4 40)" "${sc}_writer.sql" &
    bench "${sc}_readers" 4 "$reads" "${sc}_reader.sql" &
    wait
    local ok=0
    bench_ok "${sc}_writers" "${sc}_readers" || ok=1
    sales_end_state "$sc" || ok=1
    return $ok
}

s1() { overwrite_scenario s1 swap 'random(0, 2)' 200; }
s2() { overwrite_scenario s2 swap 1 200; }
s3() { overwrite_scenario s3 rewrite 'random(0, 2)' 140; }

# 4 writers build a staging table for a random day and swap it in with
# idem.swap_partition, naming the partition; 4 readers beside them. Two
# writers of one day may both look the partition up before either swaps:
# the second swap then replaces the partition that holds the bound by the
# time it has waited (the first one's staging table, under the same name).
#
# Allowed: 40001 when the partition the statement named (a regclass, resolved
# before the call) was swapped by another writer before the call began; the
# writers retry it (pgbench --max-tries), as an application retries any
# serialization failure, and the suite still requires 0 failed.
#
# The staging table is built before the swapping transaction, as its own
# statements: CREATE TABLE (LIKE sales) locks sales (ACCESS SHARE) until the
# transaction ends, and two transactions that hold that lock and then both
# swap (which needs ACCESS EXCLUSIVE on sales) deadlock, whatever the days
# (PostgreSQL's lock upgrade deadlock, not pg_idempotent's).
s4() {
    local sc=s4
    make_sales "$sc" || return 1
    script "${sc}_writer" <<SQL
\set d random(0, 2)
\set a random(1, 3)
\set tag :client_id * 1000000 + random(0, 999999)
DROP TABLE IF EXISTS $sc.stage_:tag;  -- a retry (40001) runs the whole script again
CREATE TABLE $sc.stage_:tag (LIKE $sc.sales INCLUDING DEFAULTS);
INSERT INTO $sc.stage_:tag SELECT '2024-07-07'::date + :d, g, :a FROM generate_series(1, 2000) g;
BEGIN;
SELECT idem.swap_partition('$sc.sales_d:d', '$sc.stage_:tag');
INSERT INTO $sc.log (day, amount, action) VALUES ('2024-07-07'::date + :d, :a, 'swapped');
COMMIT;
SQL
    sales_reader "$sc"
    TRIES=5 bench "${sc}_writers" "$(writers 4)" "$(per_client 4 40)" "${sc}_writer.sql" &
    bench "${sc}_readers" 4 100 "${sc}_reader.sql" &
    wait
    local ok=0
    bench_ok "${sc}_writers" "${sc}_readers" || ok=1
    sales_end_state "$sc" || ok=1
    return $ok
}

# --- merge and merge_query -------------------------------------------------

# 8 clients merge overlapping batches of 201 consecutive ids, in random row
# order, with one of 5 values: half through merge_query, half through merge
# from a temporary table. Each batch starts a little below the highest id so
# far, so it updates rows that other merges update too and inserts keys that
# other merges insert too, all run long. docs/merge.md (Concurrency) promises
# that overlapping merges queue: no deadlock, no 23505.
s5() {
    q <<'SQL' || return 1
CREATE SCHEMA s5;
CREATE TABLE s5.m (id int PRIMARY KEY, v int NOT NULL);
-- The batches that committed, to compare the target with.
CREATE TABLE s5.batches (id bigserial PRIMARY KEY, lo int NOT NULL, hi int NOT NULL, v int NOT NULL, via text NOT NULL);
SQL
    script s5_merge_query <<'SQL'
\set back random(0, 190)
\set k random(1, 5)
SELECT coalesce(max(id), 0) - :back AS lo FROM s5.m \gset
BEGIN;
SELECT * FROM idem.merge_query('s5.m',
  $$SELECT g AS id, :k AS v FROM generate_series(:lo, :lo + 200) g ORDER BY random()$$, '{id}');
INSERT INTO s5.batches (lo, hi, v, via) VALUES (:lo, :lo + 200, :k, 'merge_query');
COMMIT;
SQL
    script s5_merge <<'SQL'
\set back random(0, 190)
\set k random(1, 5)
SELECT coalesce(max(id), 0) - :back AS lo FROM s5.m \gset
BEGIN;
CREATE TEMP TABLE batch ON COMMIT DROP AS
  SELECT g AS id, :k AS v FROM generate_series(:lo, :lo + 200) g ORDER BY random();
SELECT * FROM idem.merge('s5.m', 'pg_temp.batch', '{id}');
INSERT INTO s5.batches (lo, hi, v, via) VALUES (:lo, :lo + 200, :k, 'merge');
COMMIT;
SQL
    bench s5 "$(writers 8)" "$(per_client 8 70)" s5_merge_query.sql s5_merge.sql
    local ok=0
    bench_ok s5 || ok=1
    check "the ids are exactly those of the batches, each once" \
        "SELECT (SELECT array_agg(id ORDER BY id) FROM s5.m)
              = (SELECT array_agg(DISTINCT g ORDER BY g) FROM s5.batches, generate_series(lo, hi) g)" || ok=1
    check "every value was written by a batch that holds the id" \
        "SELECT bool_and(EXISTS (SELECT 1 FROM s5.batches b WHERE m.id BETWEEN b.lo AND b.hi AND b.v = m.v))
           FROM s5.m" || ok=1
    note "s5: $(q -c "SELECT count(*) FROM s5.m") ids from $(q -c "SELECT count(*) FROM s5.batches") batches"
    return $ok
}

# --- idempotency keys: claim, claim_many, once ------------------------------

# 8 clients claim keys of one scope: single claims with the side effect in
# the same statement, and overlapping batches of 10 in random order through
# claim_many; besides, once() in another scope. Each key's side effect must
# happen exactly once. The keys are drawn just above the number of effects so
# far: near the keys that other transactions are claiming right now, so
# claims meet uncommitted claims of the same key (and wait for them) all run
# long, not only until a small key space is used up.
s6() {
    q <<'SQL' || return 1
CREATE SCHEMA s6;
-- No unique key on purpose: a second effect of a key must be possible, to be
-- caught.
CREATE TABLE s6.effects (key text NOT NULL);
CREATE TABLE s6.once_effects (key text NOT NULL);
SQL
    script s6_claim <<'SQL'
\set r random(1, 20)
BEGIN;
INSERT INTO s6.effects
SELECT k FROM (SELECT ((SELECT count(*) FROM s6.effects) + :r)::text AS k) c
 WHERE idem.claim(k, 'stress');
COMMIT;
SQL
    script s6_claim_many <<'SQL'
\set r random(1, 20)
BEGIN;
INSERT INTO s6.effects
SELECT k FROM idem.claim_many(ARRAY(SELECT ((SELECT count(*) FROM s6.effects) + :r + g)::text
                                      FROM generate_series(0, 9) g ORDER BY random()),
                              'stress') AS k;
COMMIT;
SQL
    script s6_once <<'SQL'
\set r random(1, 10)
SELECT idem.once(o.k, format('INSERT INTO s6.once_effects VALUES (%L) RETURNING key', o.k), 'stress_once')
  FROM (SELECT ((SELECT count(*) FROM s6.once_effects) + :r)::text AS k) o;
SQL
    bench s6 "$(writers 8)" "$(per_client 8 800)" s6_claim.sql@2 s6_claim_many.sql@1 s6_once.sql@1
    local ok=0
    bench_ok s6 || ok=1
    check "no key had its effect twice" \
        "SELECT count(*) = count(DISTINCT key) FROM s6.effects" || ok=1
    check "every claimed key had its effect" \
        "SELECT (SELECT array_agg(key ORDER BY key) FROM s6.effects)
              = (SELECT array_agg(key ORDER BY key) FROM idem.keys WHERE scope = 'stress')" || ok=1
    check "once ran each key's query once" \
        "SELECT count(*) = count(DISTINCT key) FROM s6.once_effects" || ok=1
    check "once stored each key's result and is done" \
        "SELECT (SELECT array_agg(key ORDER BY key) FROM s6.once_effects)
              = (SELECT array_agg(key ORDER BY key) FROM idem.keys
                  WHERE scope = 'stress_once' AND state = 'done'
                    AND result = jsonb_build_array(jsonb_build_object('key', key)))" || ok=1
    note "s6: $(q -c "SELECT count(*) FROM s6.effects") keys claimed, $(q -c "SELECT count(*) FROM s6.once_effects") once keys"
    return $ok
}

# --- checkpoints: run_once ----------------------------------------------------

# 8 clients run 4 jobs with run_once: mostly the job's next window (read
# before the job is locked, so several runners race for the same one), some
# with a random watermark. A window runs at most once and only forward.
s7() {
    q <<'SQL' || return 1
CREATE SCHEMA s7;
-- Written by the jobs' queries, while run_once holds the job: for one job,
-- the id order is the order of the runs.
CREATE TABLE s7.runs (id bigserial PRIMARY KEY, job text NOT NULL, w bigint NOT NULL);
SQL
    script s7_next <<'SQL'
\set j random(1, 4)
\set step random(1, 2)
SELECT idem.run_once(r.job, r.w, format('INSERT INTO s7.runs (job, w) VALUES (%L, %s)', r.job, r.w))
  FROM (SELECT 's7_job_:j' AS job, coalesce(idem.watermark('s7_job_:j')::bigint, 0) + :step AS w) r;
SQL
    script s7_random <<'SQL'
\set j random(1, 4)
\set w random(1, 300)
SELECT idem.run_once('s7_job_:j', :w::bigint, $$INSERT INTO s7.runs (job, w) VALUES ('s7_job_:j', :w)$$);
SQL
    bench s7 "$(writers 8)" "$(per_client 8 1000)" s7_next.sql@3 s7_random.sql@1
    local ok=0
    bench_ok s7 || ok=1
    check "no (job, watermark) ran twice" \
        "SELECT count(*) = count(DISTINCT (job, w)) FROM s7.runs" || ok=1
    check "each job's runs went forward" \
        "SELECT coalesce(bool_and(w > prev), true)
           FROM (SELECT w, lag(w) OVER (PARTITION BY job ORDER BY id) AS prev FROM s7.runs) r
          WHERE prev IS NOT NULL" || ok=1
    check "each job's watermark is its last run" \
        "SELECT (SELECT array_agg(job || '=' || watermark ORDER BY job) FROM idem.checkpoints WHERE job LIKE 's7_job_%')
              = (SELECT array_agg(job || '=' || w ORDER BY job)
                   FROM (SELECT DISTINCT ON (job) job, w FROM s7.runs ORDER BY job, id DESC) l)" || ok=1
    note "s7: $(q -c "SELECT string_agg(job || '=' || n, ' ' ORDER BY job) FROM (SELECT job, count(*) AS n FROM s7.runs GROUP BY 1) r") runs"
    return $ok
}

# --- publish and rollback -------------------------------------------------------

# 4 writers publish one of 3 contents or roll back to a pinned version
# (pinned, so it is always kept and the rollback always has a target); 2
# readers check every read of the view sees one whole version.
s8() {
    q >/dev/null <<'SQL' || return 1
CREATE SCHEMA s8;
SELECT idem.publish('s8.ds_view', 'SELECT 1 AS n, g FROM generate_series(1, 100) g');
SELECT idem.publish('s8.ds_view', 'SELECT 2 AS n, g FROM generate_series(1, 100) g');
SELECT idem.pin('s8.ds_view', 1), idem.pin('s8.ds_view', 2);
SQL
    script s8_publish <<'SQL'
\set n random(1, 3)
SELECT idem.publish('s8.ds_view', 'SELECT :n AS n, g FROM generate_series(1, 100) g');
SQL
    script s8_rollback <<'SQL'
\set v random(1, 2)
SELECT idem.rollback('s8.ds_view', :v);
SQL
    script s8_reader <<'SQL'
SELECT stress_assert(count(*) = 100 AND count(DISTINCT g) = 100 AND count(DISTINCT n) = 1,
                     'a reader of s8.ds_view saw ' || count(*) || ' rows of ' || count(DISTINCT n) || ' versions')
  FROM s8.ds_view;
SQL
    bench s8_writers "$(writers 4)" "$(per_client 4 350)" s8_publish.sql@3 s8_rollback.sql@1 &
    bench s8_readers 2 2000 s8_reader.sql &
    wait
    local ok=0
    bench_ok s8_writers s8_readers || ok=1
    check "one current version, and the view shows it" \
        "SELECT count(*) = 1 AND bool_and(idem.checksum_query('SELECT * FROM s8.ds_view') = checksum)
           FROM idem.versions('s8.ds_view') WHERE is_current" || ok=1
    check "every kept version still holds the rows it was published with" \
        "SELECT bool_and(idem.checksum(relation) = checksum) FROM idem.versions('s8.ds_view')" || ok=1
    check "the version tables are exactly the kept versions" \
        "SELECT (SELECT array_agg(oid ORDER BY oid) FROM pg_class WHERE relnamespace = 's8'::regnamespace AND relkind = 'r')
              = (SELECT array_agg(relation::oid ORDER BY relation::oid) FROM idem.versions('s8.ds_view'))" || ok=1
    check "retention kept at most 5 unpinned versions, and both pinned ones" \
        "SELECT count(*) FILTER (WHERE NOT pinned) <= 5 AND count(*) FILTER (WHERE pinned AND version IN (1, 2)) = 2
           FROM idem.versions('s8.ds_view')" || ok=1
    note "s8: $(q -c "SELECT next_version - 1 FROM idem.datasets WHERE schema_name = 's8'") versions published, current $(q -c "SELECT current_version FROM idem.datasets WHERE schema_name = 's8'")"
    return $ok
}

# --- merge with delete_missing, by scope ---------------------------------------

# 8 clients merge complete snapshots of one of 4 scopes (delete_missing with
# delete_scope), each of a random size and value: a scope always holds
# exactly its last committed snapshot, whatever ran beside it.
s9() {
    q <<'SQL' || return 1
CREATE SCHEMA s9;
CREATE TABLE s9.t (scope int, id int, v int NOT NULL, PRIMARY KEY (scope, id));
-- Written in the merge's transaction: merges of one target commit one after
-- another (the merge lock), so for one scope the id order is the commit order.
CREATE TABLE s9.log (id bigserial PRIMARY KEY, scope int NOT NULL, n int NOT NULL, v int NOT NULL);
SQL
    script s9_snapshot <<'SQL'
\set s random(1, 4)
\set n random(1, 60)
\set k random(1, 5)
BEGIN;
SELECT * FROM idem.merge_query('s9.t', $$SELECT :s AS scope, g AS id, :k AS v FROM generate_series(1, :n) g$$,
                               '{scope,id}', delete_missing => true, delete_scope => 'scope = :s');
INSERT INTO s9.log (scope, n, v) VALUES (:s, :n, :k);
COMMIT;
SQL
    bench s9 "$(writers 8)" "$(per_client 8 40)" s9_snapshot.sql
    local ok=0
    bench_ok s9 || ok=1
    check "each scope holds exactly its last snapshot" \
        "SELECT bool_and(t.n = l.n AND t.vs = 1 AND t.v = l.v AND t.maxid = l.n)
           FROM (SELECT scope, count(*) AS n, count(DISTINCT v) AS vs, min(v) AS v, max(id) AS maxid
                   FROM s9.t GROUP BY scope) t
           JOIN (SELECT DISTINCT ON (scope) scope, n, v FROM s9.log ORDER BY scope, id DESC) l USING (scope)" || ok=1
    check "no scope without a snapshot, none missing" \
        "SELECT (SELECT count(DISTINCT scope) FROM s9.t) = (SELECT count(DISTINCT scope) FROM s9.log)" || ok=1
    return $ok
}

# --- leases and takeovers ----------------------------------------------------

# 8 workers claim one of 30 keys with a 20 ms lease (a live lease is 55P03,
# caught here and counted: another worker has it), save a recovery point
# and, 3 times in 4, record the effect and complete the key in one
# transaction; otherwise they abandon it, and the lease expires and is taken
# over. Without fencing (issue 27) a stale worker may still complete a key:
# the effect and the completion commit together, so whoever completes second
# fails (55000, caught) and its effect rolls back. At most one effect per
# key, and every done key has exactly its one.
s10() {
    q <<'SQL' || return 1
CREATE SCHEMA s10;
-- No unique key on purpose: a second effect must be possible, to be caught.
CREATE TABLE s10.effects (k int NOT NULL);
CREATE FUNCTION s10.claim(k int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  RETURN CASE WHEN idem.claim('k' || k, 's10', lease => '20 milliseconds') THEN 1 ELSE 0 END;
EXCEPTION WHEN lock_not_available THEN
  RETURN 0;  -- leased by another worker
END $$;
-- The lease is 20 ms: by the time a worker saves its point or completes,
-- another may have taken the key over and completed it (55000 "not in
-- progress" or "already complete"): the worker lost its lease, and what it
-- wrote in this block rolls back with the error.
CREATE FUNCTION s10.work(k int, claimed int, finish boolean) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  IF claimed = 0 THEN
    RETURN 'not mine';
  END IF;
  BEGIN
    PERFORM idem.save_point('k' || k, 'page ' || k, 's10');
    IF NOT finish THEN
      RETURN 'abandoned';
    END IF;
    INSERT INTO s10.effects VALUES (k);
    PERFORM idem.complete('k' || k, pg_catalog.jsonb_build_object('k', k), 's10');
    RETURN 'completed';
  -- ID004: taken over by a worker still at it (its lease lost, not yet done).
  EXCEPTION WHEN object_not_in_prerequisite_state OR SQLSTATE 'ID004' THEN
    RETURN 'lost the lease';
  END;
END $$;
SQL
    script s10_worker <<'SQL'
\set k random(1, 30)
\set f random(0, 3)
SELECT s10.claim(:k) AS claimed \gset
SELECT s10.work(:k, :claimed, :f > 0);
SQL
    bench s10 "$(writers 8)" "$(per_client 8 400)" s10_worker.sql
    local ok=0
    bench_ok s10 || ok=1
    check "at most one effect per key" \
        "SELECT coalesce(max(n), 0) <= 1 FROM (SELECT k, count(*) AS n FROM s10.effects GROUP BY k) e" || ok=1
    check "every done key has its one effect and its result, and no other key has one" \
        "SELECT (SELECT array_agg(k ORDER BY k) FROM s10.effects)
              IS NOT DISTINCT FROM
              (SELECT array_agg(substr(key, 2)::int ORDER BY substr(key, 2)::int) FROM idem.keys
                WHERE scope = 's10' AND state = 'done' AND result = jsonb_build_object('k', substr(key, 2)::int))" || ok=1
    note "s10: $(q -c "SELECT count(*) FROM s10.effects") keys completed of 30"
    return $ok
}

# --- advance and the window ledger ----------------------------------------

# 8 runners advance 3 jobs to random watermarks (moving back is 22023, caught
# and counted) and mark random windows of 3 other jobs, each recording what it
# did in its transaction: a job's watermark is the largest value any runner
# committed, and its ledger holds exactly the windows marked.
s11() {
    q <<'SQL' || return 1
CREATE SCHEMA s11;
CREATE TABLE s11.advanced (j int NOT NULL, w bigint NOT NULL);
CREATE TABLE s11.marked (j int NOT NULL, lo bigint NOT NULL);
CREATE FUNCTION s11.advance(j int, w bigint) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  PERFORM idem.advance('s11_job_' || j, w);
  INSERT INTO s11.advanced VALUES (j, w);
  RETURN 'advanced';
EXCEPTION WHEN invalid_parameter_value THEN
  RETURN 'behind';  -- never moves back
END $$;
SQL
    script s11_advance <<'SQL'
\set j random(1, 3)
\set w random(1, 1000)
SELECT s11.advance(:j, :w);
SQL
    script s11_mark <<'SQL'
\set j random(1, 3)
\set lo random(0, 199)
BEGIN;
SELECT idem.mark_window('s11_win_' || :j, (:lo * 10)::bigint, (:lo * 10 + 10)::bigint);
INSERT INTO s11.marked VALUES (:j, :lo * 10);
COMMIT;
SQL
    bench s11 "$(writers 8)" "$(per_client 8 400)" s11_advance.sql s11_mark.sql
    local ok=0
    bench_ok s11 || ok=1
    check "each job's watermark is the largest value committed" \
        "SELECT bool_and(idem.watermark('s11_job_' || j)::bigint = m) FROM (SELECT j, max(w) AS m FROM s11.advanced GROUP BY j) a" || ok=1
    check "each ledger holds exactly the windows marked" \
        "SELECT bool_and((SELECT array_agg(lo::bigint ORDER BY lo::bigint) FROM idem.windows('s11_win_' || j))
                         = (SELECT array_agg(DISTINCT m.lo ORDER BY m.lo) FROM s11.marked m WHERE m.j = x.j))
           FROM (SELECT DISTINCT j FROM s11.marked) x" || ok=1
    return $ok
}

run_scenario overwrite_swap_random_days_with_readers s1
run_scenario overwrite_swap_one_day_with_readers s2
run_scenario overwrite_rewrite_random_days_with_readers s3
run_scenario swap_partition_direct_with_readers s4
run_scenario merge_overlapping_batches s5
run_scenario claim_claim_many_once s6
run_scenario run_once_racing_runners s7
run_scenario publish_rollback_with_readers s8
run_scenario merge_delete_missing_by_scope s9
run_scenario leases_and_takeovers s10
run_scenario advance_and_window_ledger s11

echo "1..$N"
[ "$FAILED" -eq 0 ]
