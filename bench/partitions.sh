# Sourced by bench/run.sh (bench/lib.sh loaded, PGDATABASE has the extension).
#
# Flat in partition count (issue 45): the same unit of one day, 20,000 rows
# (BENCH_PARTITION_UNIT), in a table of 1,000 daily partitions against one of
# 10, each other partition holding 100 rows. Every call and its hand-written
# counterpart runs on both tables, interleaved round-robin in one run; the
# goal is ours on 1,000 partitions within 1.2x of ours on 10. Beside the
# times, for one more call of each (rolled back; the second of two in one
# session, so that the caches are warm as in the timed rounds): the relations locked
# outside the unit (partitions and their indexes: a swap, DETACH or DROP of
# another day would wait on each), and, where pg_stat_statements is loaded
# (bench/run.sh preloads it when the installation has it), the planning
# time of every statement the call ran, its own included.
#
# The calls, each doing the same work in every round (a revision number
# bumped untimed before each call gives new content):
#   - overwrite_partition rewrite and swap of the day, new content;
#   - overwrite_partition identical rerun (its record proves it unchanged);
#   - merge_query, 10% of the day's rows changed;
#   - append_query, 20,000 events of the day of which 20% new, into a log
#     with a primary key (day, id);
#   - snapshot_query, 10% of the day's keys changed, into a history
#     partitioned by day;
# and by hand: DELETE + INSERT of the day, a swap (a new table of the day,
# DETACH, DROP, ATTACH), INSERT ... ON CONFLICT DO UPDATE and MERGE (10%
# changed).

pt_unit=${BENCH_PARTITION_UNIT:-$(( BENCH_SIZE_MAX < 20000 ? BENCH_SIZE_MAX : 20000 ))}
pt_rounds=${BENCH_PARTITION_ROUNDS:-$(( BENCH_ROUNDS < 5 ? BENCH_ROUNDS : 5 ))}
pt_sizes=(10 1000)
pt_day="2024-01-06"

say "loading partitioned tables of 10 and 1,000 days, a unit of $(bench_rows "$pt_unit") rows"
{
    echo "CREATE TABLE pt_rev (n int NOT NULL); INSERT INTO pt_rev VALUES (0);"
    echo "CREATE TABLE pt_src AS SELECT '$pt_day'::date AS day, g AS id, md5(g::text) AS v FROM generate_series(1, $pt_unit) g;"
    for n in "${pt_sizes[@]}"; do
        for t in pt${n} pt${n}_log; do
            echo "CREATE TABLE $t (day date NOT NULL, id int NOT NULL, v text, PRIMARY KEY (day, id)) PARTITION BY RANGE (day);"
        done
        echo "CREATE TABLE pt${n}_hist (day date NOT NULL, id int NOT NULL, v text, valid_from timestamptz, valid_to timestamptz) PARTITION BY RANGE (day);"
        echo "SELECT format('CREATE TABLE %s_%s PARTITION OF %s FOR VALUES FROM (%L) TO (%L)', t, i, t,
                date '2024-01-01' + i, date '2024-01-01' + i + 1)
              FROM unnest('{pt${n},pt${n}_log,pt${n}_hist}'::text[]) t, generate_series(0, $((n - 1))) i \\gexec"
        echo "INSERT INTO pt${n} SELECT date '2024-01-01' + i, g, md5(g::text) FROM generate_series(0, $((n - 1))) i, generate_series(1, 100) g WHERE date '2024-01-01' + i <> '$pt_day';"
        echo "INSERT INTO pt${n}_log SELECT * FROM pt${n};"
        echo "INSERT INTO pt${n} SELECT * FROM pt_src; INSERT INTO pt${n}_log SELECT * FROM pt_src;"
        echo "SELECT idem.snapshot_prepare('pt${n}_hist', ARRAY['day', 'id'], valid_to => 'valid_to');"
        echo "SELECT FROM idem.snapshot_query('pt${n}_hist', 'SELECT * FROM pt${n}', ARRAY['day', 'id']);"
        echo "VACUUM ANALYZE pt${n}, pt${n}_log, pt${n}_hist;"
    done
    echo "VACUUM ANALYZE pt_src;"
} | bench_psql >/dev/null

