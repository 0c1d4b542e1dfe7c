# Sourced by bench/run.sh (bench/lib.sh loaded, PGDATABASE has the extension).
#
# idem.snapshot against the statements dbt runs for a Postgres snapshot
# (dbt-adapters: the staging query of snapshot_staging_table, then
# postgres__snapshot_merge_sql's UPDATE closing versions and INSERT of new
# ones, in one transaction), at the largest size of BENCH_SIZES (N, 1M by
# default): N keys of 5 columns (int, text, numeric, timestamptz, text),
# the check strategy on all of them. Three cases (issue 28):
#   1. replay: the history holds one version of every key, the source is
#      unchanged (goal: <= 1.10x);
#   2. 10% changed: one key in ten has a new value in one column (goal:
#      <= 1.15x);
#   3. first load into an empty history (goal: <= 1.15x). dbt's first run
#      is a CREATE TABLE AS; here both write into a table that exists, with
#      its index, as every later run does (INSERT ... SELECT of dbt's
#      first-run query).
# Both histories carry the partial unique index (key) WHERE valid_to IS
# NULL that idem.snapshot requires (dbt creates none; with it both pay the
# same index upkeep). Before each timed statement (untimed): the history
# put back to its one version per key (cases 1, 2) or emptied (case 3),
# VACUUM, CHECKPOINT.
#
# BENCH_SNAPSHOT_ROUNDS (default 5) timed rounds.

snapshot_rounds=${BENCH_SNAPSHOT_ROUNDS:-5}
snapshot_saved_rounds=$BENCH_ROUNDS
BENCH_ROUNDS=$snapshot_rounds
snapshot_n=$BENCH_SIZE_MAX
snapshot_rows=$(bench_rows "$snapshot_n")

bench_psql >/dev/null <<'SQL'
ALTER SYSTEM SET autovacuum = off;
SELECT pg_reload_conf();
SQL

snap_cols="g AS id, (g % 1000)::int AS c1, 'name ' || g AS c2, (g % 10000) / 100.0 AS c3,
           timestamptz '2026-01-01 00:00+00' + g * interval '1 second' AS c4, (ARRAY['a','b','c'])[1 + g % 3] AS c5"

say "snapshot: creating and loading the tables ($snapshot_rows keys)"
bench_psql <<SQL
CREATE TABLE sn_src (id bigint PRIMARY KEY, c1 int, c2 text, c3 numeric(12,2), c4 timestamptz, c5 text)
  WITH (autovacuum_enabled = off);
INSERT INTO sn_src SELECT $snap_cols FROM generate_series(1::bigint, $snapshot_n) g;
CREATE TABLE sn_src10 (LIKE sn_src INCLUDING ALL) WITH (autovacuum_enabled = off);
INSERT INTO sn_src10 SELECT * FROM sn_src;
UPDATE sn_src10 SET c1 = c1 + 1 WHERE id % 10 = 0;
VACUUM ANALYZE sn_src;
VACUUM ANALYZE sn_src10;

-- idem's history and dbt's (its four dbt_ columns), each with one version
-- per key from 2026-01-01.
CREATE TABLE sn_idem (id bigint NOT NULL, c1 int, c2 text, c3 numeric(12,2), c4 timestamptz, c5 text,
                      valid_from timestamptz NOT NULL, valid_to timestamptz) WITH (autovacuum_enabled = off);
SELECT idem.snapshot_prepare('sn_idem', '{id}');
CREATE TABLE sn_dbt (id bigint, c1 int, c2 text, c3 numeric(12,2), c4 timestamptz, c5 text,
                     dbt_scd_id text, dbt_updated_at timestamptz, dbt_valid_from timestamptz, dbt_valid_to timestamptz)
  WITH (autovacuum_enabled = off);
CREATE UNIQUE INDEX ON sn_dbt (id) WHERE dbt_valid_to IS NULL;

-- dbt's later runs (check strategy, check_cols all), as one function: the
-- staging table, the UPDATE, the INSERT.
CREATE FUNCTION dbt_snapshot(src regclass) RETURNS void LANGUAGE plpgsql AS \$f\$
DECLARE
  changed text := '';
  c text;
