# Sourced by bench/run.sh (bench/lib.sh loaded, PGDATABASE has the extension).
#
# idem.overwrite_partition against the SQL a user would write by hand, on a
# partition of ov_rows rows (BENCH_OVERWRITE_ROWS, default 1,000,000; 5
# columns, a primary key and one more index on the parent):
#   0. the identical rerun of the partition as the setup loaded it: no
#      record of a write by overwrite_partition, so both sides are hashed;
#   1. mode 'swap' and mode 'rewrite' against
#        BEGIN; DELETE FROM sales WHERE day = ...; INSERT ... SELECT ...; COMMIT
#      (as one SQL function), every round with new content (a revision
#      number in one column), so every call really writes: time (median of
#      the rounds; before each call, untimed, one call of the same variant,
#      VACUUM and CHECKPOINT, so that every call of a variant starts from
#      the table its own method leaves) and WAL
#      (pg_current_wal_insert_lsn() before and after one more call of each,
#      autovacuum off, nothing else running);
#   2. an identical rerun after the function's own write (its record proves
#      the partition unchanged): time
#      and pages read against the query run to its end plus one scan of the
#      partition (and against count(*) of each, the 0.3.0 proxy), and the
#      WAL and heap writes it causes;
#   3. the time from the parent lock being granted to swap_partition
#      returning, at 10k rows and at ov_rows, with and without a DEFAULT
#      partition: session A holds ACCESS SHARE on the parent, session B (the
#      swap) queues behind it; when B waits, A reads clock_timestamp() and
#      commits in one message; B reads clock_timestamp() as soon as
#      swap_partition returns. The difference is an upper bound (it includes
#      A's commit and B's wake-up).