have_pgss=no
if bench_psql -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null 2>&1 &&
    [ "$(bench_psql -c "SELECT count(*) FROM pg_settings WHERE name = 'pg_stat_statements.track'")" = 1 ]; then
    have_pgss=yes
fi

# bench_.pt_probe(sql, parent, unit): runs sql once and rolls it back;
# returns "locks|plan_ms": the partitions of parent and their indexes,
# other than the unit's partition and its indexes, that it locked, and the planning
# time of every statement it ran (-1 without pg_stat_statements).
bench_psql >/dev/null <<SQL
CREATE FUNCTION bench_.pt_probe(q text, parent regclass, unit text) RETURNS text
LANGUAGE plpgsql AS \$f\$
DECLARE
    locks int;
    plan_ms float8 := -1;
BEGIN
    IF '$have_pgss' = 'yes' THEN
        PERFORM pg_stat_statements_reset();
    END IF;
    BEGIN
        EXECUTE q;
        -- The unit by name after the call: a swap replaced its partition.
        -- pg_inherits, not pg_partition_tree (which locks every partition).
        WITH RECURSIVE tree(relid) AS (SELECT h.inhrelid FROM pg_inherits h WHERE h.inhparent = parent
                                       UNION ALL SELECT h.inhrelid FROM pg_inherits h JOIN tree ON h.inhparent = tree.relid),
             rels AS (SELECT relid FROM tree UNION ALL
                      SELECT i.indexrelid FROM pg_index i JOIN tree ON tree.relid = i.indrelid),
             unit_rels AS (SELECT to_regclass(unit)::oid AS relid UNION ALL
                           SELECT i.indexrelid FROM pg_index i WHERE i.indrelid = to_regclass(unit))
        SELECT count(DISTINCT l.relation) INTO locks
          FROM pg_locks l JOIN rels ON rels.relid = l.relation
         WHERE l.pid = pg_backend_pid() AND l.locktype = 'relation'
           AND l.relation NOT IN (SELECT relid FROM unit_rels);
        RAISE EXCEPTION USING ERRCODE = 'P0099', MESSAGE = 'probe rolled back';
    EXCEPTION WHEN SQLSTATE 'P0099' THEN
        NULL;
    END;
    IF '$have_pgss' = 'yes' THEN
        SELECT coalesce(sum(total_plan_time), 0) INTO plan_ms FROM pg_stat_statements
         WHERE query NOT LIKE '%pg_stat_statements%' AND query NOT LIKE '%bench_.pt_probe%';
    END IF;
    RETURN locks || '|' || round(plan_ms::numeric, 2);
END
\$f\$;
SQL
pt_session_setup=""
[ "$have_pgss" = yes ] &&
    pt_session_setup="SET pg_stat_statements.track = 'all'; SET pg_stat_statements.track_planning = on;"

report ""
report "Tables \`pt10\` and \`pt1000\`: (day, id, v), primary key (day, id), partitioned by range on day, one partition a day, 100 rows in every day but $pt_day, whose partition (the unit, \`_5\`) holds $(bench_rows "$pt_unit") rows; \`pt<n>_log\` the same for append, \`pt<n>_hist\` a history of \`pt<n>\` for snapshot. Medians of $pt_rounds rounds after a warm-up; a revision number bumped before each call (untimed) gives the calls that write new content. Locks: relations of the table other than the parent, the unit's partition and its indexes, locked by one more call (rolled back). Planning: the summed planning time of every statement of that call$( [ "$have_pgss" = yes ] || echo " (not measured: no pg_stat_statements in this installation)")."