BEGIN
  FOREACH c IN ARRAY ARRAY['c1', 'c2', 'c3', 'c4', 'c5'] LOOP
    changed := changed || CASE WHEN changed = '' THEN '' ELSE ' or ' END
      || format('snapshotted_data.%1\$I != source_data.%1\$I or ((snapshotted_data.%1\$I is null) and not (source_data.%1\$I is null))'
                || ' or ((not snapshotted_data.%1\$I is null) and (source_data.%1\$I is null))', c);
  END LOOP;
  EXECUTE format(\$q\$
    create temporary table sn_dbt__dbt_tmp as
    with snapshot_query as (select * from %s),
    snapshotted_data as (select *, id as dbt_unique_key from sn_dbt where dbt_valid_to is null),
    insertions_source_data as (
      select *, id as dbt_unique_key, now() as dbt_updated_at, now() as dbt_valid_from,
             null::timestamptz as dbt_valid_to,
             md5(coalesce(cast(id as varchar), '') || '|' || coalesce(cast(now() as varchar), '')) as dbt_scd_id
        from snapshot_query),
    updates_source_data as (
      select *, id as dbt_unique_key, now() as dbt_updated_at, now() as dbt_valid_from, now() as dbt_valid_to
        from snapshot_query),
    insertions as (
      select 'insert' as dbt_change_type, source_data.* from insertions_source_data as source_data
        left outer join snapshotted_data on snapshotted_data.dbt_unique_key = source_data.dbt_unique_key
       where snapshotted_data.dbt_unique_key is null
          or (snapshotted_data.dbt_unique_key is not null and (%s))),
    updates as (
      select 'update' as dbt_change_type, source_data.*, snapshotted_data.dbt_scd_id
        from updates_source_data as source_data
        join snapshotted_data on snapshotted_data.dbt_unique_key = source_data.dbt_unique_key
       where (%s))
    select * from insertions union all select * from updates
  \$q\$, src, changed, changed);
  update sn_dbt set dbt_valid_to = DBT_INTERNAL_SOURCE.dbt_valid_to
    from sn_dbt__dbt_tmp as DBT_INTERNAL_SOURCE
   where DBT_INTERNAL_SOURCE.dbt_scd_id::text = sn_dbt.dbt_scd_id::text
     and DBT_INTERNAL_SOURCE.dbt_change_type::text in ('update'::text, 'delete'::text)
     and sn_dbt.dbt_valid_to is null;
  insert into sn_dbt (id, c1, c2, c3, c4, c5, dbt_updated_at, dbt_valid_from, dbt_valid_to, dbt_scd_id)
  select DBT_INTERNAL_SOURCE.id, DBT_INTERNAL_SOURCE.c1, DBT_INTERNAL_SOURCE.c2, DBT_INTERNAL_SOURCE.c3,
         DBT_INTERNAL_SOURCE.c4, DBT_INTERNAL_SOURCE.c5, DBT_INTERNAL_SOURCE.dbt_updated_at,
         DBT_INTERNAL_SOURCE.dbt_valid_from, DBT_INTERNAL_SOURCE.dbt_valid_to, DBT_INTERNAL_SOURCE.dbt_scd_id
    from sn_dbt__dbt_tmp as DBT_INTERNAL_SOURCE
   where DBT_INTERNAL_SOURCE.dbt_change_type::text = 'insert'::text;
  drop table sn_dbt__dbt_tmp;
END
\$f\$;

-- dbt's first run: its query, into the table.
CREATE FUNCTION dbt_first_load(at timestamptz) RETURNS void LANGUAGE sql AS \$f\$
  insert into sn_dbt (id, c1, c2, c3, c4, c5, dbt_scd_id, dbt_updated_at, dbt_valid_from, dbt_valid_to)
  select *, md5(coalesce(cast(id as varchar), '') || '|' || coalesce(cast(at as varchar), '')) as dbt_scd_id,
         at as dbt_updated_at, at as dbt_valid_from, null::timestamptz as dbt_valid_to
    from (select * from sn_src) sbq;
\$f\$;

SELECT * FROM idem.snapshot('sn_idem', 'sn_src', '{id}', as_of => '2026-01-01 00:00+00');
SELECT dbt_first_load('2026-01-01 00:00+00');
VACUUM ANALYZE sn_idem;
VACUUM ANALYZE sn_dbt;
SQL

