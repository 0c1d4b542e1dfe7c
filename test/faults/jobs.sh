# Sourced by test/faults/run.sh: the schema, each family's job, and the
# clients that run the jobs until they commit. Uses PSQL, DB, WORK, SEED,
# SMALL_TS and q() of run.sh.

# make_schema: the jobs' tables, in a new database DB.
make_schema() {
    q >/dev/null <<SQL
CREATE EXTENSION pg_idempotent;
CREATE EXTENSION amcheck;
-- keys: 300 events on 20 accounts, each applied once (idem.once).
CREATE TABLE f_events AS
  SELECT g AS id, g % 20 AS account, (g * 7919) % 100 + 1 AS amount FROM generate_series(1, 300) g;
CREATE TABLE f_accounts AS SELECT g AS id, 0::bigint AS balance FROM generate_series(0, 19) g;
ALTER TABLE f_accounts ADD PRIMARY KEY (id);
CREATE TABLE f_applied (event_id int NOT NULL);
-- fencing: 24 exports of 3 pages, by workers holding 300 ms leases; each
-- committed claim, page and export is recorded with its token (and its
-- transaction's commit timestamp: track_commit_timestamp).
CREATE TABLE f_claims (key text NOT NULL, token bigint NOT NULL);
CREATE TABLE f_pages (key text NOT NULL, page int NOT NULL, token bigint NOT NULL);
CREATE TABLE f_exported (key text NOT NULL, token bigint NOT NULL);
-- merge: 60 batches of 10 keys out of 50, batch b at version b; every
-- odd batch deletes its last 5 keys (tombstones).
CREATE TABLE f_target (id int PRIMARY KEY, version int NOT NULL, val text NOT NULL);
-- append: overlapping batches of event ids, no unique index (append dedups).
CREATE TABLE f_log (event_id int NOT NULL, payload text NOT NULL) TABLESPACE $SMALL_TS;
-- overwrite: 5 daily partitions, each job writes one day with its stamp
-- (every third job by swapping the partition).
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
-- effects: each job records four effects of a query (overlapping the next
-- job's) and one of its own; a dispatcher delivers them to this receiver,
-- which records every call and applies each key once.
CREATE TABLE f_fx_calls (key text NOT NULL, token bigint NOT NULL, uncertain boolean NOT NULL);
CREATE TABLE f_fx_applied (key text PRIMARY KEY, token bigint NOT NULL);
SQL
}

# The receiver of the effects: a call is an INSERT into f_fx_calls and
# f_fx_applied (a key applied once: the receiver's own idempotency); a
# failed call asks for a retry (exit 75); the answer names the token.
make_fx_receiver() {
    cat >"$WORK/fx_receiver.sh" <<SH
#!/bin/sh
payload=\$(cat)
"$PSQL" -X -q -d "$DB" -v ON_ERROR_STOP=1 -c "INSERT INTO f_fx_calls VALUES ('\$IDEM_EFFECT_KEY', \$IDEM_EFFECT_TOKEN, \$IDEM_EFFECT_UNCERTAIN = 1); INSERT INTO f_fx_applied VALUES ('\$IDEM_EFFECT_KEY', \$IDEM_EFFECT_TOKEN) ON CONFLICT (key) DO NOTHING" >/dev/null || exit 75
echo "{\"token\": \$IDEM_EFFECT_TOKEN, \"payload\": \$payload}"
SH
    chmod 755 "$WORK/fx_receiver.sh"
}

# start_dispatcher: pg_idempotent dispatch for kind fx of scope faults, two
# workers with 3 s leases, its sessions attacked as the clients' are.
start_dispatcher() {
    PGAPPNAME=faults_writer "$PGBIN/pg_idempotent" dispatch -d "dbname=$DB" --kind fx --scope faults \
        --workers 2 --lease 3 --poll 1 -- "$WORK/fx_receiver.sh" >"$WORK/dispatch.log" 2>&1 &
    DISPATCHER=$!
}

# stop_dispatcher: once every effect is delivered (120 s at most), SIGTERM;
# fails when the dispatcher does not exit 0.
stop_dispatcher() {
    for _ in $(seq 600); do
        [ "$(q -c "SELECT count(*) FROM idem.effects WHERE scope = 'faults' AND state <> 'done'" 2>/dev/null)" = 0 ] && break
        sleep 0.2
    done
    kill -TERM "$DISPATCHER"
    wait "$DISPATCHER"
}

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
        local day=$(( i % 5 + 1 )) mode=rewrite
        [ $(( i % 3 )) -eq 0 ] && mode=swap
        echo "SELECT * FROM idem.overwrite_partition('f_sales', '2024-07-0$day'::date, \$q\$SELECT '2024-07-0$day'::date AS day, g AS store, $i AS amount FROM generate_series(1, 200) g\$q\$, mode => '$mode')" ;;
    publish)
        echo "SELECT idem.publish('f_pub', \$q\$SELECT g AS n, $i AS stamp FROM generate_series(1, 100) g\$q\$, keep => 2)" ;;
    checkpoints)
        echo "SELECT idem.run_once('f_loader', $((i * 10)), \$q\$INSERT INTO f_loaded SELECT g FROM generate_series(COALESCE(idem.watermark('f_loader')::int, 0) + 1, $((i * 10))) g\$q\$)" ;;
    snapshot)
        echo "SELECT * FROM idem.snapshot_query('f_hist', \$q\$SELECT g AS id, 'name ' || (g + $i) % 7 AS name FROM generate_series(1, 30) g\$q\$, '{id}')" ;;
    effects)
        echo "SELECT * FROM idem.record_effects(\$q\$SELECT 'fx-' || g AS key, jsonb_build_object('n', g) AS payload FROM generate_series($((i * 2)), $((i * 2 + 3))) g\$q\$, 'fx', scope => 'faults'); SELECT idem.record_effect('fx1-$i', 'fx', '{\"job\": $i}', scope => 'faults')" ;;
    naive_keys)
        echo "WITH u AS (UPDATE f_accounts a SET balance = balance + e.amount FROM f_events e WHERE e.id = $i AND a.id = e.account RETURNING e.id) INSERT INTO f_applied SELECT id FROM u" ;;
    naive_merge)
        echo "INSERT INTO f_target SELECT ($i * 7 + j) % 50, $i, md5((($i * 7 + j) % 50) || ':' || $i) FROM generate_series(0, 9) j ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version, val = EXCLUDED.val" ;;
    esac
}

