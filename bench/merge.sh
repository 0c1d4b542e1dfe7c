# Sourced by bench/run.sh (bench/lib.sh loaded, PGDATABASE has the extension).
#
# idem.merge on tables of 5 columns, at each size of BENCH_SIZES (10k, 100k,
# 1M rows by default), against what a user would hand-write, in three
# situations:
#   1. first load into an empty target, vs INSERT ... ON CONFLICT DO UPDATE;
#   2. replay of unchanged data, vs a duplicate-key check plus a MERGE that
#      skips unchanged rows (and the MERGE alone); plus rows rewritten and
#      WAL written, vs a naive INSERT ... ON CONFLICT DO UPDATE replay;
#   3. 10% of the rows changed, vs the same guarded MERGE.
# Each twice, for two kinds of source (the hand-written SQL reads the same
# source): first a source table with a primary key on the merge key, then
# the same table without any index, as real batches come (dbt's __dbt_tmp,
# a table filled by COPY, a view over raw data: issue 24).
# Every timed statement starts from the same state (BENCH_RESET, untimed).
# Per situation, idem.merge first runs once untimed under auto_explain
# (ANALYZE) and a statement timeout: the report shows its plan's time per
# CTE; a run that does not finish is reported, left out of the timings (its
# goal shows the timeout as a lower bound) and profiled scaled down instead.
# The profiles, the rows written and WAL, and the goals are reported at the
# largest size only; every size goes into latest.tsv.
#
# BENCH_MERGE_ROUNDS (default 5) sets the timed rounds here (a round is
# seconds long); BENCH_WARMUP applies as usual; BENCH_MERGE_TIMEOUT (default
# 60 s) limits each untimed idem.merge run; BENCH_MERGE_KINDS (default
# "pk nokey") the kinds of source. About 10 minutes on 2 cores at
# 1M rows (both kinds of source), a tenth of that more for 100k and 10k.

merge_rounds=${BENCH_MERGE_ROUNDS:-5}
merge_saved_rounds=$BENCH_ROUNDS
BENCH_ROUNDS=$merge_rounds

# No autovacuum while this runs: a worker would compete for the 2 cores with
# the timed statements, and its snapshot can keep VACUUM from marking pages
# all-visible. Restored at the end.
bench_psql >/dev/null <<'SQL'
ALTER SYSTEM SET autovacuum = off;
SELECT pg_reload_conf();
SQL

say "creating the tables"
bench_psql <<'SQL'
CREATE TABLE src (
    id bigint PRIMARY KEY,
    c1 int NOT NULL,
    c2 numeric(12,2) NOT NULL,
    c3 text NOT NULL,                -- 20 to 40 characters
    c4 timestamptz NOT NULL
) WITH (autovacuum_enabled = off);
-- orig: the pristine data, to restore targets (and src, for scenario 3).
CREATE TABLE orig (LIKE src INCLUDING ALL) WITH (autovacuum_enabled = off);
-- t: idem.merge's target; t_ioc: INSERT ... ON CONFLICT's (scenario 1).
CREATE TABLE t (LIKE src INCLUDING ALL) WITH (autovacuum_enabled = off);
CREATE TABLE t_ioc (LIKE src INCLUDING ALL) WITH (autovacuum_enabled = off);