# Back to one version per key from 2026-01-01 (what a changed run added
# deleted, what it closed reopened).
sn_back_idem="DELETE FROM sn_idem WHERE valid_from > '2026-01-01 00:00+00'; UPDATE sn_idem SET valid_to = NULL WHERE valid_to IS NOT NULL; VACUUM sn_idem; CHECKPOINT;"
sn_back_dbt="DELETE FROM sn_dbt WHERE dbt_valid_from > '2026-01-01 00:00+00'; UPDATE sn_dbt SET dbt_valid_to = NULL WHERE dbt_valid_to IS NOT NULL; VACUUM sn_dbt; CHECKPOINT;"

report ""
report "$snapshot_rows keys of 5 columns, the check strategy on all of them, against dbt's statements for a Postgres snapshot (a staging table from its query, an UPDATE closing versions, an INSERT of new ones; see bench/snapshot.sh). Both histories carry the partial unique index on the key for current versions."

# 1. Replay.
report ""
report "### 1. Replay: nothing changed, $snapshot_rows keys"
BENCH_RESET=([dbt]="$sn_back_dbt" [snapshot]="$sn_back_idem")
bench_compare "snapshot_replay_$snapshot_n" \
    dbt "SELECT dbt_snapshot('sn_src')" \
    snapshot "SELECT * FROM idem.snapshot('sn_idem', 'sn_src', '{id}')"
BENCH_RESET=()
replay_dbt=${BENCH_MEDIAN[dbt]}
replay_idem=${BENCH_MEDIAN[snapshot]}
bench_tsv snapshot "replay, nothing changed" "$snapshot_n" "$replay_idem" "$replay_dbt" "idem.snapshot" "dbt's snapshot SQL"

# 2. 10% changed.
report ""
report "### 2. 10% of the keys changed, $snapshot_rows keys"
BENCH_RESET=([dbt]="$sn_back_dbt" [snapshot]="$sn_back_idem")
bench_compare "snapshot_10pct_$snapshot_n" \
    dbt "SELECT dbt_snapshot('sn_src10')" \
    snapshot "SELECT * FROM idem.snapshot('sn_idem', 'sn_src10', '{id}')"
