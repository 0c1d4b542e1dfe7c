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
# The self-tests require the checks to fail where they must, since a check
# that cannot fail proves nothing: the keys and merge jobs as a user would
# hand-write them (no idempotency key, no version guard) under the same
# faults and resends; a partition and a view written in two transactions,
# which the readers must see torn; and a mutated build of the extension
# (merge without its version guard, fencing that does not compare tokens,
# publish's retention leaving its bookkeeping behind), built from a copy of
# the tree into a private installation, whose runs the merge, fencing and
# publish checks must fail.
#
#   bash test/faults/run.sh        # about 1-2 minutes on 2 cores
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1
source test/lib/cluster.sh
source test/lib/private_pg.sh
source test/lib/copy_tree.sh
source test/faults/jobs.sh
source test/faults/agent.sh
source test/faults/checks.sh
source test/faults/mutants.sh

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
# track_commit_timestamp: the fencing check orders writes and takeovers by
# their commits.
CLUSTER_EXTRA_CONF="restart_after_crash = on
synchronous_commit = on
track_commit_timestamp = on
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

make_schema || { result fail "schema"; echo "1..$N"; exit 1; }

# --- the run ----------------------------------------------------------------
START=$SECONDS
make_fx_receiver
start_dispatcher
if run_clients "keys 1 300 2" "keys 2 300 2" "fence 1 24 1 a" "fence 1 24 1 bb" "merge 0 59 2" "merge 1 59 2" \
    "append 0 79 2" "append 1 79 2" "overwrite 0 29 2" "overwrite 1 29 2" \
    "publish 0 19 2" "publish 1 19 2" "checkpoints 1 30 1" "checkpoints 1 30 1" \
    "snapshot 0 19 2" "snapshot 1 19 2" "effects 0 39 2" "effects 1 39 2"; then
    result ok "every client committed every job ($(( SECONDS - START )) s)"
else
    result fail "every client committed every job" "$(grep -h "GAVE UP" "$WORK"/client-*.log)"
fi
if stop_dispatcher; then
    result ok "the dispatcher delivered every effect and stopped on SIGTERM with status 0"
else
    result fail "the dispatcher stopped on SIGTERM with status 0" "$(tail -20 "$WORK/dispatch.log")"
fi
ATTEMPT_ERRORS=$(cat "$WORK"/client-*.log | grep -c "ERROR\|FATAL\|could not connect\|server closed")
echo "# faults: $(grep -c '^cancel' "$WORK/agent.log") cancels, $(grep -c '^terminate' "$WORK/agent.log") terminates," \
    "$(grep -c '^kill -9 backend' "$WORK/agent.log") backend kill -9, $(grep -c '^kill -9 postmaster' "$WORK/agent.log") postmaster kill -9" \
    "($(grep -c '^restarted' "$WORK/agent.log") restart), disk full: $(grep -c '^disk full' "$WORK/agent.log");" \
    "failed attempts the clients retried: $ATTEMPT_ERRORS" \
    "(statement timeouts $(cat "$WORK"/client-*.log | grep -c 'statement timeout'), disk full $(cat "$WORK"/client-*.log | grep -c 'could not extend\|No space left')," \
    "leases lost $(cat "$WORK"/client-fence-*.log | grep -c 'lease lost'))"
result "$( [ "$(grep -c '^restarted' "$WORK/agent.log")" -eq 1 ] && echo ok || echo fail)" \
    "the postmaster was killed and came back after crash recovery" "$(tail -5 "$WORK/agent.log")"

# --- the invariants ---------------------------------------------------------
STALLED=$(fence_stalled_worker)
if [[ "$STALLED" == *"ERROR:  lease lost"* ]]; then
    result ok "fencing: a stalled worker's write after the takeover is refused (ID004)"
else
    result fail "fencing: a stalled worker's write after the takeover is refused (ID004)" "$STALLED"
fi
STALE=$(effects_stale_report)
if [[ "$STALE" == *"ERROR:  lease lost"* ]]; then
    result ok "effects: a stalled dispatcher's report after the takeover is refused (ID004)"
else
    result fail "effects: a stalled dispatcher's report after the takeover is refused (ID004)" "$STALE"