-- What a user writes for idem.merge's guarantees: refuse duplicate source
-- keys (instead of MERGE's "cannot affect row a second time"), then insert
-- new keys and update only rows that differ.
CREATE FUNCTION merge_guarded() RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
    PERFORM FROM (SELECT id FROM src GROUP BY id HAVING count(*) > 1 LIMIT 1) d;
    IF FOUND THEN
        RAISE EXCEPTION 'duplicate keys in src';
    END IF;
    MERGE INTO t USING src s ON t.id = s.id
    WHEN MATCHED AND (t.c1, t.c2, t.c3, t.c4) IS DISTINCT FROM (s.c1, s.c2, s.c3, s.c4) THEN
        UPDATE SET c1 = s.c1, c2 = s.c2, c3 = s.c3, c4 = s.c4
    WHEN NOT MATCHED THEN
        INSERT (id, c1, c2, c3, c4) VALUES (s.id, s.c1, s.c2, s.c3, s.c4);
END
$f$;
-- The same MERGE without the duplicate check.
CREATE FUNCTION merge_bare() RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
    MERGE INTO t USING src s ON t.id = s.id
    WHEN MATCHED AND (t.c1, t.c2, t.c3, t.c4) IS DISTINCT FROM (s.c1, s.c2, s.c3, s.c4) THEN
        UPDATE SET c1 = s.c1, c2 = s.c2, c3 = s.c3, c4 = s.c4
    WHEN NOT MATCHED THEN
        INSERT (id, c1, c2, c3, c4) VALUES (s.id, s.c1, s.c2, s.c3, s.c4);
END
$f$;

-- write_probe(tbl, q): runs q under EXPLAIN (ANALYZE, WAL) inside the
-- caller's transaction (the caller rolls back). WAL bytes of the top plan
-- node (this backend's WAL, nested statements included), the WAL insert
-- position's advance as a cross-check, the rows of tbl q wrote a new version
-- of (xmin from this transaction or its subtransactions: all are >= its
-- top-level xid, taken first; nothing else writes meanwhile), and the rows
-- it only locked (xmax from this transaction on an old version).
CREATE FUNCTION write_probe(tbl regclass, q text,
    OUT wal_bytes bigint, OUT lsn_bytes bigint, OUT rewritten bigint, OUT locked bigint)
LANGUAGE plpgsql AS $f$
DECLARE
    j json;
    l0 pg_lsn;
    x bigint := (pg_current_xact_id()::text::numeric % 4294967296)::bigint;
BEGIN
    l0 := pg_current_wal_insert_lsn();
    EXECUTE 'EXPLAIN (ANALYZE, WAL, FORMAT JSON) ' || q INTO j;
    lsn_bytes := pg_wal_lsn_diff(pg_current_wal_insert_lsn(), l0);
    wal_bytes := (j->0->'Plan'->>'WAL Bytes')::bigint;
    EXECUTE format('SELECT count(*) FILTER (WHERE xmin::text::bigint >= $1),
                           count(*) FILTER (WHERE xmin::text::bigint < $1 AND xmax::text::bigint >= $1)
                    FROM %s', tbl)
        INTO rewritten, locked USING x;
END
$f$;

-- merge_profile(plan): the time of an auto_explain JSON plan of idem.merge's
-- statement, per CTE. Every plan node's own time (its total minus its
-- children's) goes to the CTE whose subtree holds it; the CTE Scan that ran a
-- CTE (its longest scan) also ran that CTE's plan, which is subtracted (it
-- is in the CTE's own subtree), and filled the CTE's tuplestore, which is
-- charged to the CTE (to the reader when that scan was rescanned: then it is
-- mostly the rescans). The top-level InitPlans are the final SELECT's counts.
CREATE FUNCTION merge_profile(p jsonb)
RETURNS TABLE(step text, node text, est_rows numeric, nrows numeric, max_loops numeric, ms numeric, temp_mb numeric)
LANGUAGE sql AS $f$
WITH RECURSIVE tree(id, top, n) AS (
    SELECT ord::text, ord, c FROM jsonb_array_elements(p->'Plan'->'Plans') WITH ORDINALITY AS a(c, ord)
    UNION ALL
    SELECT t.id || '.' || k, t.top, ch FROM tree t, jsonb_array_elements(t.n->'Plans') WITH ORDINALITY AS b(ch, k)
), nodes AS (
    SELECT id, top, n->>'Node Type' AS type, n->>'CTE Name' AS scans,
           (n->>'Actual Loops')::numeric AS loops,
           (n->>'Actual Total Time')::numeric * (n->>'Actual Loops')::numeric AS incl,
           (n->>'Actual Total Time')::numeric * (n->>'Actual Loops')::numeric
             - coalesce((SELECT sum((ch->>'Actual Total Time')::numeric * (ch->>'Actual Loops')::numeric)
                         FROM jsonb_array_elements(n->'Plans') ch), 0) AS excl,
           coalesce((n->>'Temp Written Blocks')::numeric, 0)
             - coalesce((SELECT sum(coalesce((ch->>'Temp Written Blocks')::numeric, 0))
                         FROM jsonb_array_elements(n->'Plans') ch), 0) AS excl_tw
    FROM tree
), tops AS (
    SELECT ord, concat_ws(' ', c->>'Node Type', c->>'Join Type', c->>'Strategy') AS type,
           (c->>'Plan Rows')::numeric AS est_rows, (c->>'Actual Rows')::numeric AS nrows,
           CASE WHEN c->>'Subplan Name' LIKE 'CTE %' THEN substr(c->>'Subplan Name', 5) END AS cte,
           (c->>'Actual Total Time')::numeric * (c->>'Actual Loops')::numeric AS incl,
           coalesce((c->>'Temp Written Blocks')::numeric, 0) AS tw
    FROM jsonb_array_elements(p->'Plan'->'Plans') WITH ORDINALITY AS a(c, ord)
), driver AS (
    SELECT DISTINCT ON (scans) id, scans FROM nodes WHERE type = 'CTE Scan' ORDER BY scans, incl DESC
), charged AS (
    SELECT CASE WHEN d.id IS NOT NULL AND n.loops <= 1 THEN d.scans ELSE tp.cte END AS cte, n.loops,
           n.excl - coalesce(x.incl, 0) AS ms, n.excl_tw - coalesce(x.tw, 0) AS tw
    FROM nodes n JOIN tops tp ON tp.ord = n.top
    LEFT JOIN driver d ON d.id = n.id
    LEFT JOIN tops x ON x.cte = d.scans
    -- (the top node: a join of one-row scans, nothing of its own)
), steps AS (
    SELECT cte, max(loops) AS loops, sum(ms) AS ms, sum(tw) AS tw FROM charged GROUP BY cte
)
SELECT coalesce(s.cte, 'final SELECT'), coalesce(tp.type, 'count(*) of the CTEs'),
       tp.est_rows, tp.nrows, s.loops, s.ms, s.tw * 8192 / 1048576.0
FROM steps s LEFT JOIN tops tp ON tp.cte = s.cte
ORDER BY coalesce(tp.ord, 1e9)
$f$;
SQL

# merge_load N: src and orig hold rows 1..N (the same rows at every size,
# the first N of the largest); t and t_ioc are empty.
merge_load() {
    bench_psql <<SQL
TRUNCATE src, orig, t, t_ioc;
INSERT INTO src
SELECT g,
       (g * 7919) % 100003,
       ((g * 104729) % 10000000) / 100.0,
       left(md5(g::text) || md5((-g)::text), 20 + (g % 21)::int),
       timestamptz '2024-01-01 00:00+00' + g * interval '17 seconds'
FROM generate_series(1::bigint, $1) g;
INSERT INTO orig SELECT * FROM src;
VACUUM ANALYZE src;
VACUUM ANALYZE orig;
SQL
}

# idem.merge(target, src) with a source table whose primary key is the merge
# key: the path this benchmark is about. Probed on a one-row table first; if
# this build cannot run it, the benchmark says so and measures the path a
# view or query source takes (src_v = SELECT * FROM src), which adds the
# source checks (NULL keys, duplicate keys) that the primary key makes
# unnecessary.
merge_src=src
bench_psql <<'SQL'
CREATE TABLE probe_t (id bigint PRIMARY KEY, v int);
CREATE TABLE probe_s (id bigint PRIMARY KEY, v int);
INSERT INTO probe_s VALUES (1, 1);
CREATE VIEW src_v AS SELECT * FROM src;
-- For a scaled-down rerun when a full one does not finish (merge_profile).
CREATE TABLE src_small (LIKE src INCLUDING ALL) WITH (autovacuum_enabled = off);
CREATE VIEW src_small_v AS SELECT * FROM src_small;
SQL
if ! probe_err=$(bench_psql -c "SELECT * FROM idem.merge('probe_t', 'probe_s')" 2>&1 >/dev/null); then
    merge_src=src_v
    report ""
    report "**idem.merge fails with a source table that has a primary key on the key:** \`SELECT * FROM idem.merge('probe_t', 'probe_s')\` (both \`id bigint PRIMARY KEY\`) raises \`$(printf '%s' "$probe_err" | head -1 | sed 's/^psql:[^ ]* //')\`. Every idem.merge below therefore reads the view \`src_v\` (\`SELECT * FROM src\`): the path of a view or query source, with the NULL-key and duplicate-key checks that a primary-key source skips. The figures are for that path, not the intended one."
fi
bench_psql -c "DROP TABLE probe_t, probe_s"
merge_call="SELECT * FROM idem.merge('t', '$merge_src')"
merge_small_src=$([ "$merge_src" = src ] && echo src_small || echo src_small_v)

ioc_set="c1 = EXCLUDED.c1, c2 = EXCLUDED.c2, c3 = EXCLUDED.c3, c4 = EXCLUDED.c4"
ioc_load="INSERT INTO t_ioc SELECT * FROM src ON CONFLICT (id) DO UPDATE SET $ioc_set"
restore_t="TRUNCATE t; INSERT INTO t SELECT * FROM orig; VACUUM ANALYZE t; CHECKPOINT;"

# Every scenario first runs idem.merge once, untimed, under auto_explain and
# a statement timeout, before timing it: a plan that goes quadratic must not
# stall the whole benchmark; it is reported as such, with its estimated plan.
merge_timeout=${BENCH_MERGE_TIMEOUT:-60}

# merge_profile TITLE RESET_SQL: that run. Sets merge_ok (yes: finished, no:
# timed out or failed) and merge_profile_lines, the report section (emitted
# later by merge_profile_emit, after the timing table). The plan arrives as
# a NOTICE (auto_explain.log_level), so the server log is not needed. When
# the run does not finish (no plan then: auto_explain logs at the end), the
# same is run scaled down, the first 20,000 source rows into the full target
# (after RESET_SQL), to show where the time goes.
merge_profile() {
    merge_profile_lines=()
    merge_profile_run "$1" "$merge_call"
    merge_ok=$merge_run_ok
    if [ "$merge_ok" = no ] && [ -n "${2:-}" ]; then
        bench_psql >/dev/null <<SQL
$2
TRUNCATE src_small;
INSERT INTO src_small SELECT * FROM src WHERE id <= 20000;
VACUUM ANALYZE src_small;
SQL
        merge_profile_run "$1, scaled down: the first 20,000 source rows (\`src_small\`) into the full target" \
            "SELECT * FROM idem.merge('t', '$merge_small_src')"
    fi
}
merge_profile_run() {
    local title=$1 call=$2 dir out json total jit err
    dir=$(mktemp -d /tmp/pg_idempotent-bench.XXXXXX)
    merge_run_ok=yes
    if ! bench_psql >"$dir/out" 2>"$dir/notices" <<SQL
LOAD 'auto_explain';
SET client_min_messages = notice;
SET auto_explain.log_level = notice;
SET auto_explain.log_min_duration = 0;
SET auto_explain.log_nested_statements = on;
SET auto_explain.log_analyze = on;
SET auto_explain.log_buffers = on;
SET auto_explain.log_format = json;
SET statement_timeout = '${merge_timeout}s';
$call;
SQL
    then
        merge_run_ok=no
        err=$(grep -m1 'ERROR:' "$dir/notices" | sed 's/^.*ERROR: */ERROR: /' || true)
        merge_profile_lines+=("" "#### idem.merge: $title"
            ""
            "**\`$call\` did not finish:** \`$err\` (limit: ${merge_timeout} s, BENCH_MERGE_TIMEOUT). Left out of the timings.")
        rm -rf "$dir"
        return 0
    fi
    out=$(cat "$dir/out")
    json=$(awk '/^\{$/ { buf = ""; on = 1 }
                on { buf = buf $0 "\n" }
                /^\}$/ && on { on = 0; if (buf ~ /"Query Text": "WITH/) print buf }' "$dir/notices")
    rm -rf "$dir"
    if [ -z "$json" ]; then
        merge_profile_lines+=("" "($title: it returned \`$out\`; no auto_explain plan of its statement was captured.)")
        return 0
    fi
    total=$(bench_psql -v plan="$json" <<<"SELECT round(((:'plan')::jsonb->'Plan'->>'Actual Total Time')::numeric)")
    jit=$(bench_psql -v plan="$json" <<<"SELECT coalesce(round(((:'plan')::jsonb->'JIT'->'Timing'->>'Total')::numeric), 0)")
    merge_profile_lines+=("" "#### Where idem.merge's time goes: $title"
        ""
        "\`$call\`, one untimed run under auto_explain (ANALYZE, per-node timing: slower than the timed runs), returned \`$out\` (inserted|updated|deleted|unchanged|stale). Its statement's time per CTE: the CTE's own plan nodes plus writing its rows to its tuplestore (spilling to temp files past work_mem); the CTEs that read it pay for reading. Shares are of the statement's total; \"most loops\": the most times one plan node in the step ran (a rescan per row shows here)."
        ""
        "| step | top plan node | est. rows | rows | most loops of a node | ms | share | temp written |"
        "|---|---|---:|---:|---:|---:|---:|---:|")
    local step node est rows loops ms share mb
    while IFS='|' read -r step node est rows loops ms share mb; do
        merge_profile_lines+=("| $step | $node | $est | $rows | $loops | $ms | $share | $mb |")
    done < <(bench_psql -v plan="$json" <<'SQL'
SELECT step, node, coalesce(est_rows::text, ''), coalesce(nrows::text, ''), max_loops, round(ms),
       round(100 * ms / nullif(((:'plan')::jsonb->'Plan'->>'Actual Total Time')::numeric, 0)) || '%',
       CASE WHEN temp_mb >= 0.05 THEN round(temp_mb, 1) || ' MB' ELSE '' END
FROM merge_profile((:'plan')::jsonb)
WHERE ms >= 0.5 OR temp_mb >= 0.05
SQL
)
    merge_profile_lines+=("| **total** | | | | | **$total** | | |"
        ""
        "Steps under 0.5 ms left out. JIT compilation, inside the steps above: $jit ms.")
}
merge_profile_emit() {
    local line
    for line in "${merge_profile_lines[@]}"; do report "$line"; done
}

# merge_goal WHAT MERGE_MEDIAN BASELINE_MEDIAN TARGET: the ratio goal; when
# idem.merge did not finish, the timeout over the baseline, a lower bound.
merge_goal() {
    local what=$1 merge_ms=$2 base_ms=$3 target=$4
    if [ "$merge_ms" = timeout ]; then
        bench_goal "$what (timed out: at least)" "$(bench_ratio "$((merge_timeout * 1000))" "$base_ms")" "<=" "$target" x
    else
        bench_goal "$what" "$(bench_ratio "$merge_ms" "$base_ms")" "<=" "$target" x
    fi
}

# merge_ms MEDIAN_OR_TIMEOUT: the median for latest.tsv, NA for a timeout.
merge_ms() {
    [ "$1" = timeout ] && echo NA || echo "$1"
}

# merge_size N: the three scenarios on N rows. At the largest size (the
# last), also the per-CTE profiles and the rows written and WAL of a replay.
merge_size() {
    local n=$1 rows big=no
    rows=$(bench_rows "$n")
    [ "$n" = "$BENCH_SIZE_MAX" ] && big=yes
    say "merge at $rows rows: loading"
    merge_load "$n"
    report ""
    report "### $rows rows, $merge_kind_title"
    report ""
    report "Tables \`src\` and \`t\`: $(bench_psql -F ' ' -c "
        SELECT to_char(count(*), 'FM9,999,999,999') || ' rows, '
               || pg_size_pretty(pg_table_size('src')) || ' heap + '
               || pg_size_pretty(pg_indexes_size('src')) || ' of indexes on src, c3 '
               || min(length(c3)) || '-' || max(length(c3)) || ' chars'
        FROM src") (id bigint, c1 int, c2 numeric(12,2), c3 text, c4 timestamptz; \`t\` has its primary key on id, \`src\` $merge_kind_src; VACUUM ANALYZEd; autovacuum off)."

    # 1. First load into an empty target.
    say "first load: untimed idem.merge under auto_explain"
    bench_psql >/dev/null <<<"TRUNCATE t; CHECKPOINT;"
    merge_profile "first load" "TRUNCATE t; CHECKPOINT;"
    report ""
    report "#### 1. First load into an empty target, $rows rows, $merge_kind_title"
    report ""
    report "Before each timed statement (untimed): its target is TRUNCATEd and a CHECKPOINT writes out the previous round's pages."
    BENCH_RESET=([ioc]="TRUNCATE t_ioc; CHECKPOINT;" [merge]="TRUNCATE t; CHECKPOINT;")
    if [ "$merge_ok" = yes ]; then
        bench_compare "merge_load_${merge_kind}_$n" ioc "$ioc_load" merge "$merge_call"
        load_merge=${BENCH_MEDIAN[merge]}
    else
        bench_compare "merge_load_${merge_kind}_$n" ioc "$ioc_load"
        load_merge=timeout
    fi
    BENCH_RESET=()
    load_ioc=${BENCH_MEDIAN[ioc]}
    bench_tsv merge "first load$merge_kind_case" "$n" "$(merge_ms "$load_merge")" "$load_ioc" \
        "idem.merge" "INSERT ... ON CONFLICT DO UPDATE"
    [ "$big" = yes ] && merge_profile_emit

    # 2. Replay: t already equals src. Nothing here writes to t (checked
    # after), so no reset between rounds.
    say "replay: restoring t; untimed idem.merge under auto_explain"
    bench_psql >/dev/null <<<"$restore_t"
    merge_profile "replay" "$restore_t"
    report ""
    report "#### 2. Replay of unchanged data (\`t\` already equals \`src\`), $rows rows, $merge_kind_title"
    if [ "$n" = "$BENCH_SIZE_MIN" ] && [ "$merge_kind" = pk ]; then
        report ""
        report "\`guarded\` and \`bare\` are what a user writes for the same guarantees: \`merge_guarded()\` is the duplicate-key check and the MERGE in one plpgsql function (both timed together); \`merge_bare()\` is the same MERGE alone."
        report ""
        report '```sql'
        report "$(bench_psql -c "SELECT pg_get_functiondef('merge_guarded'::regproc)")"
        report '```'
    fi
    if [ "$merge_ok" = yes ]; then
        bench_compare "merge_replay_${merge_kind}_$n" guarded "SELECT merge_guarded()" bare "SELECT merge_bare()" merge "$merge_call"
        replay_merge=${BENCH_MEDIAN[merge]}
    else
        bench_compare "merge_replay_${merge_kind}_$n" guarded "SELECT merge_guarded()" bare "SELECT merge_bare()"
        replay_merge=timeout
    fi
    replay_guarded=${BENCH_MEDIAN[guarded]}
    replay_bare=${BENCH_MEDIAN[bare]}
    bench_tsv merge "replay, unchanged data$merge_kind_case" "$n" "$(merge_ms "$replay_merge")" "$replay_guarded" \
        "idem.merge" "duplicate check + MERGE ... IS DISTINCT FROM"
    if [ "$merge_ok" = yes ]; then
        report ""
        report "- idem.merge / the bare MERGE alone: $(bench_ratio "$replay_merge" "$replay_bare")x"
    fi
    local changed_after_replay
    changed_after_replay=$(bench_psql -c "SELECT count(*) FROM t JOIN orig o USING (id) WHERE (t.c1, t.c2, t.c3, t.c4) IS DISTINCT FROM (o.c1, o.c2, o.c3, o.c4)")
    report "- rows of \`t\` differing from the original data after the timed replays: $changed_after_replay"
    [ "$big" = yes ] && merge_profile_emit
    [ "$big" = yes ] && merge_replay_writes

    # 3. 10% of the rows changed. src gets c1 + 1 where id % 10 = 0
    # (reloaded: compact, no dead rows); t is restored to the original data
    # before each round.
    say "10%: rewriting src, restoring t; untimed idem.merge under auto_explain"
    bench_psql <<'SQL'
TRUNCATE src;
INSERT INTO src
SELECT id, CASE WHEN id % 10 = 0 THEN c1 + 1 ELSE c1 END, c2, c3, c4 FROM orig;
VACUUM ANALYZE src;
SQL
    bench_psql >/dev/null <<<"$restore_t"
    merge_profile "10% changed" "$restore_t"
    report ""
    report "#### 3. 10% of the rows changed, $rows rows, $merge_kind_title"
    report ""
    report "\`src\` has c1 + 1 where id % 10 = 0 ($(bench_rows $((n / 10))) rows). Before each timed statement (untimed): \`$restore_t\`"
    BENCH_RESET=([guarded]="$restore_t" [merge]="$restore_t")
    if [ "$merge_ok" = yes ]; then
        bench_compare "merge_10pct_${merge_kind}_$n" guarded "SELECT merge_guarded()" merge "$merge_call"
        pct_merge=${BENCH_MEDIAN[merge]}
    else
        bench_compare "merge_10pct_${merge_kind}_$n" guarded "SELECT merge_guarded()"
        pct_merge=timeout
    fi
    BENCH_RESET=()
    pct_guarded=${BENCH_MEDIAN[guarded]}
    bench_tsv merge "10% of the rows changed$merge_kind_case" "$n" "$(merge_ms "$pct_merge")" "$pct_guarded" \
        "idem.merge" "duplicate check + MERGE ... IS DISTINCT FROM"
    report ""
    report "- rows of \`t\` differing from \`src\` after the last round: $(bench_psql -c "SELECT count(*) FROM t FULL JOIN src s USING (id) WHERE (t.c1, t.c2, t.c3, t.c4) IS DISTINCT FROM (s.c1, s.c2, s.c3, s.c4)")"
    [ "$big" = yes ] && merge_profile_emit
    return 0
}

# merge_replay_writes: each replay once more, rolled back, for the rows it
# rewrote and the WAL it wrote (t equals src). Sets merge_wal_pct and
# merge_rewritten (when idem.merge ran).
merge_replay_writes() {
    say "replay: rows rewritten and WAL"
    local ioc_naive ioc_where v q wal lsn rew lck naive_wal merge_wal
    ioc_naive="INSERT INTO t SELECT * FROM src ON CONFLICT (id) DO UPDATE SET $ioc_set"
    ioc_where="$ioc_naive WHERE (t.c1, t.c2, t.c3, t.c4) IS DISTINCT FROM (EXCLUDED.c1, EXCLUDED.c2, EXCLUDED.c3, EXCLUDED.c4)"
    local probe_variants=(guarded ioc_where ioc_naive)
    [ "$merge_ok" = yes ] && probe_variants=(merge "${probe_variants[@]}")
    local -A probe=()
    for v in "${probe_variants[@]}"; do
        case $v in
            merge)     q=$merge_call ;;
            guarded)   q="SELECT merge_guarded()" ;;
            ioc_where) q=$ioc_where ;;
            ioc_naive) q=$ioc_naive ;;
        esac
        # Rolled back: the ON CONFLICT replays write; t is restored before
        # scenario 3 anyway.
        probe[$v]=$(bench_psql -F ' ' <<SQL
BEGIN;
SELECT wal_bytes, lsn_bytes, rewritten, locked FROM write_probe('t', \$probe\$$q\$probe\$);
ROLLBACK;
SQL
)
    done
    report ""
    report "#### Replay: rows written and WAL, $(bench_rows "$BENCH_SIZE_MAX") rows, $merge_kind_title"
    report ""
    report "Each replay once more, under EXPLAIN (ANALYZE, WAL), in a transaction rolled back afterwards. Rows rewritten: rows of \`t\` with a new tuple version (xmin of that transaction); rows locked: row versions only locked (xmax of that transaction). WAL: the top plan node's \"WAL Bytes\" (this backend's WAL, nested statements included), and the WAL insert position's advance as a cross-check."
    report ""
    report "| replay | statement | rows rewritten | rows locked | WAL bytes | WAL insert position advance |"
    report "|---|---|---:|---:|---:|---:|"
    for v in "${probe_variants[@]}"; do
        read -r wal lsn rew lck <<<"${probe[$v]}"
        case $v in
            merge)     q="\`$merge_call\`" ;;
            guarded)   q="\`SELECT merge_guarded()\`" ;;
            ioc_where) q="\`INSERT ... ON CONFLICT (id) DO UPDATE SET ... WHERE (t.c1, ...) IS DISTINCT FROM (EXCLUDED.c1, ...)\`" ;;
            ioc_naive) q="\`INSERT INTO t SELECT * FROM src ON CONFLICT (id) DO UPDATE SET c1 = EXCLUDED.c1, ...\` (naive)" ;;
        esac
        report "| $v | $q | $rew | $lck | $wal | $lsn |"
    done
    read -r naive_wal _ _ _ <<<"${probe[ioc_naive]}"
    if [ "$merge_ok" = yes ]; then
        read -r merge_wal _ merge_rewritten _ <<<"${probe[merge]}"
        merge_wal_pct=$(awk -v a="$merge_wal" -v b="$naive_wal" 'BEGIN { if (b == 0) print "inf"; else printf "%.3f", 100 * a / b }')
    fi
}

