# Sourced by bench/run.sh (bench/lib.sh loaded, PGDATABASE has the extension).
#
# idem.publish on a dataset of 5 columns at each size of BENCH_SIZES (10k,
# 100k, 1M rows by default):
#   1. flip latency: the time from the view's lock being granted to publish
#      returning. Session A holds ACCESS SHARE on the view (as a reader
#      would); session B publishes new content: it checksums the query and
#      builds the version table, then queues for the ACCESS EXCLUSIVE lock of
#      CREATE OR REPLACE VIEW. Once pg_locks / pg_stat_activity show B waiting
#      for that lock, A reads clock_timestamp() (T0) and commits in the same
#      message; B reads clock_timestamp() right after publish returns, still
#      in its transaction (T1), and again after COMMIT (T2). Flip latency is
#      T1 - T0 (an upper bound: it includes A's commit and B's wake-up).
#   2. an identical republish: WAL, dirtied buffers, rows and version tables
#      it writes (EXPLAIN (ANALYZE, WAL, BUFFERS) of the call, which counts
#      the SPI statements inside it, plus pg_stat_xact_user_tables and the
#      transaction id in the same transaction), and its time against the
#      query alone plus idem.checksum_query of it, and against the
#      hand-written publish below, which rebuilds whatever the content;
#   3. a publish of new content against the hand-written publish: CREATE
#      TABLE AS the new version, CREATE OR REPLACE VIEW onto it, drop the
#      versions beyond keep (publish_by_hand).
# 2 and 3 go into latest.tsv.
#
# Every dataset first gets 5 versions (keep => 5, the default), so every
# measured publish also drops its oldest version (retention), as in steady
# state. BENCH_PUBLISH_ROUNDS (default 5) sets the flip rounds per size,
# BENCH_PUBLISH_TIME_ROUNDS (default: BENCH_ROUNDS, at least 15) the rounds
# of 2's time and of 3; BENCH_WARMUP applies; each psql of a round is
# limited by BENCH_PUBLISH_TIMEOUT (default 120 s). About 3-4 minutes on 2
# cores.

pub_rounds=${BENCH_PUBLISH_ROUNDS:-5}
pub_timeout=${BENCH_PUBLISH_TIMEOUT:-120}
pub_keep=5

# No autovacuum while this runs: each publish creates a table of up to 1M
# rows, and a worker vacuuming it would compete for the 2 cores with the
# next round (and hold locks retention must wait for). Restored at the end.
bench_psql >/dev/null <<'SQL'
ALTER SYSTEM SET autovacuum = off;
SELECT pg_reload_conf();
SQL

# Sizes by name (10k, 1m: the names of src_..., ds_...), smallest first.
pub_sizes=()
declare -A pub_rows=() pub_label=() pub_new_ratio=()
for n in "${BENCH_SIZE_LIST[@]}"; do
    size=$(bench_size_name "$n")
    pub_sizes+=("$size")
    pub_rows[$size]=$n
    pub_label[$size]=$(bench_size_label "$n")
done
pub_big=${pub_sizes[-1]}
pub_small=${pub_sizes[0]}

say "loading $(bench_rows "$BENCH_SIZE_MAX") rows (src_$pub_big) and copies of its first rows for the other sizes"
{ bench_standard_table "src_$pub_big" "$BENCH_SIZE_MAX"
  for size in "${pub_sizes[@]}"; do
      if [ "$size" != "$pub_big" ]; then
          echo "CREATE TABLE src_$size (LIKE src_$pub_big INCLUDING ALL);"
          echo "INSERT INTO src_$size SELECT * FROM src_$pub_big WHERE id <= ${pub_rows[$size]};"
      fi
      echo "VACUUM ANALYZE src_$size;"
  done
  cat <<'SQL'
-- What a user writes to publish a dataset without pg_idempotent: build the
-- new version as a table, point the view at it, drop the versions beyond
-- keep; serialized per dataset. It rebuilds whatever the content.
CREATE TABLE by_hand_versions (dataset text, version int, PRIMARY KEY (dataset, version));
CREATE FUNCTION publish_by_hand(p_dataset text, p_query text, p_keep int DEFAULT 5) RETURNS int
LANGUAGE plpgsql AS $f$
DECLARE
    v int;
    old int;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('publish_by_hand'), hashtext(p_dataset));
    SELECT coalesce(max(version), 0) + 1 INTO v FROM by_hand_versions WHERE dataset = p_dataset;
    EXECUTE format('CREATE TABLE %I AS %s', p_dataset || '__h' || v, p_query);
    EXECUTE format('CREATE OR REPLACE VIEW %I AS SELECT * FROM %I', p_dataset, p_dataset || '__h' || v);
    INSERT INTO by_hand_versions VALUES (p_dataset, v);
    FOR old IN SELECT version FROM by_hand_versions WHERE dataset = p_dataset ORDER BY version DESC OFFSET p_keep LOOP
        EXECUTE format('DROP TABLE %I', p_dataset || '__h' || old);
        DELETE FROM by_hand_versions WHERE dataset = p_dataset AND version = old;
    END LOOP;
    RETURN v;
