# Sourced by bench/run.sh (bench/lib.sh loaded, PGDATABASE has the extension).
#
# Growth to 10 million rows (issue 45): merge (first load, replay, 10% of
# the rows changed), checksum, snapshot (first load, replay, 10% changed)
# and append (first load, replay) at the sizes of BENCH_GROWTH_SIZES
# (default: the largest of BENCH_SIZES and ten times it, 1M and 10M). Goals:
# time grows linearly, a log-log slope <= 1.05 from the smallest size to the
# largest, and the backend's private memory stays flat: its growth while the
# call runs (sampled RssAnon, bench_peak_memory) does not grow with the rows.
# Tables: the standard table of bench/lib.sh, and a copy with qty + 1 in
# every tenth row; VACUUM ANALYZEd; autovacuum off.
#
# Memory is judged twice. PostgreSQL bounds a statement's sorts, hash tables
# and materialized steps (a CTE's tuplestore, a RETURNING list) by work_mem
# and spills beyond it, so a step can be under work_mem at the smaller size
# and reach it at the larger: at the default 4 MB, merge's and snapshot's
# 10% changed grew by 5 to 6 MB from 1M to 10M (three tuplestores of the
# changed rows: 100,000 rows at 1M, 1,000,000 at 10M) and followed work_mem,
# not the rows (a dev cluster, snapshot at 10M: 11.0 MB at work_mem 4 MB,
# 4.2 MB at 1 MB, 2.6 MB at 256 kB, the same as at 1M). So: (1) at the
# default work_mem, the growth at the largest size within the bound of the
# snapshot benchmark's memory table, 4 x work_mem x hash_mem_multiplier +
# 2 MB; (2) flat: one more run per case and size at a work_mem of
# BENCH_GROWTH_LOW_WORK_MEM (256kB), where every bounded step spills at
# both sizes, the largest size's growth within 1 MB of the smallest's. A
# leak of a byte per row would add 9 MB there.
#
# A slope divides two runs made minutes apart, and this machine changes
# speed between minutes (bench/README.md): one run per size, the sizes one
# after the other, gave the same code slopes on either side of the goal. So
# every size's tables are loaded first, each case runs at every size in
# turn (the sizes side by side in time), BENCH_GROWTH_ROUNDS times (2), and
# every run starts from a CHECKPOINT, not from the dirty pages of the case
# before it; the time kept is the best round's, the memory the largest.
#
# The time is the call's and a CHECKPOINT's after it: the pages it dirtied
# written. Without it the sizes did not pay alike: a 1M load's pages (130 MB
# and its index) stay in shared_buffers (256 MB) and are written after the
# clock stops, a 10M load's are evicted, and WAL checkpoints run, while it
# runs. append's first load (a plain INSERT ... SELECT, linear in its
# plan) had slopes of 1.05 to 1.13 in runs of the same code.
#
# synchronize_seqscans is off while it runs. With it on, a sequential scan
# of a table larger than a quarter of shared_buffers starts where the last
# scan of that table stopped: after any scan that stopped early, a first
# load wrote the source's rows rotated (the history's id correlation -0.5
# instead of 1), the replay's join became a hash join instead of a merge
# join of the two key indexes, and the 10M replay took 7.8 s and 11 MB
# instead of 5.2 s and 2 MB (the full run of 2d263bb; bench/README.md). The
# report gives each target's correlation, so that a run can be read for it.

