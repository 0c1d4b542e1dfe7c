# Sourced by test/faults/run.sh: the agent that attacks the server while the
# clients run, the readers that assert what they see, and run_clients, which
# runs them together. Uses PSQL, DB, WORK, SEED, SMALL_TS, CLUSTER_DIR,
# SERVER_LOG and PGBIN of run.sh, client of jobs.sh.

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

# reader NAME: reads the overwritten partitions and the published view
# until $WORK/done, into $WORK/reader-NAME.log, asserting each statement
# sees whole units: every day one job's 200 rows, the view one version's
# 100 (a failed assertion is an ERROR "torn: ..."). The agent leaves readers
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
# with the agent and two readers beside them (with CALM=1 the clients
# alone: the mutated build's runs); fails unless every client finished its
# jobs.
run_clients() {
    rm -f "$WORK/done"
    local pids=() readers=() spec ok=1
    if [ -z "${CALM:-}" ]; then
        agent &
        AGENT_PID=$!
        reader 1 &
        readers+=($!)
        reader 2 &
        readers+=($!)
    fi
    for spec in "$@"; do
        # shellcheck disable=SC2086
        client $spec &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || ok=0; done
    touch "$WORK/done"
    [ ${#readers[@]} -gt 0 ] && wait "${readers[@]}"
    if [ -n "${AGENT_PID:-}" ]; then
        wait "$AGENT_PID"
        AGENT_PID=
    fi
    # The server is up (the agent restarted it) and recovered.
    for _ in $(seq 100); do "$PSQL" -X -q -d "$DB" -c "SELECT 1" >/dev/null 2>&1 && break; sleep 0.2; done
    [ "$ok" -eq 1 ]
}
