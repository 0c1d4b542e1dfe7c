# Sourced by bench/run.sh (bench/lib.sh loaded, PGDATABASE has the extension).
#
# Bound parameters (params => idem.params(...), docs/reference.md) against
# the same call with the values spliced into the SQL text, as a user did
# before 0.9.0 with format(%L) or an f-string: a merge_query that finds
# every row unchanged (the query is read in full, the target probed), and a
# checksum_query, at each size of BENCH_SIZES. The values select the second
# half of the table (created >= a timestamptz, qty < an int). Goal at the
# largest size: the bound call within 5% of the spliced one.

sizes=("${BENCH_SIZE_LIST[@]}")
big=p_$(bench_size_name "$BENCH_SIZE_MAX")
say "loading $(bench_rows "$BENCH_SIZE_MAX") rows ($big) and the merge targets"
{ bench_standard_table "$big" "$BENCH_SIZE_MAX"
  for n in "${sizes[@]}"; do
      src=p_$(bench_size_name "$n")
      if [ "$src" != "$big" ]; then
          echo "CREATE TABLE $src (LIKE $big INCLUDING ALL);"
          echo "INSERT INTO $src SELECT * FROM $big WHERE id <= $n;"
      fi
      echo "CREATE TABLE ${src}_target (LIKE $big INCLUDING ALL);"
      echo "INSERT INTO ${src}_target SELECT * FROM $src;"
      echo "VACUUM ANALYZE $src, ${src}_target;"
  done
} | bench_psql

report ""
report "Tables \`p_<size>\` as the standard table (id bigint primary key, qty, amount, label, created), each merged into a copy of itself (\`p_<size>_target\`), so every row is unchanged. The half of each table from its middle \`created\` on:"
report ""
report "- \`bound\`: the values in \`params => idem.params(...)\`, the query's \`\$1\` and \`\$2\`"
report "- \`spliced\`: the same values written into the query's text as literals"

for n in "${sizes[@]}"; do
    src=p_$(bench_size_name "$n")
    mid=$(bench_psql -c "SELECT created FROM $src WHERE id = $((n / 2))")
    q_bound="SELECT * FROM $src WHERE created >= \$1 AND qty < \$2"
    q_spliced="SELECT * FROM $src WHERE created >= '$mid'::timestamptz AND qty < 100003"
    p="idem.params('$mid'::timestamptz, 100003)"
    report ""
    report "### $(bench_rows "$n") rows (\`$src\`)"
    bench_compare "params_merge_$n" \
        spliced "SELECT * FROM idem.merge_query('${src}_target', \$q\$$q_spliced\$q\$, key => '{id}')" \
        bound "SELECT * FROM idem.merge_query('${src}_target', \$q\$$q_bound\$q\$, key => '{id}', params => $p)"
    bench_tsv params "merge_query replay, bound vs spliced" "$n" "${BENCH_MEDIAN[bound]}" "${BENCH_MEDIAN[spliced]}" \
        "idem.merge_query, params" "idem.merge_query, values in the text"
    merge_bound=${BENCH_MEDIAN[bound]}
    merge_spliced=${BENCH_MEDIAN[spliced]}
    bench_compare "params_checksum_$n" \
        spliced "SELECT idem.checksum_query(\$q\$$q_spliced\$q\$)" \
        bound "SELECT idem.checksum_query(\$q\$$q_bound\$q\$, $p)"
    bench_tsv params "checksum_query, bound vs spliced" "$n" "${BENCH_MEDIAN[bound]}" "${BENCH_MEDIAN[spliced]}" \
        "idem.checksum_query, params" "idem.checksum_query, values in the text"
done

at="$(bench_size_label "$BENCH_SIZE_MAX") rows"
bench_goal_begin
bench_goal "merge_query replay, bound / spliced, $at" "$(bench_ratio "$merge_bound" "$merge_spliced")" "<=" 1.05 x
bench_goal "checksum_query, bound / spliced, $at" "$(bench_ratio "${BENCH_MEDIAN[bound]}" "${BENCH_MEDIAN[spliced]}")" "<=" 1.05 x