ov_rows=${BENCH_OVERWRITE_ROWS:-1000000}
ov_n() { echo "$1" | sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/' -e 'ta'; }
ov_flip_rounds=${BENCH_OVERWRITE_FLIP_ROUNDS:-5}
# Rounds: this machine is shared, and its noise comes in bursts of 10 to 20 s
# that slow any statement running then by up to 1.7x (seen on the same
# INSERT run twice in a row: 5.6 s and 3.1 s). With 5 rounds, three slow
# samples of one variant move its median; 9 rounds of the writes (each about
# 10 s with its reset) and 15 of the reruns (0.2 s each) leave the medians to
# the quiet rounds.
ov_write_rounds=${BENCH_OVERWRITE_ROUNDS:-9}
ov_rerun_rounds=${BENCH_OVERWRITE_RERUN_ROUNDS:-15}

bench_psql >/dev/null <<'SQL'
ALTER SYSTEM SET autovacuum = off;
SELECT pg_reload_conf();
CREATE TABLE ov_rev (n int NOT NULL);
INSERT INTO ov_rev VALUES (0);
SQL

# ov_setup NAME ROWS DEFAULT: a partitioned table NAME by day with the
# partition NAME_0707 of ROWS rows, a neighbour day, and (DEFAULT = yes) a
# DEFAULT partition of ROWS / 10 rows; its source NAME_src (the same rows).
ov_setup() {
    local t=$1 n=$2 with_default=$3
    bench_psql <<SQL
CREATE TABLE ${t}_src AS
  SELECT '2024-07-07'::date AS day, g AS id, (g % 1000)::int AS store, round((g % 997) * 1.5, 2) AS amount,
         md5(g::text) AS note
  FROM generate_series(1, $n) g;
CREATE TABLE $t (day date NOT NULL, id bigint NOT NULL, store int, amount numeric(12,2), note text,
                 PRIMARY KEY (day, id)) PARTITION BY RANGE (day);
CREATE INDEX ON $t (store);
CREATE TABLE ${t}_0707 PARTITION OF $t FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
CREATE TABLE ${t}_0708 PARTITION OF $t FOR VALUES FROM ('2024-07-08') TO ('2024-07-09');
INSERT INTO $t SELECT * FROM ${t}_src;
INSERT INTO $t SELECT '2024-07-08', id, store, amount, note FROM ${t}_src WHERE id <= 1000;
$( [ "$with_default" = yes ] && echo "CREATE TABLE ${t}_rest PARTITION OF $t DEFAULT;
INSERT INTO $t SELECT '2025-01-01'::date + (id % 30)::int, id, store, amount, note FROM ${t}_src WHERE id % 10 = 0;" )
VACUUM ANALYZE $t, ${t}_src;
SQL
}

# The job's query for revision r: the source with r in store, so that every
# revision is new content.
ov_query() { echo "SELECT day, id, store + (SELECT n FROM ov_rev), amount, note FROM $1_src"; }

report ""
report "Partition of $(ov_n "$ov_rows") rows (day date, id bigint, store int, amount numeric(12,2), note text; primary key (day, id) and an index on store, on the parent), a neighbour partition of 1,000 rows; autovacuum off. Each round bumps a revision number in \`store\`, so every call writes the whole partition."

say "loading $(ov_n "$ov_rows") rows"
ov_setup ov "$ov_rows" no
q=$(ov_query ov)
bench_psql >/dev/null <<SQL
CREATE FUNCTION ov_by_hand() RETURNS void LANGUAGE sql AS \$f\$
  DELETE FROM ov WHERE day = '2024-07-07';
  INSERT INTO ov $q;
\$f\$;
SQL
# Each timed call starts from the state its own method leaves, as in a
# pipeline that always uses it: untimed, one call of the same variant (new
# content), then a new revision, the dead rows vacuumed away (autovacuum is
# off, and without this every call would scan and index more dead rows than
# the one before), and a checkpoint. Round-robin alone would not give that:
# each call would start from the table the previous variant left, and the
# variants differ there. A swap leaves a compact table with freshly built
# indexes, into which a DELETE + INSERT in place must extend the heap and
# split index pages (about 0.6 s more per 1M rows here than into the space a
# vacuumed DELETE + INSERT leaves), so 'rewrite', which followed 'swap',
# paid that and 'by_hand' did not.
ov_prime() {  # CALL: the untimed reset before a timed CALL
    echo "UPDATE ov_rev SET n = n + 1; $1; UPDATE ov_rev SET n = n + 1; VACUUM ov; CHECKPOINT;"
}
ov_call_by_hand="SELECT ov_by_hand()"
ov_call_swap="SELECT * FROM idem.overwrite_partition('ov', '2024-07-07'::date, \$q\$$q\$q\$, mode => 'swap')"
ov_call_rewrite="SELECT * FROM idem.overwrite_partition('ov', '2024-07-07'::date, \$q\$$q\$q\$)"
BENCH_RESET=([by_hand]="$(ov_prime "$ov_call_by_hand")" [swap]="$(ov_prime "$ov_call_swap")"
             [rewrite]="$(ov_prime "$ov_call_rewrite")")
ov_saved_rounds=$BENCH_ROUNDS
BENCH_ROUNDS=$ov_rerun_rounds
# 0. The identical rerun of a partition loaded by other means (here by the
# setup's INSERT): overwrite_partition has no record of it, so it hashes
# both sides. Nothing is written, so no reset is needed between calls.
report ""
report "### Identical rerun of a partition loaded by hand ($(ov_n "$ov_rows") rows: no record, both sides hashed)"
bench_compare rerun_hashed \
    query_plus_scan "SELECT bench_.run_discarding(\$x\$$q\$x\$), bench_.run_discarding('SELECT * FROM ov_0707')" \
    overwrite_skip_hashed "SELECT * FROM idem.overwrite_partition('ov', '2024-07-07'::date, \$q\$$q\$q\$)"
t_skip_hashed=${BENCH_MEDIAN[overwrite_skip_hashed]}; t_skip_hashed_base=${BENCH_MEDIAN[query_plus_scan]}
bench_tsv overwrite "identical rerun, no record (hashed)" "$ov_rows" "$t_skip_hashed" "$t_skip_hashed_base" \
    "overwrite_partition (skipped, hashed)" "query + one scan of the partition"
bench_goal_begin
bench_goal "identical rerun, no record (both sides hashed), vs the query plus one scan (issue 45)" \
    "$(bench_ratio "$t_skip_hashed" "$t_skip_hashed_base")" "<=" 1.4 x

report ""
report "### Overwrite with new content ($(ov_n "$ov_rows") rows)"
BENCH_ROUNDS=$ov_write_rounds
bench_compare overwrite by_hand "$ov_call_by_hand" swap "$ov_call_swap" rewrite "$ov_call_rewrite"
BENCH_RESET=()
BENCH_ROUNDS=$ov_rerun_rounds
t_by_hand=${BENCH_MEDIAN[by_hand]}; t_swap=${BENCH_MEDIAN[swap]}; t_rewrite=${BENCH_MEDIAN[rewrite]}

# WAL of one more call each (same transaction boundaries as above).
# Each after the same priming as the timed calls.
ov_wal() {
    bench_psql <<<"$(ov_prime "$1")" >/dev/null
    bench_psql -c "SELECT pg_current_wal_insert_lsn()" >/tmp/ov_lsn
    bench_psql -c "$1" >/dev/null
    bench_psql -c "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '$(cat /tmp/ov_lsn)')::bigint"
}
w_by_hand=$(ov_wal "$ov_call_by_hand")
w_swap=$(ov_wal "$ov_call_swap")
w_rewrite=$(ov_wal "$ov_call_rewrite")
rm -f /tmp/ov_lsn
report ""
report "| | time (median) | vs by hand | WAL | vs by hand |"
report "|---|---:|---:|---:|---:|"
for v in by_hand swap rewrite; do
    t_var="t_$v"; w_var="w_$v"
    report "| $v | ${!t_var} ms | $(bench_ratio "${!t_var}" "$t_by_hand")x | $(awk -v b="${!w_var}" 'BEGIN { printf "%.1f MB", b / 1048576 }') | $(bench_ratio "${!w_var}" "$w_by_hand")x |"
done
bench_tsv overwrite "new content, mode swap" "$ov_rows" "$t_swap" "$t_by_hand" "overwrite_partition swap" "DELETE+INSERT"
bench_tsv overwrite "new content, mode rewrite" "$ov_rows" "$t_rewrite" "$t_by_hand" "overwrite_partition rewrite" "DELETE+INSERT"
bench_goal_begin
bench_goal "swap: time vs DELETE+INSERT by hand" "$(bench_ratio "$t_swap" "$t_by_hand")" "<=" 0.8
bench_goal "swap: WAL vs DELETE+INSERT by hand" "$(bench_ratio "$w_swap" "$w_by_hand")" "<=" 0.6
bench_goal "rewrite: time vs DELETE+INSERT by hand" "$(bench_ratio "$t_rewrite" "$t_by_hand")" "<=" 1.1

# 2. The identical rerun after the function's own write (the last call
# above), against "the query plus one scan of the
# partition": the query run to its end (its rows computed, then discarded in
# the server) and one sequential scan of the partition, each as PostgreSQL
# plans it (parallel workers allowed, as for the rerun's own statements).
# The 0.3.0 report's proxy is kept beside it: count(*) of each, which
# computes none of the query's columns and reads none of the rows' values.
report ""
report "### Identical rerun after its own write ($(ov_n "$ov_rows") rows: the record proves the partition unchanged)"
# Its writes (EXPLAIN (ANALYZE, WAL, BUFFERS) of the call, after SETUP):
# prints "WAL_BYTES DIRTIED".
ov_writes_of() {  # SETUP SQL
    bench_psql -F ' ' -c "$1" -c "
  SELECT wal_bytes, dirtied FROM bench_.explain_counters(\$q\$$2\$q\$)"
}
# The first read right after a write: the partition still holds the rows
# the write deleted (unpruned) and no row has a hint bit yet. A plain read
# prunes those pages and sets the hints (WAL, dirtied pages); the rerun's
# header scan judges the write's own rows from their headers and prunes
# nothing. Each after a fresh write (idem.history = changes: no history row).
ov_fresh_write="UPDATE ov_rev SET n = n + 1; SET idem.history = 'changes'; SELECT * FROM idem.overwrite_partition('ov', '2024-07-07'::date, \$q\$$q\$q\$);"
read -r first_rerun_wal first_rerun_dirtied <<<"$(ov_writes_of "$ov_fresh_write" "SELECT * FROM idem.overwrite_partition('ov', '2024-07-07'::date, \$x\$$q\$x\$)" | tail -1)"
read -r first_read_wal first_read_dirtied <<<"$(ov_writes_of "$ov_fresh_write" "SELECT count(*) FROM ov_0707" | tail -1)"
report ""
report "Right after a write, the first identical rerun wrote ${first_rerun_wal} bytes of WAL and dirtied ${first_rerun_dirtied} buffers (\`idem.history = changes\`); a plain \`SELECT count(*)\` of the partition at the same point wrote ${first_read_wal} bytes of WAL (pruning the rows the write deleted) and dirtied ${first_read_dirtied} buffers (pages the write left dirty are not counted again)."
bench_compare rerun \
    query_plus_scan "SELECT bench_.run_discarding(\$x\$$q\$x\$), bench_.run_discarding('SELECT * FROM ov_0707')" \
    count_plus_count "SELECT (SELECT count(*) FROM ($q) s) + (SELECT count(*) FROM ov_0707)" \
    overwrite_skip "SELECT * FROM idem.overwrite_partition('ov', '2024-07-07'::date, \$q\$$q\$q\$)"
# Its writes, with idem.history = changes (the rerun records nothing: the
# promise is zero) and with the default all (its one run history row).
ov_rerun_writes() {  # SETTING: prints "WAL_BYTES DIRTIED"
    bench_psql -F ' ' -c "SET idem.history = '$1';" -c "
  SELECT wal_bytes, dirtied FROM bench_.explain_counters(\$q\$SELECT * FROM idem.overwrite_partition('ov', '2024-07-07'::date, \$x\$$q\$x\$)\$q\$)"
}
read -r rerun_wal rerun_written <<<"$(ov_rerun_writes changes)"
read -r rerun_wal_all rerun_written_all <<<"$(ov_rerun_writes all)"
# What it reads: pages hit or read, against the query plus the scan.
ov_blocks() { bench_psql -c "SELECT blocks FROM bench_.explain_counters(\$b\$$1\$b\$)"; }
rerun_blocks=$(ov_blocks "SELECT * FROM idem.overwrite_partition('ov', '2024-07-07'::date, \$q\$$q\$q\$)")
base_blocks=$(ov_blocks "SELECT bench_.run_discarding(\$x\$$q\$x\$), bench_.run_discarding('SELECT * FROM ov_0707')")
report ""
report "The rerun's own writes (EXPLAIN (ANALYZE, WAL, BUFFERS) of the call): with \`idem.history = changes\`, WAL ${rerun_wal} bytes, ${rerun_written} buffers dirtied; with the default \`all\` (its run history row), WAL ${rerun_wal_all} bytes, ${rerun_written_all} buffers dirtied."
report ""
report "Pages it reads (shared buffers hit or read, parallel workers included): ${rerun_blocks}, against ${base_blocks} for the query plus the scan ($(bench_ratio "$rerun_blocks" "$base_blocks")x). The data is read once on each side; the difference is catalog look-ups (the function's own, and each parallel worker's)."
bench_tsv overwrite "identical rerun" "$ov_rows" "${BENCH_MEDIAN[overwrite_skip]}" "${BENCH_MEDIAN[query_plus_scan]}" \
    "overwrite_partition (skipped)" "query + one scan of the partition"
bench_goal_begin
bench_goal "identical rerun vs the query plus one scan" \
    "$(bench_ratio "${BENCH_MEDIAN[overwrite_skip]}" "${BENCH_MEDIAN[query_plus_scan]}")" "<=" 1.0
report ""
report "Against the 0.3.0 proxy (count(*) of the query and of the partition: none of the query's columns computed, no value read): $(bench_ratio "${BENCH_MEDIAN[overwrite_skip]}" "${BENCH_MEDIAN[count_plus_count]}")x."

# 3. Time under the parent lock.
ov_flip() {  # TABLE: prints ms from lock grant to return
    local t=$1 dir pid_a rc_a rc_b
    dir=$(mktemp -d /tmp/pg_idempotent-bench.XXXXXX)
    bench_psql >/dev/null <<SQL
DROP TABLE IF EXISTS ${t}_stage;
CREATE TABLE ${t}_stage (LIKE $t);
UPDATE ov_rev SET n = n + 1;
INSERT INTO ${t}_stage $(ov_query "$t");
VACUUM ANALYZE ${t}_stage;
SQL
    timeout 300 psql -X -q -At -v ON_ERROR_STOP=1 >"$dir/a.out" 2>"$dir/a.err" <<SQL &
BEGIN;
LOCK TABLE $t IN ACCESS SHARE MODE;
\! touch $dir/locked
SELECT bench_.await_lock_waiter('$t', 300);
SELECT 'T0 ' || clock_timestamp() \; COMMIT;
SQL
    pid_a=$!
    while [ ! -e "$dir/locked" ]; do kill -0 "$pid_a" 2>/dev/null || break; sleep 0.01; done
    timeout 300 psql -X -q -At -v ON_ERROR_STOP=1 >"$dir/b.out" 2>"$dir/b.err" <<SQL
BEGIN;
SELECT idem.swap_partition('${t}_0707', '${t}_stage') \; SELECT 'T1 ' || clock_timestamp();
COMMIT;
SQL
    rc_b=$?
    [ "$rc_b" -eq 0 ] || kill "$pid_a" 2>/dev/null
    rc_a=0; wait "$pid_a" || rc_a=$?
    if [ "$rc_a" -ne 0 ] || [ "$rc_b" -ne 0 ]; then
        cat "$dir/a.err" "$dir/b.err" >&2; rm -rf "$dir"; return 1
    fi
    local t0 t1
    t0=$(sed -n 's/^T0 //p' "$dir/a.out"); t1=$(sed -n 's/^T1 //p' "$dir/b.out")
    rm -rf "$dir"
    bench_psql -c "SELECT round((extract(epoch FROM '$t1'::timestamptz - '$t0'::timestamptz) * 1000)::numeric, 2)"
}
ov_flip_median() {  # TABLE
    local i out=()
    for ((i = 0; i < ov_flip_rounds; i++)); do out+=("$(ov_flip "$1")"); done
    printf '%s\n' "${out[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
say "lock-to-return: 10k and $(ov_n "$ov_rows") rows, with and without a DEFAULT partition"
ov_setup ovs 10000 no
ov_setup ovd "$ov_rows" yes
ov_setup ovsd 10000 yes
f_small=$(ov_flip_median ovs)
f_big=$(ov_flip_median ov)
f_small_d=$(ov_flip_median ovsd)
f_big_d=$(ov_flip_median ovd)
report ""
report "### swap_partition: from the parent lock being granted to the function returning (median of $ov_flip_rounds)"
report ""
report "| partition | no DEFAULT partition | with a DEFAULT partition (10% of the rows; ATTACH scans it) |"
report "|---|---:|---:|"
report "| 10,000 rows | $f_small ms | $f_small_d ms |"
report "| $(ov_n "$ov_rows") rows | $f_big ms | $f_big_d ms |"
bench_goal_begin
bench_goal "lock to return, $(ov_n "$ov_rows") rows (ms)" "$f_big" "<=" 50
bench_goal "lock to return, $(ov_n "$ov_rows") vs 10,000 rows" "$(bench_ratio "$f_big" "$f_small")" "<=" 2

BENCH_ROUNDS=$ov_saved_rounds
bench_psql >/dev/null <<'SQL'
ALTER SYSTEM RESET autovacuum;
SELECT pg_reload_conf();
SQL
