# Sourced by bench/run.sh (bench/lib.sh loaded, PGDATABASE has the extension).
#
# What the run history costs a no-op rerun, the run it matters most for: a
# rerun that finds nothing to do writes nothing with idem.history = changes,
# and one history row (an xid, the row, a commit record that must be
# flushed) with the default idem.history = all.
#
# pgbench, 1 client, one call per transaction (so each run pays its own
# commit, as a scheduler's run does), for
#   - merge: a no-op rerun of a 1,000-row batch into a 1,000-row table;
#   - overwrite_partition: a skipped rerun of a 1,000-row partition;
# each with idem.history = all and = changes (set for the session through
# PGOPTIONS). Runs alternate between the two settings, the start rotating
# every round; medians of tps over BENCH_HISTORY_ROUNDS (default 5) rounds
# of BENCH_HISTORY_SECONDS (default 5) seconds. Also the WAL each call
# writes (pg_current_wal_lsn before and after a run, over its transactions).
# About a minute and a half on 2 cores.

hist_rounds=${BENCH_HISTORY_ROUNDS:-5}
hist_seconds=${BENCH_HISTORY_SECONDS:-5}
hist_pgbench=$PGBIN/pgbench
[ -x "$hist_pgbench" ] || hist_pgbench=$(command -v pgbench)
hist_dir=$(mktemp -d /tmp/pg_idempotent-bench-history.XXXXXX)

bench_psql >/dev/null <<'SQL'
CREATE TABLE hist_target (id int PRIMARY KEY, amount numeric, note text);
CREATE TABLE hist_batch (id int, amount numeric, note text);
INSERT INTO hist_batch SELECT g, g * 1.5, 'row ' || g FROM generate_series(1, 1000) g;
SELECT count(*) FROM idem.merge('hist_target', 'hist_batch');
CREATE TABLE hist_days (day date NOT NULL, id int, amount numeric) PARTITION BY RANGE (day);
CREATE TABLE hist_days_0707 PARTITION OF hist_days FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
INSERT INTO hist_days SELECT '2024-07-07', g, g * 1.5 FROM generate_series(1, 1000) g;
VACUUM ANALYZE hist_target, hist_batch, hist_days;
SQL

echo "SELECT * FROM idem.merge('hist_target', 'hist_batch');" >"$hist_dir/merge.sql"
echo "SELECT * FROM idem.overwrite_partition('hist_days', '2024-07-07'::date, 'SELECT ''2024-07-07''::date, g, g * 1.5 FROM generate_series(1, 1000) g');" >"$hist_dir/overwrite.sql"

# hist_run JOB SETTING: one pgbench run; sets HIST_TPS and HIST_WAL (bytes per
# transaction).
hist_run() {
    local job=$1 setting=$2 out lsn0 lsn1 xacts
    lsn0=$(bench_psql -c "SELECT pg_current_wal_lsn()")
    if ! out=$(PGOPTIONS="-c idem.history=$setting" "$hist_pgbench" -n -M prepared -c 1 -j 1 \
            -T "$hist_seconds" -f "$hist_dir/$job.sql" 2>&1); then
        echo "history: pgbench failed ($job $setting):" >&2; echo "$out" >&2; return 1
    fi
    lsn1=$(bench_psql -c "SELECT pg_current_wal_lsn()")
    HIST_TPS=$(awk '/^tps = .*without initial connection time/ { printf "%.1f", $3 }' <<<"$out")
    xacts=$(awk '/^number of transactions actually processed:/ { print $NF }' <<<"$out")
    HIST_WAL=$(bench_psql -c "SELECT round(pg_wal_lsn_diff('$lsn1', '$lsn0') / $xacts)")
}

report "What the run history costs a no-op rerun."
report ""
report "pgbench \`-n -M prepared -c 1 -T $hist_seconds\`, one call per transaction, $hist_rounds rounds alternating between \`idem.history = all\` (the default: the rerun records its row) and \`changes\` (a no-op rerun writes nothing). WAL per call: the server's WAL over the run (other sessions are idle) divided by its transactions."
report ""
report "| rerun (nothing to change) | setting | median tps | median WAL per call | tps all / changes |"
report "|---|---|---:|---:|---:|"
for job in merge overwrite; do
    declare -A hist_tps=([all]="" [changes]="") hist_wal=([all]="" [changes]="")
    for ((r = 0; r < hist_rounds; r++)); do
        order=(all changes)
        [ $((r % 2)) -eq 1 ] && order=(changes all)
        for setting in "${order[@]}"; do
            hist_run "$job" "$setting"
            hist_tps[$setting]+="$HIST_TPS "
            hist_wal[$setting]+="$HIST_WAL "
        done
    done
    median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
    tps_all=$(median <<<"${hist_tps[all]}")
    tps_changes=$(median <<<"${hist_tps[changes]}")
    wal_all=$(median <<<"${hist_wal[all]}")
    wal_changes=$(median <<<"${hist_wal[changes]}")
    ratio=$(bench_ratio "$tps_all" "$tps_changes")
    report "| $job, 1,000 rows | all | $tps_all | $wal_all B | ${ratio}x |"
    report "| $job, 1,000 rows | changes | $tps_changes | $wal_changes B | |"
    unset hist_tps hist_wal
done
report ""
report "A ratio below 1: recording the run costs that share of a no-op rerun's throughput (its commit must flush WAL; with \`changes\` the rerun has no xid and nothing to flush)."
rm -rf "$hist_dir"