BENCH_RESET=()
pct_dbt=${BENCH_MEDIAN[dbt]}
pct_idem=${BENCH_MEDIAN[snapshot]}
bench_tsv snapshot "10% changed" "$snapshot_n" "$pct_idem" "$pct_dbt" "idem.snapshot" "dbt's snapshot SQL"
report ""
report "- counts of one more run: \`$(bench_psql -F ' ' <<SQL
$sn_back_idem
SELECT * FROM idem.snapshot('sn_idem', 'sn_src10', '{id}');
SQL
)\` (inserted, changed, deleted, unchanged, stale); versions: $(bench_psql -c "SELECT count(*) FROM sn_idem"); dbt's, after its run: $(bench_psql >/dev/null <<SQL
$sn_back_dbt
SELECT dbt_snapshot('sn_src10');
SQL
bench_psql -c "SELECT count(*) FROM sn_dbt")"

# 3. First load.
report ""
report "### 3. First load into an empty history, $snapshot_rows keys"
BENCH_RESET=([dbt]="TRUNCATE sn_dbt; CHECKPOINT;" [snapshot]="TRUNCATE sn_idem; CHECKPOINT;")
bench_compare "snapshot_first_$snapshot_n" \
    dbt "SELECT dbt_first_load(now())" \
    snapshot "SELECT * FROM idem.snapshot('sn_idem', 'sn_src', '{id}')"
BENCH_RESET=()
first_dbt=${BENCH_MEDIAN[dbt]}
first_idem=${BENCH_MEDIAN[snapshot]}
bench_tsv snapshot "first load" "$snapshot_n" "$first_idem" "$first_dbt" "idem.snapshot" "dbt's first run (INSERT ... SELECT)"

# Memory: a fresh backend per measurement, a history of each size of
# BENCH_SIZES and of ten times the largest (BENCH_SNAPSHOT_MEMORY_EXTRA,
# 10M by default, 0 for none: memory only, no timing), a replay and a run
# with 10% changed. The statement's hashes, sorts and materialized steps
# are bounded by work_mem and spill beyond it, so its private memory must
# not grow with the table beyond those bounds (the goal below).
say "snapshot: backend memory at every size"
report ""
report "### Backend memory"
report ""
report "| run | keys | RssAnon before | peak RssAnon while running | growth |"
report "|---|---:|---:|---:|---:|"
declare -A snap_growth=()
snap_memory_sizes=("${BENCH_SIZE_LIST[@]}")
snap_memory_extra=${BENCH_SNAPSHOT_MEMORY_EXTRA:-$((10 * BENCH_SIZE_MAX))}
[ "$snap_memory_extra" -gt "$BENCH_SIZE_MAX" ] && snap_memory_sizes+=("$snap_memory_extra")
snap_memory_max=${snap_memory_sizes[-1]}
for n in "${snap_memory_sizes[@]}"; do
    bench_psql >/dev/null <<SQL
SET client_min_messages = warning;
DROP TABLE IF EXISTS sn_m_src, sn_m_hist;
CREATE TABLE sn_m_src (LIKE sn_src INCLUDING ALL) WITH (autovacuum_enabled = off);
INSERT INTO sn_m_src SELECT $snap_cols FROM generate_series(1::bigint, $n) g;
CREATE TABLE sn_m_hist (LIKE sn_idem) WITH (autovacuum_enabled = off);
SELECT idem.snapshot_prepare('sn_m_hist', '{id}');
SELECT * FROM idem.snapshot('sn_m_hist', 'sn_m_src', '{id}', as_of => '2026-01-01 00:00+00');
VACUUM ANALYZE sn_m_src;
VACUUM ANALYZE sn_m_hist;
SQL
    for run in replay changed; do
        if [ "$run" = changed ]; then
            bench_psql >/dev/null <<'SQL'
UPDATE sn_m_src SET c1 = c1 + 1 WHERE id % 10 = 0;
VACUUM ANALYZE sn_m_src;
SQL
        fi
        read -r base peak _ < <(bench_peak_memory "SELECT * FROM idem.snapshot('sn_m_hist', 'sn_m_src', '{id}')")
        snap_growth[$run.$n]=$((peak - base))
        report "| $run | $(bench_rows "$n") | $base kB | $peak kB | $((peak - base)) kB |"
    done
done
bench_psql >/dev/null -c "DROP TABLE sn_m_src, sn_m_hist"
report ""
report "RssAnon (private memory) sampled every ~5 ms from /proc/PID/status of the backend (bench_peak_memory); work_mem = $(bench_psql -c 'SHOW work_mem')."

report ""
report "### Goals, $snapshot_rows keys"
bench_goal_begin
bench_goal "1. replay: idem.snapshot / dbt's snapshot SQL" "$(bench_ratio "$replay_idem" "$replay_dbt")" "<=" 1.10 x
bench_goal "2. 10% changed: idem.snapshot / dbt's snapshot SQL" "$(bench_ratio "$pct_idem" "$pct_dbt")" "<=" 1.15 x
bench_goal "3. first load: idem.snapshot / dbt's first run" "$(bench_ratio "$first_idem" "$first_dbt")" "<=" 1.15 x
# Bounded: the statement's private memory is that of its work_mem-bounded
# steps (hash joins up to work_mem x hash_mem_multiplier each, sorts and
# materialized steps up to work_mem, spilling beyond), not of the table: at
# most four hash tables' worth (and 2 MB of page-granular noise) at every
# size. Measured growth that stops growing between the two largest sizes is
# the saturation of those bounds.
snap_bound_kb=$(bench_work_mem_bound_kb)
for run in replay changed; do
    bench_goal "memory, $run: private memory growth at $(bench_rows "$snap_memory_max") keys (4 x work_mem x hash_mem_multiplier + 2 MB)" \
        "${snap_growth[$run.$snap_memory_max]}" "<=" "$snap_bound_kb" " kB"
done

bench_psql >/dev/null <<'SQL'
DROP TABLE sn_src, sn_src10, sn_idem, sn_dbt;
DROP FUNCTION dbt_snapshot(regclass), dbt_first_load(timestamptz);
ALTER SYSTEM RESET autovacuum;
SELECT pg_reload_conf();
SQL
BENCH_ROUNDS=$snapshot_saved_rounds
