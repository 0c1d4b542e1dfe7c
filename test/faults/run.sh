#!/usr/bin/env bash
# The fault suite (issue 43): every family's job run by several clients on
# overlapping work while an agent attacks the server: pg_cancel_backend and
# pg_terminate_backend at random, a random statement_timeout on every
# attempt, one backend kill -9 and one postmaster kill -9 (then a restart and
# crash recovery), and a full disk on a small tablespace. Each client retries
# a job until it commits (an application's at-least-once delivery), and
# sends every 5th job once more after it committed (a lost acknowledgement).
# Then the invariant of each family is checked in SQL, every B-tree index of
# the database passes bt_index_parent_check(heapallindexed), and the server
# log shows no crash but the suite's own kills.
#
# Bounded: a fixed number of jobs per client, a cap on the attempts of each
# (a job that never commits fails the suite), the agent stops when the
# clients are done. Its verdict does not depend on timing: how many cancels
# hit which job varies, the end state must not. The agent's choices come
# from FAULT_SEED (printed; FAULT_SEED=n reruns them, timing aside).
#
# The self-test runs the keys and merge jobs as a user would hand-write them
# (no idempotency key, no version guard) under the same resends, and
# requires the same checks to fail: a check that cannot fail proves nothing.
#
#   bash test/faults/run.sh        # about 1-2 minutes on 2 cores
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1
source test/lib/cluster.sh

PSQL=$PGBIN/psql
SEED=${FAULT_SEED:-$(( $(date +%s) % 100000 ))}
WORK=$(mktemp -d /tmp/pg_idempotent-faults.XXXXXX)
chmod 755 "$WORK"
DB=idem_faults
N=0
FAILED=0
SMALL_MOUNT=

finish() {
    [ -n "${AGENT_PID:-}" ] && kill "$AGENT_PID" 2>/dev/null
    cluster_stop
    [ -n "$SMALL_MOUNT" ] && umount "$SMALL_MOUNT" 2>/dev/null
    rm -rf "$WORK"
}
trap finish EXIT
trap 'exit 130' INT TERM