pt_rev="(SELECT n FROM pt_rev)"
declare -A pt_sql=(
    [rewrite]="SELECT * FROM idem.overwrite_partition('%T', '$pt_day'::date, \$q\$SELECT day, id, v || $pt_rev FROM pt_src\$q\$)"
    [swap]="SELECT * FROM idem.overwrite_partition('%T', '$pt_day'::date, \$q\$SELECT day, id, v || $pt_rev FROM pt_src\$q\$, mode => 'swap')"
    [rerun]="SELECT * FROM idem.overwrite_partition('%T', '$pt_day'::date, 'SELECT day, id, v FROM pt_src')"
    [merge]="SELECT * FROM idem.merge_query('%T', \$q\$SELECT day, id, CASE WHEN id % 10 = 0 THEN v || $pt_rev ELSE v END AS v FROM pt_src\$q\$, ARRAY['day', 'id'])"
    [append]="SELECT * FROM idem.append_query('%T_log', \$q\$SELECT day, CASE WHEN id % 5 = 0 THEN id + 1000000 * $pt_rev ELSE id END AS id, v FROM pt_src\$q\$, ARRAY['day', 'id'])"
    [snapshot]="SELECT * FROM idem.snapshot_query('%T_hist', \$q\$SELECT day, id, CASE WHEN id % 10 = 0 THEN v || $pt_rev ELSE v END AS v FROM pt_src\$q\$, ARRAY['day', 'id'])"
    [hand_rewrite]="SELECT bench_.pt_rewrite('%T')"
    [hand_swap]="SELECT bench_.pt_swap('%T')"
    [hand_upsert]="INSERT INTO %T SELECT day, id, CASE WHEN id % 10 = 0 THEN v || $pt_rev ELSE v END FROM pt_src ON CONFLICT (day, id) DO UPDATE SET v = excluded.v WHERE %T.v IS DISTINCT FROM excluded.v"
    [hand_merge]="MERGE INTO %T t USING (SELECT day, id, CASE WHEN id % 10 = 0 THEN v || $pt_rev ELSE v END AS v FROM pt_src) s ON t.day = s.day AND t.id = s.id WHEN MATCHED AND t.v IS DISTINCT FROM s.v THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT VALUES (s.day, s.id, s.v)"
)
bench_psql >/dev/null <<SQL
CREATE FUNCTION bench_.pt_rewrite(t regclass) RETURNS void LANGUAGE plpgsql AS \$f\$
BEGIN
    EXECUTE format('DELETE FROM %s WHERE day = %L', t, '$pt_day');
    EXECUTE format('INSERT INTO %s SELECT day, id, v || (SELECT n FROM pt_rev) FROM pt_src', t);
END
\$f\$;
-- A swap by hand: the day's rows built into a new table with the bound as
-- a CHECK (so that ATTACH skips its scan) and the primary key, then DETACH,
-- DROP, RENAME and ATTACH: the DDL every swap runs, whose own cost grows
-- with the partition count.
CREATE FUNCTION bench_.pt_swap(t regclass) RETURNS void LANGUAGE plpgsql AS \$f\$
DECLARE
    day_table text := t::text || '_5';
BEGIN
    EXECUTE format('CREATE TABLE %I (LIKE %s)', day_table || '_new', t);
    EXECUTE format('INSERT INTO %I SELECT day, id, v || (SELECT n FROM pt_rev) FROM pt_src', day_table || '_new');
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT bound CHECK (day IS NOT NULL AND day >= %L AND day < %L), ADD PRIMARY KEY (day, id)',
                   day_table || '_new', '$pt_day', date '$pt_day' + 1);
    EXECUTE format('ALTER TABLE %s DETACH PARTITION %I', t, day_table);
    EXECUTE format('DROP TABLE %I', day_table);
    EXECUTE format('ALTER TABLE %I RENAME TO %I', day_table || '_new', day_table);
    EXECUTE format('ALTER TABLE %s ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', t, day_table, '$pt_day', date '$pt_day' + 1);
    EXECUTE format('ALTER TABLE %I DROP CONSTRAINT bound', day_table);