END
$f$;

-- The revision of the content section 3 publishes: bumped (untimed) before
-- every timed publish, so each one has new content. It starts far above
-- the revisions of sections 1 and 2.
CREATE TABLE pub_rev (n int);
INSERT INTO pub_rev VALUES (1000000);

-- One row per flip round.
CREATE TABLE pub_rounds (
    size      text,
    round     int,
    version   int,
    started   timestamptz,  -- B starts publish
    waiting   timestamptz,  -- A sees B waiting for the view's lock
    released  timestamptz,  -- T0: A, right before COMMIT (same message)
    returned  timestamptz,  -- T1: B, right after publish returns (same transaction)
    committed timestamptz,  -- T2: B, after COMMIT
    -- B's /proc/PID/schedstat (ns on a CPU, ns waiting in the run queue) at
    -- those moments: while it waits for the lock, it uses no CPU.
    cpu_waiting bigint, rq_waiting bigint,
    cpu_returned bigint, rq_returned bigint,
    cpu_committed bigint, rq_committed bigint
);

SQL
} | bench_psql

declare -A pub_src=() pub_rev=() pub_query=()
for size in "${pub_sizes[@]}"; do
    pub_src[$size]=src_$size
    pub_rev[$size]=0
done

# The content of a dataset's next version: every revision changes qty.
pub_next_query() {
    local size=$1
    pub_rev[$size]=$(( ${pub_rev[$size]} + 1 ))
    pub_query[$size]="SELECT id, qty + ${pub_rev[$size]} AS qty, amount, label, created FROM ${pub_src[$size]}"
}

report ""
pub_sources=""
for size in "${pub_sizes[@]}"; do
    pub_sources+="${pub_sources:+, }\`src_$size\` ($(bench_rows "${pub_rows[$size]}") rows, $(bench_psql -c "SELECT pg_size_pretty(pg_table_size('src_$size'))") heap)"
done
report "Sources $pub_sources: id bigint primary key, qty int, amount numeric(12,2), label text of 20-40 chars, created timestamptz; VACUUM ANALYZEd; autovacuum off. Datasets \`ds_...\` of the same sizes; version N publishes \`SELECT id, qty + N AS qty, amount, label, created FROM src_...\`, so every version has new content."

say "publishing $pub_keep versions of each dataset (keep => $pub_keep: every later publish drops one), by idem.publish and by hand"
for size in "${pub_sizes[@]}"; do
    for ((i = 1; i <= pub_keep; i++)); do
        pub_next_query "$size"
        bench_psql -c "SELECT idem.publish('ds_$size', \$q\$${pub_query[$size]}\$q\$, keep => $pub_keep)" >/dev/null
        bench_psql -c "SELECT publish_by_hand('hds_$size', \$q\$${pub_query[$size]}\$q\$, $pub_keep)" >/dev/null
    done
done