if [[ "$PGBIN" == /usr/lib/postgresql/*/bin ]]; then
    exec 9>>/tmp/pg_idempotent-install.lock
    flock -s 9
fi

# synchronous_commit on (cluster.sh turns it off for speed): a commit that
# returned must survive the postmaster's kill -9, and without it the last
# commits before the crash were lost (the keys check caught two). fsync
# stays off: a killed process leaves the OS's page cache intact.
CLUSTER_EXTRA_CONF="restart_after_crash = on
synchronous_commit = on
deadlock_timeout = 100ms"
cluster_start || { echo "not ok 1 - cluster_start"; echo "1..1"; exit 1; }
SERVER_LOG=$CLUSTER_DIR/server.log
echo "# FAULT_SEED=$SEED"

q() { "$PSQL" -X -q -A -t -v ON_ERROR_STOP=1 -d "$DB" "$@"; }

result() {  # ok|fail NAME [DETAILS]
    N=$((N + 1))
    if [ "$1" = ok ]; then
        echo "ok $N - $2"
    else
        FAILED=$((FAILED + 1))
        echo "not ok $N - $2"
        [ -n "${3:-}" ] && printf '%s\n' "$3" | sed 's/^/# /'
    fi
}

# check NAME SQL: SQL returns t.
check() {
    local got
    got=$(q -c "$2" 2>&1)
    if [ "$got" = t ]; then result ok "$1"; else result fail "$1" "$got"; fi
}

# --- the schema -------------------------------------------------------------
"$PSQL" -X -q -d postgres -c "CREATE DATABASE $DB" || exit 1
# The append log lives on a small tablespace that the agent fills: a tmpfs
# as root (16 MB), else the disk-full fault is skipped (printed).
SMALL_TS=pg_default
if [ "$(id -u)" -eq 0 ] && mkdir -p "$WORK/small" && mount -t tmpfs -o size=16m tmpfs "$WORK/small" 2>/dev/null; then
    SMALL_MOUNT=$WORK/small
    chown postgres:postgres "$SMALL_MOUNT"
    q -c "CREATE TABLESPACE f_small LOCATION '$SMALL_MOUNT'" && SMALL_TS=f_small
fi
[ "$SMALL_TS" = f_small ] || echo "# no small tablespace (needs root and tmpfs): the disk-full fault is left out"

q >/dev/null <<SQL || { result fail "schema"; echo "1..$N"; exit 1; }
CREATE EXTENSION pg_idempotent;
CREATE EXTENSION amcheck;
-- keys: 300 events on 20 accounts, each applied once (idem.once).
CREATE TABLE f_events AS
  SELECT g AS id, g % 20 AS account, (g * 7919) % 100 + 1 AS amount FROM generate_series(1, 300) g;
CREATE TABLE f_accounts AS SELECT g AS id, 0::bigint AS balance FROM generate_series(0, 19) g;
ALTER TABLE f_accounts ADD PRIMARY KEY (id);
CREATE TABLE f_applied (event_id int NOT NULL);
-- merge: 60 batches of 10 keys out of 50, batch b at version b; every
-- odd batch deletes its last 5 keys (tombstones).
CREATE TABLE f_target (id int PRIMARY KEY, version int NOT NULL, val text NOT NULL);
-- append: overlapping batches of event ids, no unique index (append dedups).
CREATE TABLE f_log (event_id int NOT NULL, payload text NOT NULL) TABLESPACE $SMALL_TS;
-- overwrite: 5 daily partitions, each job writes one day with its stamp.
CREATE TABLE f_sales (day date NOT NULL, store int NOT NULL, amount int NOT NULL) PARTITION BY RANGE (day);
CREATE TABLE f_sales_1 PARTITION OF f_sales FOR VALUES FROM ('2024-07-01') TO ('2024-07-02');
CREATE TABLE f_sales_2 PARTITION OF f_sales FOR VALUES FROM ('2024-07-02') TO ('2024-07-03');
CREATE TABLE f_sales_3 PARTITION OF f_sales FOR VALUES FROM ('2024-07-03') TO ('2024-07-04');
CREATE TABLE f_sales_4 PARTITION OF f_sales FOR VALUES FROM ('2024-07-04') TO ('2024-07-05');
CREATE TABLE f_sales_5 PARTITION OF f_sales FOR VALUES FROM ('2024-07-05') TO ('2024-07-06');
CREATE INDEX ON f_sales (store);
INSERT INTO f_sales SELECT '2024-07-01'::date + d, g, -1 FROM generate_series(0, 4) d, generate_series(1, 200) g;
-- checkpoints: each job loads the events after the watermark, up to its own.
CREATE TABLE f_loaded (event_id int NOT NULL);
-- Readers assert what they see: torn raises TORN1, which the suite counts.
CREATE FUNCTION f_assert(ok boolean, what text) RETURNS boolean LANGUAGE plpgsql AS \$\$
BEGIN
  IF ok IS NOT TRUE THEN RAISE EXCEPTION 'torn: %', what USING ERRCODE = 'TORN1'; END IF;
  RETURN true;
END \$\$;
SELECT idem.publish('f_pub', 'SELECT g AS n, -1 AS stamp FROM generate_series(1, 100) g', keep => 2);
-- snapshot: 30 customers whose name changes with each job's stamp.
CREATE TABLE f_hist (id int NOT NULL, name text, valid_from timestamptz NOT NULL, valid_to timestamptz);
SELECT idem.snapshot_prepare('f_hist', '{id}') IS NOT NULL;
SQL

# --- the jobs ---------------------------------------------------------------
# job FAMILY I: the SQL of job I of FAMILY (one transaction).
job() {
    local i=$2
    case $1 in
    keys)
        echo "SELECT idem.once('evt-$i', \$q\$WITH u AS (UPDATE f_accounts a SET balance = balance + e.amount FROM f_events e WHERE e.id = $i AND a.id = e.account RETURNING e.id) INSERT INTO f_applied SELECT id FROM u RETURNING event_id\$q\$, scope => 'faults')" ;;
    merge)
        echo "SELECT * FROM idem.merge_query('f_target', \$q\$SELECT ($i * 7 + j) % 50 AS id, $i AS version, md5((($i * 7 + j) % 50) || ':' || $i) AS val, j >= 5 AND $i % 2 = 1 AS deleted FROM generate_series(0, 9) j\$q\$, version_column => 'version', delete_column => 'deleted')" ;;
    append)
        echo "SELECT * FROM idem.append_query('f_log', \$q\$SELECT g AS event_id, repeat(md5(g::text), 20) AS payload FROM generate_series($((i * 5)), $((i * 5 + 9))) g\$q\$, key => '{event_id}')" ;;
    overwrite)
        local day=$(( i % 5 + 1 ))
        echo "SELECT * FROM idem.overwrite_partition('f_sales', '2024-07-0$day'::date, \$q\$SELECT '2024-07-0$day'::date AS day, g AS store, $i AS amount FROM generate_series(1, 200) g\$q\$)" ;;
    publish)
        echo "SELECT idem.publish('f_pub', \$q\$SELECT g AS n, $i AS stamp FROM generate_series(1, 100) g\$q\$, keep => 2)" ;;
    checkpoints)
        echo "SELECT idem.run_once('f_loader', $((i * 10)), \$q\$INSERT INTO f_loaded SELECT g FROM generate_series(COALESCE(idem.watermark('f_loader')::int, 0) + 1, $((i * 10))) g\$q\$)" ;;
    snapshot)
        echo "SELECT * FROM idem.snapshot_query('f_hist', \$q\$SELECT g AS id, 'name ' || (g + $i) % 7 AS name FROM generate_series(1, 30) g\$q\$, '{id}')" ;;
    naive_keys)
        echo "WITH u AS (UPDATE f_accounts a SET balance = balance + e.amount FROM f_events e WHERE e.id = $i AND a.id = e.account RETURNING e.id) INSERT INTO f_applied SELECT id FROM u" ;;
    naive_merge)
        echo "INSERT INTO f_target SELECT ($i * 7 + j) % 50, $i, md5((($i * 7 + j) % 50) || ':' || $i) FROM generate_series(0, 9) j ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version, val = EXCLUDED.val" ;;
    esac
}

# client FAMILY FROM TO STEP: runs jobs FROM, FROM+STEP, ... to TO (STEP
# may be negative: seq's order), each
# until it commits (at most 400 attempts), under a random statement_timeout
# (25 ms to 2 s); every 5th job is sent once more after it committed.
client() {
    local family=$1 from=$2 to=$3 step=$4 i tries sends log=$WORK/client-$1-$2.log
    RANDOM=$(( SEED + from * 31 + ${#family} ))
    export PGAPPNAME=faults_writer
    for i in $(seq "$from" "$step" "$to"); do
        sends=1
        [ $(( i % 5 )) -eq 0 ] && sends=2
        while [ "$sends" -gt 0 ]; do
            tries=0
            # One transaction: the job, then up to 60 ms before COMMIT, the
            # window in which a cancel, a timeout or a kill finds the work
            # done and not committed.
            until "$PSQL" -X -q -A -t -v ON_ERROR_STOP=1 -d "$DB" \
                -c "SET statement_timeout = $(( 25 + RANDOM % 1975 )); $(job "$family" "$i"); SELECT pg_sleep(0.0$(( RANDOM % 60 )))" \
                >>"$log" 2>&1; do
                tries=$((tries + 1))
                if [ "$tries" -ge 400 ]; then
                    echo "GAVE UP on $family job $i" >>"$log"
                    return 1
                fi
                sleep 0.0$(( RANDOM % 9 + 1 ))
            done
            sends=$((sends - 1))
        done
    done
}

# The agent: cancels and terminates backends of the database at random, the
# small tablespace filled for 3 s (once the append log has 20 rows of 405),
# then one backend kill -9 (once 40 keys jobs committed) and one postmaster
# kill -9 and restart (120); until
# $WORK/done exists. Progress, not time, places the three faults, and what
# the clients finished before the agent saw it is done after them: every run
# has each fault.
children_of() {  # PID: its child processes, from /proc (no procps needed)
    local stat
    for stat in /proc/[0-9]*/stat; do
        read -r -a f 2>/dev/null <"$stat" || continue
        [ "${f[3]:-}" = "$1" ] && echo "${f[0]}"
    done
}
progress() {  # the keys jobs committed, and the append log's rows
    "$PSQL" -X -A -t -F ' ' -d "$DB" -c "SELECT (SELECT count(*) FROM f_applied), (SELECT count(*) FROM f_log)" \
        2>/dev/null || echo 0 0
}
agent() {
    RANDOM=$SEED
    local killed=0 crashed=0 filled=0 pid pids log=$WORK/agent.log done=0 after=0
    [ "$SMALL_TS" = f_small ] || filled=1
    while [ "$done" -eq 0 ] || { [ $((killed + crashed + filled)) -lt 3 ] && [ "$after" -lt 50 ]; }; do
        [ -e "$WORK/done" ] && done=1
        [ "$done" -eq 1 ] && after=$((after + 1))
        local t a
        read -r t a <<<"$(progress)"
        [ "$done" -eq 1 ] && t=1000 a=1000
        pids=$("$PSQL" -X -A -t -d postgres -c "SELECT pid FROM pg_stat_activity WHERE datname = '$DB' AND state IS NOT NULL AND state <> 'idle' AND application_name = 'faults_writer'" 2>/dev/null)
        if [ -n "$pids" ]; then
            pid=$(echo "$pids" | shuf -n 1 --random-source=<(yes "$RANDOM"))
            if [ "$killed" -eq 0 ] && [ "$t" -ge 40 ] && [ "$filled" -eq 1 ]; then
                kill -9 "$pid" 2>/dev/null && { killed=1; echo "kill -9 backend $pid" >>"$log"; }
                sleep 1
            elif [ $(( RANDOM % 100 )) -lt 12 ]; then
                "$PSQL" -X -q -d postgres -c "SELECT pg_terminate_backend($pid)" >/dev/null 2>&1 && echo "terminate $pid" >>"$log"
            else
                "$PSQL" -X -q -d postgres -c "SELECT pg_cancel_backend($pid)" >/dev/null 2>&1 && echo "cancel $pid" >>"$log"
            fi
        fi
        # With nothing active when done, the backend kill goes to a session of
        # its own.
        if [ "$killed" -eq 0 ] && [ "$done" -eq 1 ] && [ "$filled" -eq 1 ]; then
            "$PSQL" -X -q -d "$DB" -c "SELECT pg_sleep(60)" >/dev/null 2>&1 &
            sleep 1
            pid=$("$PSQL" -X -A -t -d postgres -c "SELECT pid FROM pg_stat_activity WHERE datname = '$DB' AND query LIKE 'SELECT pg_sleep%' LIMIT 1")
            [ -n "$pid" ] && kill -9 "$pid" && { killed=1; echo "kill -9 backend $pid" >>"$log"; }
            wait
            sleep 1
        fi
        if [ "$crashed" -eq 0 ] && [ "$t" -ge 120 ] && [ "$killed" -eq 1 ]; then
            local pm children
            pm=$(head -1 "$CLUSTER_DIR/data/postmaster.pid")
            children=$(children_of "$pm")
            kill -9 "$pm" && echo "kill -9 postmaster $pm" >>"$log"
            # Its children notice and exit (the last one releases the shared
            # memory, which a new postmaster must not find in use); any left
            # after 10 s are killed too.
            local alive c
            for _ in $(seq 100); do
                alive=0
                for c in $children; do kill -0 "$c" 2>/dev/null && alive=1; done
                [ "$alive" -eq 0 ] && break
                sleep 0.1
            done
            # shellcheck disable=SC2086
            kill -9 $children 2>/dev/null
            sleep 0.5
            as_pg "$PGBIN/pg_ctl" -D "$CLUSTER_DIR/data" -l "$SERVER_LOG" -w -t 60 start >/dev/null 2>&1 \
                && echo "restarted" >>"$log"
            crashed=1
        fi
        if [ "$filled" -eq 0 ] && [ "$a" -ge 20 ]; then
            "$PSQL" -X -q -d "$DB" -c "SET statement_timeout = 0" -c "CREATE TABLE f_filler (x text) TABLESPACE f_small" \
                -c "DO \$\$ BEGIN LOOP INSERT INTO f_filler SELECT repeat('x', 2000) FROM generate_series(1, 500); END LOOP; END \$\$" \
                >>"$log" 2>&1
            grep -q "could not extend\|No space left" "$log" && echo "disk full" >>"$log"
            sleep 3
            # The filler's inserts stay in WAL until a checkpoint: a crash
            # now would replay them into the full tablespace, and recovery
            # would fail for want of space (PostgreSQL's own limit, met by
            # an earlier version of this suite). So the disk fills first,
            # and the crashes come after this checkpoint.
            "$PSQL" -X -q -d "$DB" -c "DROP TABLE IF EXISTS f_filler" -c "CHECKPOINT" >>"$log" 2>&1
            filled=1
        fi
        sleep 0.0$(( RANDOM % 8 + 2 ))
    done
}

# reader: reads the overwritten partitions and the published view until
# $WORK/done, asserting each statement sees whole units: every day one
# job's 200 rows, the view one version's 100. The agent leaves readers
# alone (it attacks application_name faults_writer); a reader that loses
# its connection to the crash starts again.
reader() {
    local log=$WORK/reader-$1.log sql
    sql="SELECT f_assert(count(*) = 5 AND bool_and(n = 200 AND stamps = 1), 'a partition of f_sales half written or missing') FROM (SELECT day, count(*) AS n, count(DISTINCT amount) AS stamps FROM f_sales GROUP BY day) d;
SELECT f_assert(count(*) = 100 AND count(DISTINCT stamp) = 1, 'f_pub shows a partial or mixed version') FROM f_pub;"
    while [ ! -e "$WORK/done" ]; do
        for _ in 1 2 3 4 5; do printf '%s\n' "$sql"; done | "$PSQL" -X -q -A -t -d "$DB" >>"$log" 2>&1
        sleep 0.05
    done
}

# run_clients SPEC...: each SPEC "FAMILY FROM TO STEP" in the background,
# with the agent beside them; fails unless every client finished its jobs.
run_clients() {
    rm -f "$WORK/done"
    agent &
    AGENT_PID=$!
    reader 1 &
    local readers=($!)
    reader 2 &
    readers+=($!)
    local pids=() spec ok=1
    for spec in "$@"; do
        # shellcheck disable=SC2086
        client $spec &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || ok=0; done
    touch "$WORK/done"
    wait "${readers[@]}"
    wait "$AGENT_PID"
    AGENT_PID=
    # The server is up (the agent restarted it) and recovered.
    for _ in $(seq 100); do "$PSQL" -X -q -d "$DB" -c "SELECT 1" >/dev/null 2>&1 && break; sleep 0.2; done
    [ "$ok" -eq 1 ]
}

# --- the run ----------------------------------------------------------------
START=$SECONDS
if run_clients "keys 1 300 2" "keys 2 300 2" "merge 0 59 2" "merge 1 59 2" \
    "append 0 79 2" "append 1 79 2" "overwrite 0 29 2" "overwrite 1 29 2" \
    "publish 0 19 2" "publish 1 19 2" "checkpoints 1 30 1" "checkpoints 1 30 1" \
    "snapshot 0 19 2" "snapshot 1 19 2"; then
    result ok "every client committed every job ($(( SECONDS - START )) s)"
else
    result fail "every client committed every job" "$(grep -h "GAVE UP" "$WORK"/client-*.log)"
fi
ATTEMPT_ERRORS=$(cat "$WORK"/client-*.log | grep -c "ERROR\|FATAL\|could not connect\|server closed")
echo "# faults: $(grep -c '^cancel' "$WORK/agent.log") cancels, $(grep -c '^terminate' "$WORK/agent.log") terminates," \
    "$(grep -c '^kill -9 backend' "$WORK/agent.log") backend kill -9, $(grep -c '^kill -9 postmaster' "$WORK/agent.log") postmaster kill -9" \
    "($(grep -c '^restarted' "$WORK/agent.log") restart), disk full: $(grep -c '^disk full' "$WORK/agent.log");" \
    "failed attempts the clients retried: $ATTEMPT_ERRORS" \
    "(statement timeouts $(cat "$WORK"/client-*.log | grep -c 'statement timeout'), disk full $(cat "$WORK"/client-*.log | grep -c 'could not extend\|No space left'))"
result "$( [ "$(grep -c '^restarted' "$WORK/agent.log")" -eq 1 ] && echo ok || echo fail)" \
    "the postmaster was killed and came back after crash recovery" "$(cat "$WORK/agent.log" | tail -5)"

# --- the invariants ---------------------------------------------------------
keys_checks() {
    check "keys: each event's effect exactly once" \
        "SELECT count(*) = 300 AND count(DISTINCT event_id) = 300 FROM f_applied"
    check "keys: every balance is the sum of its events" \
        "SELECT bool_and(a.balance = s.total) FROM f_accounts a JOIN (SELECT account, sum(amount) AS total FROM f_events GROUP BY account) s ON s.account = a.id"
}
# want: each key's highest version and whether that row is a delete.
WANT="SELECT DISTINCT ON (k) k AS id, b AS version, j >= 5 AND b % 2 = 1 AS deleted FROM generate_series(0, 59) b, generate_series(0, 9) j, LATERAL (SELECT (b * 7 + j) % 50 AS k) x ORDER BY k, b DESC"
merge_checks() {
    check "merge: the target holds the highest version of every key, deleted keys absent" \
        "SELECT count(*) = 0 FROM (SELECT * FROM ($WANT) w WHERE NOT deleted) want FULL JOIN f_target t USING (id) WHERE t.version IS DISTINCT FROM want.version OR t.val IS DISTINCT FROM md5(id || ':' || want.version)"
}
keys_checks
echo "# keys: $(q -c "SELECT count(*) || ' effects of ' || count(DISTINCT event_id) || ' events' FROM f_applied"), $(q -c "SELECT string_agg(state || ' ' || n, ', ') FROM (SELECT state, count(*) AS n FROM idem.keys WHERE scope = 'faults' GROUP BY state) s")"
q -c "SELECT 'events without an effect: ' || COALESCE(string_agg(e.id::text, ','), 'none') FROM f_events e WHERE NOT EXISTS (SELECT FROM f_applied a WHERE a.event_id = e.id)" | sed 's/^/# /'
check "keys: no orphan claim (every key of the scope done, one per event)" \
    "SELECT count(*) = 300 AND bool_and(state = 'done') FROM idem.keys WHERE scope = 'faults'"
merge_checks
check "merge: a key deleted last has its tombstone at that version" \
    "SELECT count(*) > 0 AND bool_and(EXISTS (SELECT FROM idem.tombstones t WHERE t.target = 'f_target'::regclass AND t.key_data = jsonb_build_array(w.id) AND t.version = w.version::text)) FROM ($WANT) w WHERE w.deleted"
check "merge: the run history has a run for every batch" \
    "SELECT count(*) >= 60 FROM idem.run_log WHERE function_name = 'merge_query' AND target = 'public.f_target'"
check "append: each event id once, its content intact" \
    "SELECT count(*) = 405 AND count(DISTINCT event_id) = 405 AND bool_and(payload = repeat(md5(event_id::text), 20)) AND min(event_id) = 0 AND max(event_id) = 404 FROM f_log"
check "overwrite: each day holds one job's 200 rows" \
    "SELECT count(*) = 5 AND bool_and(n = 200 AND stamps = 1 AND stamp % 5 = extract(day FROM day)::int - 1) FROM (SELECT day, count(*) AS n, count(DISTINCT amount) AS stamps, min(amount) AS stamp FROM f_sales GROUP BY day) d"
READS=$(cat "$WORK"/reader-*.log | grep -c '^t$')
TORN=$(cat "$WORK"/reader-*.log | grep -c 'torn:')
if [ "$TORN" -eq 0 ] && [ "$READS" -gt 0 ]; then
    result ok "readers never saw a partial partition or version ($READS reads)"
else
    result fail "readers never saw a partial partition or version" "$(grep -h 'torn:' "$WORK"/reader-*.log | sort | uniq -c | head -5)"
fi
check "publish: the view shows one whole version" \
    "SELECT count(*) = 100 AND count(DISTINCT stamp) = 1 FROM f_pub"
check "publish: the bookkeeping matches the tables" \
    "SELECT (SELECT count(*) FROM idem.dataset_versions v WHERE v.view_name = 'f_pub' AND (to_regclass(v.relation::text) IS NULL OR (SELECT count(*) FROM pg_class c WHERE c.oid = v.relation) <> 1)) = 0
        AND (SELECT count(*) FROM pg_class c WHERE c.relname LIKE 'f\\_pub\\_\\_v%' AND c.relkind = 'r' AND c.oid NOT IN (SELECT relation FROM idem.dataset_versions WHERE view_name = 'f_pub')) = 0
        AND (SELECT current_version IS NOT NULL FROM idem.datasets WHERE view_name = 'f_pub')"
check "checkpoints: the data and the watermark moved together" \
    "SELECT count(*) = 300 AND count(DISTINCT event_id) = 300 AND max(event_id) = idem.watermark('f_loader')::int FROM f_loaded"
check "snapshot: one current version per key, no gaps or overlaps" \
    "SELECT (SELECT count(*) = 30 AND count(DISTINCT id) = 30 FROM f_hist WHERE valid_to IS NULL)
        AND (SELECT count(*) = 0 FROM (SELECT valid_to, lead(valid_from) OVER (PARTITION BY id ORDER BY valid_from) AS next FROM f_hist) v WHERE v.next IS NOT NULL AND v.valid_to IS DISTINCT FROM v.next)
        AND (SELECT count(*) = 0 FROM f_hist WHERE valid_to IS NOT NULL AND valid_to <= valid_from)"
AMCHECK=$(q -c "SELECT count(*) FROM (SELECT bt_index_parent_check(c.oid, true) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam JOIN pg_namespace n ON n.oid = c.relnamespace WHERE a.amname = 'btree' AND c.relkind = 'i' AND n.nspname IN ('idem', 'public') AND c.relpersistence <> 't' AND i.indisvalid) x" 2>&1)
if [[ "$AMCHECK" =~ ^[0-9]+$ ]] && [ "$AMCHECK" -gt 10 ]; then
    result ok "every B-tree index of idem and the jobs passes bt_index_parent_check(heapallindexed) ($AMCHECK indexes)"
else
    result fail "every B-tree index passes bt_index_parent_check(heapallindexed)" "$AMCHECK"
fi
# The suite killed one backend (the postmaster's kill -9 leaves no line).
CRASHES=$(grep -E "terminated by signal|PANIC|TRAP:" "$SERVER_LOG")
if [ "$(grep -c "terminated by signal 9" <<<"$CRASHES")" -le 1 ] && ! grep -v "terminated by signal 9" <<<"$CRASHES" | grep -q .; then
    result ok "no backend crashed but the one the suite killed"
else
    result fail "no backend crashed but the one the suite killed" "$CRASHES"
fi

# --- the self-test ----------------------------------------------------------
# The same jobs hand-written, under the same faults and resends: the same
# checks must fail (run in a subshell whose results are counted here).
q -c "TRUNCATE f_applied, f_target; UPDATE f_accounts SET balance = 0" >/dev/null
run_clients "naive_keys 1 300 2" "naive_keys 2 300 2" "naive_merge 59 0 -1" >/dev/null 2>&1
SELF=$( N=0; FAILED=0; keys_checks >/dev/null; merge_checks >/dev/null; echo "$FAILED" )
if [ "$SELF" -eq 3 ]; then
    result ok "self-test: the checks fail on hand-written jobs (duplicated effects, a lower version last)"
else
    result fail "self-test: the checks fail on hand-written jobs" "$SELF of 3 checks failed"
fi

echo "1..$N"
[ "$FAILED" -eq 0 ]