# attempt SQL: SQL in one transaction under a random statement_timeout (25
# ms to 2 s), then up to 60 ms before COMMIT: the window in which a cancel,
# a timeout or a kill finds the work done and not committed. Prints what
# the statements print; fails as psql does.
attempt() {
    "$PSQL" -X -q -A -t -v ON_ERROR_STOP=1 -d "$DB" \
        -c "SET statement_timeout = $(( 25 + RANDOM % 1975 )); $1; SELECT pg_sleep(0.0$(( RANDOM % 60 )))"
}

# fence_job I LOG: export exp-I as a worker does: claim it with a 300 ms
# lease (the claim recorded with its token), write its pages from the
# recovery point on, each with check_lease first and save_point last, then
# complete it, every write fenced by the token. Any failure (the lease
# taken over, a cancel, a crash) sends the worker back to claiming; a key
# another worker completed ends the job. One write in five stalls 400 ms
# first, past the lease, so that the other worker takes the key over.
fence_job() {
    local key=exp-$1 log=$2 out token page p tries=0 written
    while [ "$tries" -lt 400 ]; do
        tries=$((tries + 1))
        if ! out=$(attempt "INSERT INTO f_claims SELECT '$key', t FROM idem.claim_lease('$key', 'fence', lease => '300 ms', wait => false) t WHERE t IS NOT NULL RETURNING token" 2>>"$log"); then
            sleep 0.0$(( RANDOM % 9 + 1 ))
            continue
        fi
        token=$(grep -m1 -E '^[0-9]+$' <<<"$out")
        [ -z "$token" ] && return 0  # done, by this worker or another
        page=$("$PSQL" -X -q -A -t -d "$DB" -c "SELECT COALESCE(substr(recovery_point, 6)::int, 0) FROM idem.key_status('$key', 'fence')" 2>>"$log") || continue
        written=1
        for p in $(seq $(( ${page:-0} + 1 )) 3); do
            [ $(( RANDOM % 5 )) -eq 0 ] && sleep 0.4
            attempt "SELECT idem.check_lease('$key', 'fence', $token); INSERT INTO f_pages VALUES ('$key', $p, $token); SELECT idem.save_point('$key', 'page $p', 'fence', $token)" \
                >/dev/null 2>>"$log" || { written=0; break; }
        done
        [ "$written" -eq 1 ] || continue
        attempt "SELECT idem.check_lease('$key', 'fence', $token); INSERT INTO f_exported VALUES ('$key', $token); SELECT idem.complete('$key', '{}', 'fence', $token)" \
            >/dev/null 2>>"$log" && return 0
    done
    echo "GAVE UP on fence job $1" >>"$log"
    return 1
}

