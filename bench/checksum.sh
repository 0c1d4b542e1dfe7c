# Sourced by bench/run.sh (bench/lib.sh loaded, PGDATABASE has the extension).
#
# idem.checksum on a 5-column table of each size in BENCH_SIZES (10k, 100k,
# 1M rows by default) against what a user would hand-write, and against the
# floor: reading and detoasting every column with next to no per-row work.
# Then the backend's memory while checksumming each size: it must not grow
# with the table. The goals are checked at the largest size.

sizes=("${BENCH_SIZE_LIST[@]}")
big=t_$(bench_size_name "$BENCH_SIZE_MAX")

say "loading $(bench_rows "$BENCH_SIZE_MAX") rows ($big) and copies of its first rows for the other sizes"
{ bench_standard_table "$big" "$BENCH_SIZE_MAX"
  for n in "${sizes[@]}"; do
      tbl=t_$(bench_size_name "$n")
      if [ "$tbl" != "$big" ]; then
          echo "CREATE TABLE $tbl (LIKE $big INCLUDING ALL);"
          echo "INSERT INTO $tbl SELECT * FROM $big WHERE id <= $n;"
      fi
      echo "VACUUM ANALYZE $tbl;"
  done
} | bench_psql

tables_desc=""
for n in "${sizes[@]}"; do
    tbl=t_$(bench_size_name "$n")
    tables_desc+="${tables_desc:+; }\`$tbl\`: $(bench_psql -c "SELECT to_char(count(*), 'FM9,999,999,999') || ' rows, ' || pg_size_pretty(pg_table_size('$tbl')) || ' heap' FROM $tbl")"
done
report ""
report "Tables of each size, the first rows of the largest: $tables_desc (id bigint primary key, qty int, amount numeric(12,2), label text of $(bench_psql -c "SELECT min(length(label)) || '-' || max(length(label)) FROM $big") chars, created timestamptz; VACUUM ANALYZEd)."

# What the hand-written queries run as (a user gets parallel workers if the
# planner picks them; idem.checksum reads in one process). The planner's
# choice depends on the table's size.
plan_of() {
    bench_psql -c "EXPLAIN (COSTS OFF) $1" | awk '
        /Gather/ { gather = 1 } /Workers Planned/ { w = $NF }
        END { if (gather) print "parallel, " w " workers planned"; else print "serial" }'
}

report ""
report "Variants (\`T\` is the table of the size; \`t\` its alias):"
report ""
report "- \`checksum\`: \`SELECT idem.checksum('T')\`"
report "- (a) \`md5_agg\`: hand-written ordered checksum, \`SELECT md5(string_agg(t::text, '' ORDER BY id)) FROM T t\` (its sort runs in work_mem and spills beyond it)"
report "- (b) \`sum_hashtext\`: hand-written order-independent checksum (32-bit hashes, collides), \`SELECT sum(hashtext(t::text)) FROM T t\`"
report "- (c) \`floor_copy\`: the floor, \`COPY T TO '/dev/null' (FORMAT binary)\`: reads, detoasts and sends every column with no text conversion and no hashing"
report "- \`count_not_null\`: extra reference, \`SELECT count(*) FROM T t WHERE t IS NOT NULL\`, a scan that deforms every row (does not detoast)"

for n in "${sizes[@]}"; do
    tbl=t_$(bench_size_name "$n")
    q_md5="SELECT md5(string_agg(t::text, '' ORDER BY id)) FROM $tbl t"
    q_hash="SELECT sum(hashtext(t::text)) FROM $tbl t"
    q_cnt="SELECT count(*) FROM $tbl t WHERE t IS NOT NULL"
    report ""
    report "### $(bench_rows "$n") rows (\`$tbl\`)"
    bench_compare "checksum_$n" \
        checksum       "SELECT idem.checksum('$tbl')" \
        md5_agg        "$q_md5" \
        sum_hashtext   "$q_hash" \
        floor_copy     "COPY $tbl TO '/dev/null' (FORMAT binary)" \
        count_not_null "$q_cnt"
    report ""
    report "Plans at this size: md5_agg $(plan_of "$q_md5"); sum_hashtext $(plan_of "$q_hash"); count_not_null $(plan_of "$q_cnt")."
    bench_tsv checksum "vs ordered md5(string_agg)" "$n" "${BENCH_MEDIAN[checksum]}" "${BENCH_MEDIAN[md5_agg]}" \
        "idem.checksum" "md5(string_agg(t::text ORDER BY id))"
    bench_tsv checksum "vs sum(hashtext)" "$n" "${BENCH_MEDIAN[checksum]}" "${BENCH_MEDIAN[sum_hashtext]}" \
        "idem.checksum" "sum(hashtext(t::text))"
done

# The goals, at the largest size (the medians of the last comparison).
c=${BENCH_MEDIAN[checksum]}
at="$(bench_size_label "$BENCH_SIZE_MAX") rows"
bench_goal_begin
bench_goal "speed-up of checksum over (a) md5(string_agg), $at" "$(bench_ratio "${BENCH_MEDIAN[md5_agg]}" "$c")" ">=" 8 x
bench_goal "speed-up of checksum over (b) sum(hashtext), $at" "$(bench_ratio "${BENCH_MEDIAN[sum_hashtext]}" "$c")" ">=" 2 x
bench_goal "checksum time / floor (c) COPY binary, $at" "$(bench_ratio "$c" "${BENCH_MEDIAN[floor_copy]}")" "<=" 2 x

# Memory: a fresh backend per measurement; md5(string_agg) is measured the
# same way as a control (its memory does grow with the table), so the probe
# is shown to see growth when there is some.
say "memory: checksum and md5(string_agg) at every size"
report ""
report "### Backend memory"
report ""
report "| statement | rows | RssAnon before | peak RssAnon while running | growth | VmHWM after |"
report "|---|---:|---:|---:|---:|---:|"
declare -A mem_growth=()
for stmt in checksum md5_agg; do
    for n in "${sizes[@]}"; do
        tbl=t_$(bench_size_name "$n")
        case $stmt in
            checksum) sql="SELECT idem.checksum('$tbl')" ;;
            md5_agg)  sql="SELECT md5(string_agg(t::text, '' ORDER BY id)) FROM $tbl t" ;;
        esac
        read -r base peak hwm < <(bench_peak_memory "$sql")
        growth=$((peak - base))
        mem_growth[$stmt.$n]=$growth
        report "| \`$stmt\` | $(bench_rows "$n") | $base kB | $peak kB | $growth kB | $hwm kB |"
    done
done
report ""
report "RssAnon (private memory: palloc, malloc, sort space) sampled every ~5 ms from /proc/PID/status of the backend; VmHWM is the kernel's exact peak resident set but also counts the shared buffers the scan touched, so it is not a measure of the function's own memory."

# Constant memory: the largest size may cost at most 1 MB (page-granular
# noise) more private memory than the smallest, beyond 10% of the smallest's
# growth.
small=${mem_growth[checksum.$BENCH_SIZE_MIN]}
large=${mem_growth[checksum.$BENCH_SIZE_MAX]}
allowed=$(( small + small / 10 + 1024 ))
bench_goal_begin
bench_goal "checksum private memory growth, $at ($(bench_size_label "$BENCH_SIZE_MIN") rows: $small kB)" "$large" "<=" "$allowed" " kB"