fi
keys_checks
echo "# keys: $(q -c "SELECT count(*) || ' effects of ' || count(DISTINCT event_id) || ' events' FROM f_applied"), $(q -c "SELECT string_agg(state || ' ' || n, ', ') FROM (SELECT state, count(*) AS n FROM idem.keys WHERE scope = 'faults' GROUP BY state) s")"
q -c "SELECT 'events without an effect: ' || COALESCE(string_agg(e.id::text, ','), 'none') FROM f_events e WHERE NOT EXISTS (SELECT FROM f_applied a WHERE a.event_id = e.id)" | sed 's/^/# /'
keys_orphan_check
echo "# fencing: $(q -c "SELECT count(*) || ' claims (' || count(*) FILTER (WHERE pg_xact_commit_timestamp(xmin) < pg_postmaster_start_time()) || ' before the restart), ' || count(*) - count(DISTINCT key) || ' takeovers' FROM f_claims")"
fence_checks 25
merge_checks
merge_history_checks
effects_checks
echo "# effects: $(q -c "SELECT count(*) || ' calls of ' || count(DISTINCT key) || ' keys, ' || count(*) FILTER (WHERE uncertain) || ' flagged uncertain' FROM f_fx_calls"), $(grep -c 'the report was refused' "$WORK/dispatch.log") reports refused, $(grep -c 'connecting again' "$WORK/dispatch.log") reconnections of the dispatcher"
reader_checks
family_checks
server_checks

# --- the self-tests ---------------------------------------------------------
# 1. The keys and merge jobs hand-written, under the same faults and
# resends: the same checks must fail (run in a subshell whose results are
# counted here).
q -c "TRUNCATE f_applied, f_target; UPDATE f_accounts SET balance = 0" >/dev/null
run_clients "naive_keys 1 300 2" "naive_keys 2 300 2" "naive_merge 59 0 -1" >/dev/null 2>&1
SELF=$( N=0; FAILED=0; keys_checks >/dev/null; merge_checks >/dev/null; echo "$FAILED" )
if [ "$SELF" -eq 3 ]; then
    result ok "self-test: the checks fail on hand-written jobs (duplicated effects, a lower version last)"
else
    result fail "self-test: the checks fail on hand-written jobs" "$SELF of 3 checks failed"
fi

# 2. The readers' check: a day of f_sales deleted and written again in two
# transactions, and f_pub switched to a table filled in two. Each second
# transaction waits until a reader has reported the first as torn (60 s at
# most), so the result does not depend on when the reads fall.
torn_seen() {  # PATTERN: a reader reported it, within 60 s
    local _
    for _ in $(seq 600); do
        grep -q "torn: $1" "$WORK/reader-selftest.log" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}
rm -f "$WORK/done"
reader selftest &
READER=$!
SEEN=
q -c "DELETE FROM f_sales WHERE day = '2024-07-01'" >/dev/null
torn_seen "a partition" && SEEN+=partition
q -c "INSERT INTO f_sales SELECT '2024-07-01', g, 0 FROM generate_series(1, 200) g" >/dev/null
q -c "CREATE TABLE f_pub_by_hand AS SELECT g AS n, 0 AS stamp FROM generate_series(1, 50) g" \
    -c "CREATE OR REPLACE VIEW f_pub AS SELECT n, stamp FROM f_pub_by_hand" >/dev/null
torn_seen "f_pub" && SEEN+=" view"
q -c "INSERT INTO f_pub_by_hand SELECT g, 0 FROM generate_series(51, 100) g" >/dev/null
touch "$WORK/done"
wait "$READER"
if [ "$SEEN" = "partition view" ]; then
    result ok "self-test: readers see a partition and a view written in two transactions torn"
else
    result fail "self-test: readers see a partition and a view written in two transactions torn" "seen: ${SEEN:-neither}"
fi

# 3. A mutated build (test/faults/mutants.sh) in a cluster of its own: the
# merge jobs in descending order, the stalled worker, ten publishes with
# keep => 2, the stalled dispatcher, no faults. Each of the four checks
# must fail.
cluster_stop
MUTANT=$WORK/mutant
mkdir -p "$MUTANT"
if MUTANT_BIN=$(build_mutant "$MUTANT"); then
    SELF=fail
    if PGBIN=$MUTANT_BIN cluster_start; then
        PSQL=$MUTANT_BIN/psql
        SERVER_LOG=$CLUSTER_DIR/server.log
        "$PSQL" -X -q -d postgres -c "CREATE DATABASE $DB" && SMALL_TS=pg_default make_schema &&
            CALM=1 run_clients "merge 59 0 -1" "publish 0 9 1" >/dev/null 2>&1 &&
            fence_stalled_worker >/dev/null 2>&1 && effects_stale_report >/dev/null 2>&1 &&
            SELF=$( N=0; FAILED=0; merge_checks >/dev/null; fence_stale_check >/dev/null; publish_bookkeeping_check >/dev/null
                    effects_stale_check >/dev/null; echo "$FAILED" )
    fi
    if [ "$SELF" = 4 ]; then
        result ok "self-test: the checks fail on a mutated build (merge without its version guard, fencing without tokens, publish's bookkeeping left behind, effect reports without tokens)"
    else
        result fail "self-test: the checks fail on a mutated build" "$SELF of 4 checks failed"
    fi
else
    result fail "self-test: the mutated build" "$(tail -20 "$MUTANT/build.log")"
fi

echo "1..$N"
[ "$FAILED" -eq 0 ]