growth_sizes=(${BENCH_GROWTH_SIZES:-$BENCH_SIZE_MAX $((BENCH_SIZE_MAX * 10))})
growth_small=${growth_sizes[0]}
growth_big=${growth_sizes[${#growth_sizes[@]} - 1]}
growth_rounds=${BENCH_GROWTH_ROUNDS:-2}
growth_low_work_mem=${BENCH_GROWTH_LOW_WORK_MEM:-256kB}

bench_psql >/dev/null <<'SQL'
ALTER SYSTEM SET autovacuum = off;
ALTER SYSTEM SET synchronize_seqscans = off;
SELECT pg_reload_conf();
CREATE TABLE bench_.growth (name text, size bigint, round int, ms float8, baseline_kb bigint, peak_kb bigint);
SQL

# growth_measure NAME SIZE ROUND SQL [WORK_MEM]: one run of SQL in a fresh
# backend (with work_mem set to WORK_MEM if given), its time (bench_.time_ms
# of the call plus that of a CHECKPOINT after it) and its private memory.
growth_measure() {
    local name=$1 size=$2 round=$3 sql=$4 work_mem=${5:-} mem baseline peak
    say "growth: $name, $(bench_rows "$size") rows, round $round${work_mem:+, work_mem $work_mem}"
    mem=$(bench_peak_memory "${work_mem:+SET work_mem = '$work_mem'; }INSERT INTO bench_.growth (name, size, round, ms) SELECT '$name', $size, $round, bench_.time_ms(\$g\$$sql\$g\$) + bench_.time_ms('CHECKPOINT')") ||
        return 1
    read -r baseline peak _ <<<"$mem"
    bench_psql -c "UPDATE bench_.growth SET baseline_kb = $baseline, peak_kb = $peak
                   WHERE name = '$name' AND size = $size AND round = $round" >/dev/null
}

# growth_case NAME ROUND SIZE: prints the untimed statements that set the
# case up, a line '--', then the timed one. The first loads start from an
# empty target; the replays from the target the first load wrote; 10%
# changed alternates between the changed copy and the original, so that
# every round changes the same tenth of the rows.
growth_case() {
    local s=g_$(bench_size_name "$3") src=g_$(bench_size_name "$3")
    [ $(($2 % 2)) -eq 1 ] && src=${s}_chg
    case "$1" in
        "merge, first load") echo "TRUNCATE ${s}_t; VACUUM ANALYZE ${s}_t;"; echo --
                             echo "SELECT * FROM idem.merge('${s}_t', '$s')" ;;
        "merge, replay") echo "VACUUM ANALYZE ${s}_t;"; echo --; echo "SELECT * FROM idem.merge('${s}_t', '$s')" ;;
        "merge, 10% changed") echo --; echo "SELECT * FROM idem.merge('${s}_t', '$src')" ;;
        "checksum") echo --; echo "SELECT idem.checksum('$s')" ;;
        "snapshot, first load") echo "TRUNCATE ${s}_h; VACUUM ANALYZE ${s}_h;"; echo --
                                echo "SELECT * FROM idem.snapshot('${s}_h', '$s', key => '{id}')" ;;
        "snapshot, replay") echo "VACUUM ANALYZE ${s}_h;"; echo --
                            echo "SELECT * FROM idem.snapshot('${s}_h', '$s', key => '{id}')" ;;
        "snapshot, 10% changed") echo --; echo "SELECT * FROM idem.snapshot('${s}_h', '$src', key => '{id}')" ;;
        "append, first load") echo "TRUNCATE ${s}_a; VACUUM ANALYZE ${s}_a;"; echo --
                              echo "SELECT * FROM idem.append('${s}_a', '$s')" ;;
        "append, replay") echo "VACUUM ANALYZE ${s}_a;"; echo --; echo "SELECT * FROM idem.append('${s}_a', '$s')" ;;
        *) echo "growth_case: no case '$1'" >&2; return 1 ;;
    esac
}

growth_cases=("merge, first load" "merge, replay" "merge, 10% changed" "checksum" "snapshot, first load"
              "snapshot, replay" "snapshot, 10% changed" "append, first load" "append, replay")
for n in "${growth_sizes[@]}"; do
    s=g_$(bench_size_name "$n")
    say "growth: loading $(bench_rows "$n") rows ($s)"
    {
        bench_standard_table "$s" "$n"
        echo "CREATE TABLE ${s}_chg AS SELECT id, CASE WHEN id % 10 = 0 THEN qty + 1 ELSE qty END AS qty, amount, label, created FROM $s;"
        echo "ALTER TABLE ${s}_chg ADD PRIMARY KEY (id);"
        echo "CREATE TABLE ${s}_t (LIKE $s INCLUDING ALL);"
        echo "CREATE TABLE ${s}_h (LIKE $s, valid_from timestamptz, valid_to timestamptz);"
        echo "SELECT idem.snapshot_prepare('${s}_h', ARRAY['id'], valid_to => 'valid_to');"
        echo "CREATE TABLE ${s}_a (LIKE $s INCLUDING ALL);"
        echo "VACUUM ANALYZE $s, ${s}_chg;"
    } | bench_psql >/dev/null
done
# growth_run CASE ROUND SIZE [WORK_MEM]: the case's setup, a CHECKPOINT, and
# one measured run (recorded under the name CASE, or CASE@WORK_MEM).
growth_run() {
    local steps
    steps=$(growth_case "$1" "$2" "$3")
    { echo "${steps%%--*}"; echo "CHECKPOINT;"; } | bench_psql >/dev/null
    growth_measure "$1${4:+@$4}" "$3" "$2" "${steps##*--$'\n'}" "${4:-}"
}
# The memory-only run at the low work_mem follows the timed rounds as one
# more round, so 10% changed changes the same tenth again.
for c in "${growth_cases[@]}"; do
    for ((r = 1; r <= growth_rounds; r++)); do
        for n in "${growth_sizes[@]}"; do growth_run "$c" "$r" "$n"; done
    done
    for n in "${growth_sizes[@]}"; do growth_run "$c" $((growth_rounds + 1)) "$n" "$growth_low_work_mem"; done