# pub_flip_round SIZE ROUND: one flip of ds_SIZE to new content with a reader
# (session A) holding the view; the timestamps go to pub_rounds.
pub_flip_round() {
    local size=$1 round=$2 dir rc_a rc_b deadline
    local ds=ds_$size
    pub_next_query "$size"
    dir=$(mktemp -d /tmp/pg_idempotent-bench.XXXXXX)
    # A: a reader holding the view; reports when it holds it, waits (in the
    # server) for B to queue behind it, then reads the clock and commits in
    # one message (\; : one simple query, no round trip in between).
    timeout "$pub_timeout" psql -X -q -At -v ON_ERROR_STOP=1 >"$dir/a.out" 2>"$dir/a.err" <<SQL &
BEGIN;
LOCK TABLE $ds IN ACCESS SHARE MODE;
\! touch $dir/locked
SELECT 'W ' || bench_.await_lock_waiter('$ds', $pub_timeout);
SELECT 'T0 ' || clock_timestamp() \; COMMIT;
SQL
    local pid_a=$!
    deadline=$((SECONDS + pub_timeout))
    while [ ! -e "$dir/locked" ]; do
        if ! kill -0 "$pid_a" 2>/dev/null || [ $SECONDS -ge $deadline ]; then
            wait "$pid_a" || true
            echo "publish bench: session A did not lock $ds: $(cat "$dir/a.err")" >&2
            rm -rf "$dir"; return 1
        fi
        sleep 0.01
    done
    # B: the publisher.
    timeout "$pub_timeout" psql -X -q -At -v ON_ERROR_STOP=1 >"$dir/b.out" 2>"$dir/b.err" <<SQL &
SELECT 'S ' || clock_timestamp();
BEGIN;
SELECT 'V ' || idem.publish('$ds', \$q\$${pub_query[$size]}\$q\$, keep => $pub_keep);
SELECT 'T1 ' || clock_timestamp() || '|' || bench_.schedstat(pg_backend_pid());
COMMIT;
SELECT 'T2 ' || clock_timestamp() || '|' || bench_.schedstat(pg_backend_pid());
SQL
    local pid_b=$!
    # B ends after A's commit, or on an error: then A would wait for it in vain.
    rc_b=0; wait "$pid_b" || rc_b=$?
    [ "$rc_b" -eq 0 ] || kill "$pid_a" 2>/dev/null || true
    rc_a=0; wait "$pid_a" || rc_a=$?
    if [ "$rc_a" -ne 0 ] || [ "$rc_b" -ne 0 ]; then
        echo "publish bench: flip round $round of $ds failed (A: exit $rc_a, B: exit $rc_b)" >&2
        cat "$dir/a.err" "$dir/b.err" >&2
        rm -rf "$dir"; return 1
    fi
    local -A v=()
    local tag rest
    while read -r tag rest; do v[$tag]=$rest; done < <(cat "$dir/a.out" "$dir/b.out")
    rm -rf "$dir"
    for tag in S V W T0 T1 T2; do
        [ -n "${v[$tag]:-}" ] || { echo "publish bench: round $round of $ds: no $tag in the output" >&2; return 1; }
    done
    local w t1 t2
    IFS='|' read -ra w <<<"${v[W]}"
    IFS='|' read -ra t1 <<<"${v[T1]}"
    IFS='|' read -ra t2 <<<"${v[T2]}"
    bench_psql -c "INSERT INTO pub_rounds VALUES ('$size', $round, ${v[V]}, '${v[S]}', '${w[0]}', '${v[T0]}', '${t1[0]}', '${t2[0]}',
                   ${w[1]}, ${w[2]}, ${t1[1]}, ${t1[2]}, ${t2[1]}, ${t2[2]})"
}