END
\$f\$;
SQL
declare -A pt_labels
pt_labels=(
    [rewrite]="overwrite_partition, rewrite"
    [swap]="overwrite_partition, swap"
    [rerun]="overwrite_partition, identical rerun"
    [merge]="merge_query, 10% of the unit changed"
    [append]="append_query, 20% of the events new"
    [snapshot]="snapshot_query, 10% of the keys changed"
    [hand_rewrite]="by hand: DELETE + INSERT of the day"
    [hand_swap]="by hand: a new table of the day, DETACH, DROP, ATTACH"
    [hand_upsert]="by hand: INSERT ... ON CONFLICT DO UPDATE, 10% changed"
    [hand_merge]="by hand: MERGE, 10% changed"
)
pt_order=(rewrite swap rerun merge append snapshot hand_rewrite hand_swap hand_upsert hand_merge)
pt_ours=(rewrite swap rerun merge append snapshot)

# The unit's partition of a call's table (the log's or the history's).
pt_unit_of() {
    local call=$1 n=$2
    case $call in
        append) echo "pt${n}_log_5" ;;
        snapshot) echo "pt${n}_hist_5" ;;
        *) echo "pt${n}_5" ;;
    esac
}
pt_parent_of() {
    local call=$1 n=$2
    case $call in
        append) echo "pt${n}_log" ;;
        snapshot) echo "pt${n}_hist" ;;
        *) echo "pt${n}" ;;
    esac
}

declare -A pt_ms=() pt_locks=() pt_plan=()
BENCH_ROUNDS_SAVED=$BENCH_ROUNDS
BENCH_ROUNDS=$pt_rounds
for call in "${pt_order[@]}"; do
    sql=${pt_sql[$call]}
    args=()
    for n in "${pt_sizes[@]}"; do
        args+=("p$n" "${sql//%T/pt$n}")
        BENCH_RESET[p$n]="UPDATE pt_rev SET n = n + 1; $pt_session_setup"
    done
    report ""
    report "### ${pt_labels[$call]}"
    bench_compare "partitions_$call" "${args[@]}"
    BENCH_RESET=()
    for n in "${pt_sizes[@]}"; do
        pt_ms[$call,$n]=${BENCH_MEDIAN[p$n]}
        q=${sql//%T/pt$n}
        probe=$(bench_psql <<SQL | tail -1
$pt_session_setup
UPDATE pt_rev SET n = n + 1;
SELECT bench_.pt_probe(\$probe\$$q\$probe\$, '$(pt_parent_of "$call" "$n")', '$(pt_unit_of "$call" "$n")');
SELECT bench_.pt_probe(\$probe\$$q\$probe\$, '$(pt_parent_of "$call" "$n")', '$(pt_unit_of "$call" "$n")');
SQL
)
        pt_locks[$call,$n]=${probe%%|*}
        pt_plan[$call,$n]=${probe##*|}
    done
done
BENCH_ROUNDS=$BENCH_ROUNDS_SAVED

report ""
report "### Side by side"
report ""
report "| call | 10 partitions: ms | 1,000 partitions: ms | 1,000 / 10 | relations locked outside the unit (10 / 1,000) | planning ms (10 / 1,000) |"
report "|---|---:|---:|---:|---:|---:|"
for call in "${pt_order[@]}"; do
    plan="${pt_plan[$call,10]} / ${pt_plan[$call,1000]}"
    [ "$have_pgss" = yes ] || plan="n/a"
    report "| ${pt_labels[$call]} | $(bench_ms "${pt_ms[$call,10]}") | $(bench_ms "${pt_ms[$call,1000]}") | $(bench_ratio "${pt_ms[$call,1000]}" "${pt_ms[$call,10]}")x | ${pt_locks[$call,10]} / ${pt_locks[$call,1000]} | $plan |"
done

bench_goal_begin
for call in "${pt_ours[@]}"; do
    bench_goal "${pt_labels[$call]}: 1,000 / 10 partitions" "$(bench_ratio "${pt_ms[$call,1000]}" "${pt_ms[$call,10]}")" "<=" 1.2 x
    bench_goal "${pt_labels[$call]}: relations locked outside the unit, 1,000 partitions" "${pt_locks[$call,1000]}" "<=" 0
done