done
growth_order=()
for n in "${growth_sizes[@]}"; do
    s=g_$(bench_size_name "$n")
    bench_psql -c "ANALYZE ${s}_t, ${s}_h, ${s}_a" >/dev/null
    growth_order+=("$(bench_psql -c "SELECT string_agg(format('%s %s', tablename, round(correlation::numeric, 2)), ', ' ORDER BY tablename)
                                      FROM pg_stats WHERE schemaname = 'public' AND attname = 'id'
                                       AND tablename IN ('${s}_t', '${s}_h', '${s}_a')")")
    bench_psql -c "DROP TABLE $s, ${s}_chg, ${s}_t, ${s}_h, ${s}_a; CHECKPOINT;" >/dev/null
done

report ""
report "Per case and size, the best of $growth_rounds runs (the sizes interleaved in each round, every run in a fresh backend after a CHECKPOINT): its time (ms, the call and a CHECKPOINT after it, so that every size pays for writing the pages it dirtied), and the largest private memory growth of the runs (peak RssAnon while it ran less RssAnon before; kB) at the default work_mem ($(bench_psql -c 'SHOW work_mem')) and in one more run at work_mem = $growth_low_work_mem, where every step PostgreSQL bounds by work_mem spills at both sizes (bench/growth.sh). 10% changed alternates between the changed copy and the original, the same tenth of the rows each round. The tables: \`bench_standard_table\` (id bigint primary key, qty, amount, label, created), the same with qty + 1 in every tenth row (10% changed), a merge target and an append target of the same shape and a history table (\`snapshot_prepare\`), all empty before the first load. Slope: log(time at $(bench_rows "$growth_big") / time at $(bench_rows "$growth_small")) / log($growth_big / $growth_small); 1 is linear."
report ""
report "Physical order of the targets after the runs (pg_stats correlation of id; 1: in key order, as the sources are): $(IFS=';'; echo "${growth_order[*]}" | sed 's/;/; /g'). synchronize_seqscans is off while growth runs: with it on, a scan that stopped early makes the next first load write its rows rotated, and the replay's plan changes (bench/growth.sh)."
# growth_memory NAME SIZE: the largest private memory growth of NAME's runs
# at SIZE.
growth_memory() {
    bench_psql -c "SELECT max(peak_kb - baseline_kb) FROM bench_.growth WHERE name = '$1' AND size = $2"
}
report ""
header="| case |"
rule="|---|"
for n in "${growth_sizes[@]}"; do
    header+=" $(bench_rows "$n"): ms | memory kB | at $growth_low_work_mem |"
    rule+="---:|---:|---:|"
done
report "$header slope |"
report "$rule---:|"
growth_slopes=()
for c in "${growth_cases[@]}"; do
    row="| $c |"
    for n in "${growth_sizes[@]}"; do
        ms=$(bench_psql -c "SELECT round(min(ms)::numeric, 1) FROM bench_.growth WHERE name = '$c' AND size = $n")
        row+=" $ms | $(growth_memory "$c" "$n") | $(growth_memory "$c@$growth_low_work_mem" "$n") |"
    done
    slope=$(bench_psql -c "SELECT round((ln(b.ms / a.ms) / ln($growth_big::float8 / $growth_small))::numeric, 2)
        FROM (SELECT min(ms) AS ms FROM bench_.growth WHERE name = '$c' AND size = $growth_small) a,
             (SELECT min(ms) AS ms FROM bench_.growth WHERE name = '$c' AND size = $growth_big) b")
    report "$row $slope |"
    growth_slopes+=("$c|$slope")
done

bench_goal_begin
for entry in "${growth_slopes[@]}"; do
    c=${entry%%|*} slope=${entry##*|}
    bench_goal "$c: time, log-log slope $(bench_rows "$growth_small") to $(bench_rows "$growth_big")" "$slope" "<=" 1.05
done
growth_bound_kb=$(bench_work_mem_bound_kb)
for c in "${growth_cases[@]}"; do
    bench_goal "$c: private memory growth at $(bench_rows "$growth_big") rows (4 x work_mem x hash_mem_multiplier + 2 MB)" \
        "$(growth_memory "$c" "$growth_big")" "<=" "$growth_bound_kb" " kB"
done
for c in "${growth_cases[@]}"; do
    small=$(growth_memory "$c@$growth_low_work_mem" "$growth_small")
    bench_goal "$c: flat, at work_mem $growth_low_work_mem: private memory growth at $(bench_rows "$growth_big") rows ($(bench_rows "$growth_small"): $small kB, + 1 MB)" \
        "$(growth_memory "$c@$growth_low_work_mem" "$growth_big")" "<=" "$((small + 1024))" " kB"
done

bench_psql >/dev/null <<'SQL'
ALTER SYSTEM RESET autovacuum;
ALTER SYSTEM RESET synchronize_seqscans;
SELECT pg_reload_conf();
SQL