say "flip latency: $BENCH_WARMUP warm-up + $pub_rounds rounds per size, a reader holding the view"
pub_load_before=$(cut -d' ' -f1 /proc/loadavg)
pub_n=${#pub_sizes[@]}
for ((r = 1 - BENCH_WARMUP; r <= pub_rounds; r++)); do
    for ((k = 0; k < pub_n; k++)); do
        pub_flip_round "${pub_sizes[(k + r + pub_n * 1000) % pub_n]}" "$r"
    done
done
bench_psql -c "DELETE FROM pub_rounds WHERE round < 1"

# Every round's publish must have made a new version, the view pointing at it.
pub_bad=$(bench_psql -c "
    SELECT count(*) FROM pub_rounds r
    WHERE r.version <> (SELECT v.version FROM idem.versions('ds_' || r.size) v WHERE v.is_current) - ($pub_rounds - r.round)")
[ "$pub_bad" = 0 ] || { echo "publish bench: the flip rounds did not publish one version each" >&2; return 1; }

declare -A flip_med=() flip_cpu=()
report ""
report "### 1. Flip latency with a reader holding the view"
report ""
report "Per round, session A \`LOCK TABLE ds IN ACCESS SHARE MODE\` (a reader); session B \`BEGIN; SELECT idem.publish(ds, <new content>); COMMIT\` checksums the query and builds the version table, then queues for the view's ACCESS EXCLUSIVE lock; once B shows in pg_locks / pg_stat_activity as waiting, A reads clock_timestamp() (T0) and commits in the same message. **flip** = T1 - T0 with T1 read by B right after publish returns (same transaction): the time from the lock being released (so granted) to publish returning; it includes A's commit and B's wake-up. **commit** = B's COMMIT (T2 - T1): readers still queue behind the view's lock until it ends (that is where the dropped version's files are removed), so **view locked** = T2 - T0 is what a reader waits at most; not a goal of the issue, shown for it. **build** = B's publish start to A seeing B wait (checksum + CREATE TABLE AS + audit, before the lock). Every publish also drops its oldest version (keep => $pub_keep). $pub_rounds rounds per size after $BENCH_WARMUP warm-up round(s), sizes alternating."
report ""
report "B's time under the lock is split with its /proc/PID/schedstat: **on CPU** (B running) and **run queue** (B runnable, waiting for a CPU: other processes on the machine); the rest of the wall time is B or A sleeping (I/O, A's commit, the wake-up). Load average (1 min) when the rounds started: $pub_load_before; when they ended: $(cut -d' ' -f1 /proc/loadavg) on $(nproc) CPU(s)."
report ""
report "| dataset | rows | build ms | flip ms: median | min | max | flip on CPU ms | flip in run queue ms | commit ms | commit on CPU ms | view locked ms (flip + commit) |"
report "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
while IFS='|' read -r size rows build fmed fmin fmax fcpu frq cmed ccpu held; do
    flip_med[$size]=$fmed
    flip_cpu[$size]=$fcpu
    report "| \`ds_$size\` | $rows | $build | $fmed | $fmin | $fmax | $fcpu | $frq | $cmed | $ccpu | $held |"
done < <(bench_psql -F '|' -c "
    WITH s AS (
        SELECT size,
               extract(epoch FROM waiting - started) * 1000 AS build,
               extract(epoch FROM returned - released) * 1000 AS flip,
               (cpu_returned - cpu_waiting) / 1e6 AS flip_cpu,
               (rq_returned - rq_waiting) / 1e6 AS flip_rq,
               extract(epoch FROM committed - returned) * 1000 AS cmt,
               (cpu_committed - cpu_returned) / 1e6 AS cmt_cpu,
               extract(epoch FROM committed - released) * 1000 AS held
        FROM pub_rounds)
    SELECT size,
           to_char((SELECT row_count FROM idem.versions('ds_' || size) WHERE is_current), 'FM9,999,999'),
           round(percentile_cont(0.5) WITHIN GROUP (ORDER BY build)::numeric, 0),
           round(percentile_cont(0.5) WITHIN GROUP (ORDER BY flip)::numeric, 1),
           round(min(flip)::numeric, 1), round(max(flip)::numeric, 1),
           round(percentile_cont(0.5) WITHIN GROUP (ORDER BY flip_cpu)::numeric, 1),
           round(percentile_cont(0.5) WITHIN GROUP (ORDER BY flip_rq)::numeric, 1),
           round(percentile_cont(0.5) WITHIN GROUP (ORDER BY cmt)::numeric, 1),
           round(percentile_cont(0.5) WITHIN GROUP (ORDER BY cmt_cpu)::numeric, 1),
           round(percentile_cont(0.5) WITHIN GROUP (ORDER BY held)::numeric, 1)
    FROM s GROUP BY size
    ORDER BY (SELECT row_count FROM idem.versions('ds_' || size) WHERE is_current) DESC")

report ""
report "Medians over the rounds, each column on its own. Per round (ms), in order: $(bench_psql -c "
    SELECT string_agg(size || ' r' || round || ': flip ' || round((extract(epoch FROM returned - released) * 1000)::numeric, 1)
                      || ' (CPU ' || round((cpu_returned - cpu_waiting) / 1e6, 1)
                      || ', run queue ' || round((rq_returned - rq_waiting) / 1e6, 1)
                      || '), commit ' || round((extract(epoch FROM committed - returned) * 1000)::numeric, 1), '; '
                      ORDER BY started)
    FROM pub_rounds")"

bench_goal_begin
for size in "${pub_sizes[@]}"; do
    bench_goal "flip latency, ${pub_label[$size]} rows (median)" "${flip_med[$size]}" "<=" 50 " ms"
done
if [ "$pub_big" != "$pub_small" ]; then
    bench_goal "flip latency ${pub_label[$pub_big]} / ${pub_label[$pub_small]} rows" "$(bench_ratio "${flip_med[$pub_big]}" "${flip_med[$pub_small]}")" "<=" 2 x
    report ""
    report "(On CPU under the lock, ${pub_label[$pub_big]} / ${pub_label[$pub_small]} rows: $(bench_ratio "${flip_cpu[$pub_big]}" "${flip_cpu[$pub_small]}")x; not a goal, shown because the wall-clock ratio of two small numbers on a shared machine is noisy.)"
fi

# 2. The identical republish: the current content of each dataset again.
report ""
report "### 2. Identical republish"
report ""
report "\`SELECT idem.publish(ds, <the query of the current version>)\`, first call after the last flip, with \`idem.history = 'changes'\` (by default the rerun records its run: one history row, see the history section), run as \`EXPLAIN (ANALYZE, WAL, BUFFERS, FORMAT JSON)\` (the top node's counters include the SPI statements inside the function); in the same transaction: the transaction id (none assigned = nothing written, not even a row lock) and the rows inserted/updated/deleted in any table (pg_stat_xact_user_tables); before and after: the version tables \`ds_...__v%\` and the view's definition."
report ""
report "| dataset | current version | returned version | new version tables | xid assigned | rows written | WAL records | WAL bytes | WAL FPI | buffers dirtied | buffers written | view changed |"
report "|---|---:|---:|---:|:---:|---:|---:|---:|---:|---:|---:|:---:|"
declare -A same_wal=() same_rows=() same_tables=() same_xid=() same_version_ok=() same_ms=()
for size in "${pub_sizes[@]}"; do
    q=${pub_query[$size]}
    read -r ver_before tables_before def_before < <(bench_psql -F ' ' -c "
        SELECT (SELECT version FROM idem.versions('ds_$size') WHERE is_current),
               (SELECT count(*) FROM pg_class WHERE relname LIKE 'ds\_${size}\_\_v%' AND relkind = 'r'),
               md5(pg_get_viewdef('ds_$size'::regclass))")
    # idem.history = changes: the promise is that the rerun writes nothing at
    # all; by default (all) it writes its one run history row, which
    # bench/history.sh measures. The catalogs are vacuumed first: the flips
    # before left dead rows in pg_class and its siblings (dropped versions),
    # and any backend that reads such a page prunes it, which is WAL
    # (Heap2 PRUNE, about 60 bytes a page) counted against whoever read it
    # first, publish or not; 0.8.0 and 0.9.0 alike measured 60 to 240 bytes
    # of it in a rerun that came first after a flip.
    bench_psql -c "VACUUM pg_catalog.pg_class, pg_catalog.pg_attribute, pg_catalog.pg_type, pg_catalog.pg_depend, idem.datasets, idem.dataset_versions" >/dev/null
    mapfile -t out < <(bench_psql -F '|' <<SQL
SET idem.history = 'changes';
BEGIN;
SELECT * FROM bench_.explain_counters(\$e\$SELECT idem.publish('ds_$size', \$q\$$q\$q\$, keep => $pub_keep)\$e\$);
SELECT CASE WHEN pg_current_xact_id_if_assigned() IS NULL THEN 'no' ELSE 'yes' END,
       (SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) FROM pg_stat_xact_user_tables);
SELECT idem.publish('ds_$size', \$q\$$q\$q\$, keep => $pub_keep);
COMMIT;
SQL
)
    IFS='|' read -r wal_rec wal_fpi wal_bytes dirtied written ms <<<"${out[0]}"
    IFS='|' read -r xid rows_w <<<"${out[1]}"
    ret=${out[2]}
    read -r tables_after def_after < <(bench_psql -F ' ' -c "
        SELECT (SELECT count(*) FROM pg_class WHERE relname LIKE 'ds\_${size}\_\_v%' AND relkind = 'r'),
               md5(pg_get_viewdef('ds_$size'::regclass))")
    same_wal[$size]=$wal_bytes
    same_rows[$size]=$rows_w
    same_tables[$size]=$((tables_after - tables_before))
    same_xid[$size]=$xid
    same_version_ok[$size]=$([ "$ret" = "$ver_before" ] && echo 1 || echo 0)
    same_ms[$size]=$ms
    report "| \`ds_$size\` | $ver_before | $ret | ${same_tables[$size]} | $xid | $rows_w | $wal_rec | $wal_bytes | $wal_fpi | $dirtied | $written | $([ "$def_before" = "$def_after" ] && echo no || echo yes) |"
done
report ""
report "EXPLAIN's own execution time of that first call: $(for size in "${pub_sizes[@]}"; do printf '%s %s ms; ' "ds_$size" "${same_ms[$size]}"; done | sed 's/; $//'). Then the same call a second time in that transaction returned the version shown."

# Its time: the republish against the query alone and one checksum of it.
# The goals' comparisons (this one and section 3's) time statements of 1 to
# 10 ms at 10k rows, where one round is inside this machine's noise
# (bench/README.md, issue 45): they take at least 15 rounds
# (BENCH_PUBLISH_TIME_ROUNDS).
pub_saved_rounds=$BENCH_ROUNDS
BENCH_ROUNDS=${BENCH_PUBLISH_TIME_ROUNDS:-$(( BENCH_ROUNDS > 15 ? BENCH_ROUNDS : 15 ))}
declare -A same_ratio=()
for size in "${pub_sizes[@]}"; do
    q=${pub_query[$size]}
    report ""
    report "#### Identical republish of \`ds_$size\`: time"
    bench_compare "republish_$size" \
        "republish_$size" "SELECT idem.publish('ds_$size', \$q\$$q\$q\$)" \
        "query_$size"     "SELECT count(*) FROM ($q) q" \
        "checksum_$size"  "SELECT idem.checksum_query(\$q\$$q\$q\$)"
    same_ratio[$size]=$(bench_ratio "${BENCH_MEDIAN[republish_$size]}" \
        "$(awk -v a="${BENCH_MEDIAN[query_$size]}" -v b="${BENCH_MEDIAN[checksum_$size]}" 'BEGIN { print a + b }')")
    report ""
    report "- republish / (query + checksum_query): ${same_ratio[$size]}x; republish / checksum_query alone: $(bench_ratio "${BENCH_MEDIAN[republish_$size]}" "${BENCH_MEDIAN[checksum_$size]}")x (checksum_query runs the query too, so query + checksum_query counts the query twice)"
done
report ""
report "Version tables after the timing rounds: $(bench_psql -c "SELECT string_agg(v, ', ' ORDER BY v) FROM (SELECT left(relname, position('__v' in relname) - 1) || ': ' || count(*) AS v FROM pg_class WHERE relname LIKE 'ds\_%\_\_v%' AND relkind = 'r' GROUP BY left(relname, position('__v' in relname) - 1)) s") (keep => $pub_keep; the timed republishes made none)."

bench_goal_begin
for size in "${pub_sizes[@]}"; do
    bench_goal "identical republish of ${pub_label[$size]} rows: WAL bytes" "${same_wal[$size]}" "<=" 0
    bench_goal "identical republish of ${pub_label[$size]} rows: rows written, any table" "${same_rows[$size]}" "<=" 0
    bench_goal "identical republish of ${pub_label[$size]} rows: transaction ids assigned" "$([ "${same_xid[$size]}" = no ] && echo 0 || echo 1)" "<=" 0
    bench_goal "identical republish of ${pub_label[$size]} rows: new version tables" "${same_tables[$size]}" "<=" 0
    bench_goal "identical republish of ${pub_label[$size]} rows: returns the current version (1 = yes)" "${same_version_ok[$size]}" ">=" 1
    bench_goal "identical republish of ${pub_label[$size]} rows: time / (query + checksum_query)" "${same_ratio[$size]}" "<=" 1 x
done

# 3. Against the hand-written publish (publish_by_hand: CREATE TABLE AS,
# CREATE OR REPLACE VIEW, drop beyond keep), which every rerun rebuilds.
# Separate comparisons from section 2's: the hand-written publish writes a
# whole version table per round, which must not disturb the goal's timings.
report ""
report "### 3. Against a hand-written publish"
report ""
report "What a user writes without pg_idempotent, \`publish_by_hand(dataset, query, keep)\`: \`CREATE TABLE <dataset>__h<n> AS <query>\`, \`CREATE OR REPLACE VIEW <dataset> AS SELECT * FROM <dataset>__h<n>\`, drop the versions beyond keep (5, as idem.publish's default), serialized by an advisory lock; each dataset \`hds_...\` already has 5 versions. It neither checksums nor compares: it rebuilds whatever the content."
report ""
report "- **identical republish**: the query of the current version again; idem.publish finds the same content and returns, publish_by_hand builds a new version."
report "- **new content**: \`SELECT id, qty + (SELECT n FROM pub_rev) AS qty, amount, label, created FROM src_...\`, with pub_rev.n incremented before each timed statement (untimed), so every publish of either has new content: idem.publish checksums the query, builds, flips and drops its oldest version, as publish_by_hand builds, flips and drops."
pub_rev_query() {
    echo "SELECT id, qty + (SELECT n FROM pub_rev) AS qty, amount, label, created FROM src_$1"
}
pub_current() {
    bench_psql -c "SELECT (SELECT version FROM idem.versions('ds_$1') WHERE is_current) || ' ' || (SELECT max(version) FROM by_hand_versions WHERE dataset = 'hds_$1')"
}
for size in "${pub_sizes[@]}"; do
    q=${pub_query[$size]}
    report ""
    report "#### $(bench_rows "${pub_rows[$size]}") rows: identical republish"
    read -r ours0 hand0 < <(pub_current "$size")
    bench_compare "republish_by_hand_$size" \
        "republish_$size" "SELECT idem.publish('ds_$size', \$q\$$q\$q\$)" \
        "by_hand_$size"   "SELECT publish_by_hand('hds_$size', \$q\$$q\$q\$)"
    bench_tsv publish "identical republish" "${pub_rows[$size]}" "${BENCH_MEDIAN[republish_$size]}" "${BENCH_MEDIAN[by_hand_$size]}" \
        "idem.publish (finds the same content)" "by hand: CREATE TABLE AS, CREATE OR REPLACE VIEW"
    read -r ours1 hand1 < <(pub_current "$size")
    report ""
    report "- versions: idem.publish $ours0 → $ours1, by hand $hand0 → $hand1"
    # idem.publish must have published nothing, the hand-written one a
    # version per run (warm-up included).
    [ "$ours1" = "$ours0" ] && [ "$hand1" -eq $((hand0 + BENCH_WARMUP + BENCH_ROUNDS)) ] || {
        echo "publish bench: identical republish of ds_$size: versions $ours0 -> $ours1 (idem), $hand0 -> $hand1 (by hand)" >&2; return 1; }

    rq=$(pub_rev_query "$size")
    report ""
    report "#### $(bench_rows "${pub_rows[$size]}") rows: new content"
    BENCH_RESET=(["publish_$size"]="UPDATE pub_rev SET n = n + 1;" ["by_hand_$size"]="UPDATE pub_rev SET n = n + 1;")
    bench_compare "publish_new_$size" \
        "publish_$size" "SELECT idem.publish('ds_$size', \$q\$$rq\$q\$)" \
        "by_hand_$size" "SELECT publish_by_hand('hds_$size', \$q\$$rq\$q\$)"
    BENCH_RESET=()
    bench_tsv publish "new content" "${pub_rows[$size]}" "${BENCH_MEDIAN[publish_$size]}" "${BENCH_MEDIAN[by_hand_$size]}" \
        "idem.publish" "by hand: CREATE TABLE AS, CREATE OR REPLACE VIEW"
    pub_new_ratio[$size]=$(bench_ratio "${BENCH_MEDIAN[publish_$size]}" "${BENCH_MEDIAN[by_hand_$size]}")
    read -r ours2 hand2 < <(pub_current "$size")
    report ""
    report "- versions: idem.publish $ours1 → $ours2, by hand $hand1 → $hand2"
    # Every run of both must have published a new version.
    [ "$ours2" -eq $((ours1 + BENCH_WARMUP + BENCH_ROUNDS)) ] && [ "$hand2" -eq $((hand1 + BENCH_WARMUP + BENCH_ROUNDS)) ] || {
        echo "publish bench: new content of ds_$size: versions $ours1 -> $ours2 (idem), $hand1 -> $hand2 (by hand)" >&2; return 1; }
done
BENCH_ROUNDS=$pub_saved_rounds

# Issue 45: new content at most 1.15x the hand-written publish at every size.
bench_goal_begin
for size in "${pub_sizes[@]}"; do
    bench_goal "new content, ${pub_label[$size]} rows: idem.publish / CREATE TABLE AS + CREATE OR REPLACE VIEW" \
        "${pub_new_ratio[$size]}" "<=" 1.15 x
done

bench_psql >/dev/null <<'SQL'
ALTER SYSTEM RESET autovacuum;
SELECT pg_reload_conf();
SQL