# Both kinds of source, every size, each with its goals at the largest size.
# The key-less source is src with its primary key dropped (the hand-written
# SQL reads it too).
for merge_kind in ${BENCH_MERGE_KINDS:-pk nokey}; do
    if [ "$merge_kind" = pk ]; then
        merge_kind_title="source with a primary key"
        merge_kind_src="has its primary key on id"
        merge_kind_case=""
    else
        bench_psql -c "ALTER TABLE src DROP CONSTRAINT src_pkey"
        merge_kind_title="source without any index"
        merge_kind_src="has no index"
        merge_kind_case=", source without index"
    fi
    declare -A merge_pct_at=()
    for n in "${BENCH_SIZE_LIST[@]}"; do
        merge_size "$n"
        merge_pct_at[$n]="$pct_merge $pct_guarded"
    done

    # The goals, at the largest size (the last merge_size).
    report ""
    report "### Goals, $(bench_rows "$BENCH_SIZE_MAX") rows, $merge_kind_title"
    bench_goal_begin
    if [ "$merge_src" != src ]; then
        bench_goal "idem.merge runs with a primary-key source table (1 = yes)" 0 ">=" 1
    fi
    merge_goal "1. first load: idem.merge / INSERT ... ON CONFLICT" "$load_merge" "$load_ioc" 1.15
    merge_goal "2. replay: idem.merge / duplicate check + guarded MERGE" "$replay_merge" "$replay_guarded" 1.10
    if [ "$replay_merge" != timeout ]; then
        bench_goal "2. replay: rows rewritten by idem.merge" "$merge_rewritten" "<=" 0
        bench_goal "2. replay: idem.merge WAL / naive ON CONFLICT replay WAL" "$merge_wal_pct" "<=" 1 %
    fi
    merge_goal "3. 10% changed: idem.merge / duplicate check + guarded MERGE" "$pct_merge" "$pct_guarded" 1.15
    # Issue 45: at most 1.10x at every size from 100,000 rows, both sources.
    for n in "${BENCH_SIZE_LIST[@]}"; do
        [ "$n" -ge 100000 ] || continue
        read -r m g <<<"${merge_pct_at[$n]}"
        merge_goal "3. 10% changed, $(bench_rows "$n") rows (issue 45): idem.merge / guarded MERGE" "$m" "$g" 1.10
    done
done

bench_psql >/dev/null <<'SQL'
ALTER SYSTEM RESET autovacuum;
SELECT pg_reload_conf();
SQL
BENCH_ROUNDS=$merge_saved_rounds