# run_job FAMILY I LOG: job I until it commits (at most 400 attempts).
run_job() {
    local tries=0
    if [ "$1" = fence ]; then
        fence_job "$2" "$3"
        return
    fi
    until attempt "$(job "$1" "$2")" >>"$3" 2>&1; do
        tries=$((tries + 1))
        if [ "$tries" -ge 400 ]; then
            echo "GAVE UP on $1 job $2" >>"$3"
            return 1
        fi
        sleep 0.0$(( RANDOM % 9 + 1 ))
    done
}

# client FAMILY FROM TO STEP [NAME]: runs jobs FROM, FROM+STEP, ... to TO
# (STEP may be negative: seq's order), each until it commits; every 5th job
# is sent once more after it committed (a lost acknowledgement). NAME tells
# apart clients of the same jobs (their logs and random choices).
client() {
    local family=$1 from=$2 to=$3 step=$4 name=${5:-} i log=$WORK/client-$1-$2${5:+-$5}.log
    RANDOM=$(( SEED + from * 31 + ${#family} + ${#name} * 7 ))
    export PGAPPNAME=faults_writer
    for i in $(seq "$from" "$step" "$to"); do
        run_job "$family" "$i" "$log" || return 1
        if [ $(( i % 5 )) -eq 0 ]; then
            run_job "$family" "$i" "$log" || return 1
        fi
    done
}

# fence_stalled_worker: worker A claims key "stalled" with a 100 ms lease
# and writes page 1; it stalls 300 ms; worker B takes the key over (a new
# token) and writes page 1; then A, awake, writes page 2 with its old
# token, as the first half of a fenced transaction: check_lease, the page,
# save_point. Prints A's write's outcome (the error's first line, or
# "committed"); then B finishes. In the same order every run: no timing.
fence_stalled_worker() {
    local a b out
    a=$(q -c "INSERT INTO f_claims SELECT 'stalled', idem.claim_lease('stalled', 'fence', lease => '100 ms') RETURNING token")
    q -c "SELECT idem.check_lease('stalled', 'fence', $a); INSERT INTO f_pages VALUES ('stalled', 1, $a); SELECT idem.save_point('stalled', 'page 1', 'fence', $a)" >/dev/null
    sleep 0.3
    b=$(q -c "INSERT INTO f_claims SELECT 'stalled', idem.claim_lease('stalled', 'fence', lease => '1 hour') RETURNING token")
    q -c "SELECT idem.check_lease('stalled', 'fence', $b); INSERT INTO f_pages VALUES ('stalled', 1, $b); SELECT idem.save_point('stalled', 'page 1', 'fence', $b)" >/dev/null
    if out=$(q -c "SELECT idem.check_lease('stalled', 'fence', $a); INSERT INTO f_pages VALUES ('stalled', 2, $a); SELECT idem.save_point('stalled', 'page 2', 'fence', $a)" 2>&1); then
        echo committed
    else
        head -1 <<<"$out"
    fi
    for p in 2 3; do
        q -c "SELECT idem.check_lease('stalled', 'fence', $b); INSERT INTO f_pages VALUES ('stalled', $p, $b); SELECT idem.save_point('stalled', 'page $p', 'fence', $b)" >/dev/null
    done
    q -c "SELECT idem.check_lease('stalled', 'fence', $b); INSERT INTO f_exported VALUES ('stalled', $b); SELECT idem.complete('stalled', '{}', 'fence', $b)" >/dev/null
}
