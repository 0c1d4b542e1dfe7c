# Sourced by bench/run.sh (bench/lib.sh loaded, PGDATABASE has the extension).
#
# idem.checksum on a 1,000,000-row, 5-column table against what a user would
# hand-write, and against the floor: reading and detoasting every column with
# next to no per-row work. Then the backend's memory while checksumming 100k
# and 1M rows: it must not grow with the table.

say "loading 1,000,000 rows (and a 100,000-row copy)"
{ bench_standard_table t 1000000; cat <<'SQL'
CREATE TABLE t_100k (LIKE t INCLUDING ALL);
INSERT INTO t_100k SELECT * FROM t WHERE id <= 100000;
VACUUM ANALYZE t;
VACUUM ANALYZE t_100k;
SQL
} | bench_psql

report ""
report "Table \`t\`: $(bench_psql -F ' ' -c "
    SELECT to_char(count(*), 'FM9,999,999') || ' rows, '
           || pg_size_pretty(pg_table_size('t')) || ' heap, label '
           || min(length(label)) || '-' || max(length(label)) || ' chars'
    FROM t") (id bigint primary key, qty int, amount numeric(12,2), label text, created timestamptz; VACUUM ANALYZEd)."

# What the hand-written queries run as (a user gets parallel workers if the
# planner picks them; idem.checksum reads in one process).
plan_of() {
    bench_psql -c "EXPLAIN (COSTS OFF) $1" | awk '
        /Gather/ { gather = 1 } /Workers Planned/ { w = $NF }
        END { if (gather) print "parallel, " w " workers planned"; else print "serial" }'
}

bench_compare checksum \
    checksum       "SELECT idem.checksum('t')" \
    md5_agg        "SELECT md5(string_agg(t::text, '' ORDER BY id)) FROM t" \
    sum_hashtext   "SELECT sum(hashtext(t::text)) FROM t" \
    floor_copy     "COPY t TO '/dev/null' (FORMAT binary)" \
    count_not_null "SELECT count(*) FROM t WHERE t IS NOT NULL"

report ""
report "- (a) \`md5_agg\`: hand-written ordered checksum; plan: $(plan_of "SELECT md5(string_agg(t::text, '' ORDER BY id)) FROM t") (its sort runs in work_mem and spills beyond it)"
report "- (b) \`sum_hashtext\`: hand-written order-independent checksum (32-bit hashes, collides); plan: $(plan_of "SELECT sum(hashtext(t::text)) FROM t")"
report "- (c) \`floor_copy\`: the floor, \`COPY ... (FORMAT binary)\` to /dev/null: reads, detoasts and sends every column with no text conversion and no hashing"
report "- \`count_not_null\`: extra reference, a scan that deforms every row (does not detoast); plan: $(plan_of "SELECT count(*) FROM t WHERE t IS NOT NULL")"

c=${BENCH_MEDIAN[checksum]}
bench_goal_begin
bench_goal "speed-up of checksum over (a) md5(string_agg)" "$(bench_ratio "${BENCH_MEDIAN[md5_agg]}" "$c")" ">=" 8 x
bench_goal "speed-up of checksum over (b) sum(hashtext)" "$(bench_ratio "${BENCH_MEDIAN[sum_hashtext]}" "$c")" ">=" 2 x
bench_goal "checksum time / floor (c) COPY binary" "$(bench_ratio "$c" "${BENCH_MEDIAN[floor_copy]}")" "<=" 2 x

# Memory: a fresh backend per measurement; md5(string_agg) is measured the
# same way as a control (its memory does grow with the table), so the probe
# is shown to see growth when there is some.
say "memory: checksum and md5(string_agg) at 100k and 1M rows"
report ""
report "### Backend memory"
report ""
report "| statement | rows | RssAnon before | peak RssAnon while running | growth | VmHWM after |"
report "|---|---:|---:|---:|---:|---:|"
declare -A mem_growth=()
for stmt in checksum md5_agg; do
    for table in t_100k t; do
        case $stmt in
            checksum) sql="SELECT idem.checksum('$table')" ;;
            md5_agg)  sql="SELECT md5(string_agg($table::text, '' ORDER BY id)) FROM $table" ;;
        esac
        read -r base peak hwm < <(bench_peak_memory "$sql")
        growth=$((peak - base))
        mem_growth[$stmt.$table]=$growth
        rows=$([ "$table" = t ] && echo 1,000,000 || echo 100,000)
        report "| \`$stmt\` | $rows | $base kB | $peak kB | $growth kB | $hwm kB |"
    done
done
report ""
report "RssAnon (private memory: palloc, malloc, sort space) sampled every ~5 ms from /proc/PID/status of the backend; VmHWM is the kernel's exact peak resident set but also counts the shared buffers the scan touched, so it is not a measure of the function's own memory."

# Constant memory: 10x the rows may cost at most 1 MB (page-granular noise)
# more private memory than 100k rows, beyond 10% of the 100k growth.
small=${mem_growth[checksum.t_100k]}
large=${mem_growth[checksum.t]}
allowed=$(( small + small / 10 + 1024 ))
bench_goal_begin
bench_goal "checksum private memory growth, 1M rows (100k rows: $small kB)" "$large" "<=" "$allowed" " kB"
