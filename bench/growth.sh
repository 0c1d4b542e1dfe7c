# Sourced by bench/run.sh (bench/lib.sh loaded, PGDATABASE has the extension).
#
# Growth to 10 million rows (issue 45): merge (first load, replay, 10% of
# the rows changed), checksum, snapshot (first load, replay, 10% changed)
# and append (first load, replay) at the sizes of BENCH_GROWTH_SIZES
# (default: the largest of BENCH_SIZES and ten times it, 1M and 10M), one
# run each (each call is seconds to a minute at 10M). Goals: time grows
# linearly, a log-log slope <= 1.05 from the smallest size to the largest,
# and the backend's private memory stays flat: its growth while the call
# runs (sampled RssAnon, bench_peak_memory) at the largest size within 4 MB
# of the smallest's. Tables: the standard table of bench/lib.sh, and a copy
# with qty + 1 in every tenth row; VACUUM ANALYZEd; autovacuum off.

growth_sizes=(${BENCH_GROWTH_SIZES:-$BENCH_SIZE_MAX $((BENCH_SIZE_MAX * 10))})
growth_small=${growth_sizes[0]}
growth_big=${growth_sizes[${#growth_sizes[@]} - 1]}

bench_psql >/dev/null <<'SQL'
ALTER SYSTEM SET autovacuum = off;
SELECT pg_reload_conf();
CREATE TABLE bench_.growth (name text, size bigint, ms float8, baseline_kb bigint, peak_kb bigint);
SQL

# growth_measure NAME SIZE SQL: one run of SQL in a fresh backend, its time
# (clock_timestamp() around EXECUTE) and its private memory.
growth_measure() {
    local name=$1 size=$2 sql=$3 mem baseline peak
    say "growth: $name, $(bench_rows "$size") rows"
    mem=$(bench_peak_memory "INSERT INTO bench_.growth (name, size, ms) SELECT '$name', $size, bench_.time_ms(\$g\$$sql\$g\$)") ||
        return 1
    read -r baseline peak _ <<<"$mem"
    bench_psql -c "UPDATE bench_.growth SET baseline_kb = $baseline, peak_kb = $peak WHERE name = '$name' AND size = $size" >/dev/null
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
        echo "VACUUM ANALYZE $s, ${s}_chg, ${s}_t, ${s}_h, ${s}_a;"
        echo "CHECKPOINT;"
    } | bench_psql >/dev/null
    growth_measure "merge, first load" "$n" "SELECT * FROM idem.merge('${s}_t', '$s')"
    bench_psql -c "VACUUM ANALYZE ${s}_t" >/dev/null
    growth_measure "merge, replay" "$n" "SELECT * FROM idem.merge('${s}_t', '$s')"
    growth_measure "merge, 10% changed" "$n" "SELECT * FROM idem.merge('${s}_t', '${s}_chg')"
    growth_measure "checksum" "$n" "SELECT idem.checksum('$s')"
    growth_measure "snapshot, first load" "$n" "SELECT * FROM idem.snapshot('${s}_h', '$s', key => '{id}')"
    bench_psql -c "VACUUM ANALYZE ${s}_h" >/dev/null
    growth_measure "snapshot, replay" "$n" "SELECT * FROM idem.snapshot('${s}_h', '$s', key => '{id}')"
    growth_measure "snapshot, 10% changed" "$n" "SELECT * FROM idem.snapshot('${s}_h', '${s}_chg', key => '{id}')"
    growth_measure "append, first load" "$n" "SELECT * FROM idem.append('${s}_a', '$s')"
    bench_psql -c "VACUUM ANALYZE ${s}_a" >/dev/null
    growth_measure "append, replay" "$n" "SELECT * FROM idem.append('${s}_a', '$s')"
    bench_psql -c "DROP TABLE $s, ${s}_chg, ${s}_t, ${s}_h, ${s}_a; CHECKPOINT;" >/dev/null
done

report ""
report "One run per case and size, each in a fresh backend: its time (ms) and its private memory growth (peak RssAnon while it ran less RssAnon before; kB). The tables: \`bench_standard_table\` (id bigint primary key, qty, amount, label, created), the same with qty + 1 in every tenth row (10% changed), a merge target and an append target of the same shape and a history table (\`snapshot_prepare\`), all empty before the first load. Slope: log(time at $(bench_rows "$growth_big") / time at $(bench_rows "$growth_small")) / log($growth_big / $growth_small); 1 is linear."
report ""
header="| case |"
rule="|---|"
for n in "${growth_sizes[@]}"; do
    header+=" $(bench_rows "$n"): ms | memory kB |"
    rule+="---:|---:|"
done
report "$header slope |"
report "$rule---:|"
growth_slopes=()
for c in "${growth_cases[@]}"; do
    row="| $c |"
    for n in "${growth_sizes[@]}"; do
        read -r ms kb < <(bench_psql -F ' ' -c "SELECT round(ms::numeric, 1), peak_kb - baseline_kb FROM bench_.growth WHERE name = '$c' AND size = $n")
        row+=" $ms | $kb |"
    done
    slope=$(bench_psql -c "SELECT round((ln(b.ms / a.ms) / ln($growth_big::float8 / $growth_small))::numeric, 2)
        FROM bench_.growth a, bench_.growth b WHERE a.name = '$c' AND b.name = '$c' AND a.size = $growth_small AND b.size = $growth_big")
    report "$row $slope |"
    growth_slopes+=("$c|$slope")
done

bench_goal_begin
for entry in "${growth_slopes[@]}"; do
    c=${entry%%|*} slope=${entry##*|}
    bench_goal "$c: time, log-log slope $(bench_rows "$growth_small") to $(bench_rows "$growth_big")" "$slope" "<=" 1.05
done
for c in "${growth_cases[@]}"; do
    read -r small big < <(bench_psql -F ' ' -c "SELECT (SELECT peak_kb - baseline_kb FROM bench_.growth WHERE name = '$c' AND size = $growth_small),
                                                      (SELECT peak_kb - baseline_kb FROM bench_.growth WHERE name = '$c' AND size = $growth_big)")
    bench_goal "$c: private memory growth at $(bench_rows "$growth_big") rows ($(bench_rows "$growth_small"): $small kB, + 4 MB)" "$big" "<=" "$((small + 4096))" " kB"
done

bench_psql >/dev/null <<'SQL'
ALTER SYSTEM RESET autovacuum;
SELECT pg_reload_conf();
SQL
