# Sourced by bench/run.sh before each benchmark script. The timing and
# reporting helpers every benchmark shares; bench/README.md explains how to
# add one.
#
# Timings are taken inside the server: bench_.time_ms(sql) reads
# clock_timestamp() around an EXECUTE, so neither psql nor the socket is in
# the numbers. Each timed statement is its own top-level statement (its own
# transaction), the variants of a comparison run round-robin, and the start
# of each round rotates so no variant always runs first or after the same
# neighbour.

BENCH_ROUNDS=${BENCH_ROUNDS:-7}
BENCH_WARMUP=${BENCH_WARMUP:-1}

# bench_names: the benchmarks, one name per line: every bench/NAME.sh but
# the tools (run.sh, lib.sh, report.sh, compare.sh). From the repository.
bench_names() {
    local f name
    for f in bench/*.sh; do
        name=$(basename "$f" .sh)
        case "$name" in run | lib | report | compare) continue ;; esac
        echo "$name"
    done
}

# The table sizes every benchmark measures at (rows; for claim, the keys
# already in the table): BENCH_SIZES, ascending and without repeats in
# BENCH_SIZE_LIST. Small sizes make a quick run; the report's chart is
# log-log, so sizes a factor of 10 apart show growth best.
bench_parse_sizes() {
    local n
    for n in ${BENCH_SIZES:-10000 100000 1000000}; do
        if ! [[ "$n" =~ ^[1-9][0-9]*$ ]] || [ "$n" -lt 100 ] || [ "$n" -gt 100000000 ]; then
            echo "BENCH_SIZES: '$n' is not a row count from 100 to 100000000" >&2
            return 1
        fi
    done
    mapfile -t BENCH_SIZE_LIST < <(printf '%s\n' ${BENCH_SIZES:-10000 100000 1000000} | sort -n -u)
    [ ${#BENCH_SIZE_LIST[@]} -gt 0 ] || { echo "BENCH_SIZES is empty" >&2; return 1; }
    BENCH_SIZE_MAX=${BENCH_SIZE_LIST[-1]}
    BENCH_SIZE_MIN=${BENCH_SIZE_LIST[0]}
}

# bench_size_label N: 10k, 1M, 2500 (for headings, goals, the chart).
bench_size_label() {
    if [ $(($1 % 1000000)) -eq 0 ]; then echo "$(($1 / 1000000))M"
    elif [ $(($1 % 1000)) -eq 0 ]; then echo "$(($1 / 1000))k"
    else echo "$1"
    fi
}

# bench_size_name N: the label in lower case, for table and variant names
# (t_10k, ds_1m).
bench_size_name() {
    local l
    l=$(bench_size_label "$1")
    echo "${l,,}"
}

# bench_rows N: 1,000,000.
bench_rows() {
    echo "$1" | sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/' -e 'ta'
}

# bench_tsv BENCH CASE SIZE OURS_MS HANDWRITTEN_MS OURS HANDWRITTEN: one row
# of the machine-readable results (bench/results/latest.tsv), which
# bench/report.sh turns into the size tables and the chart. OURS_MS is the
# median of the pg_idempotent function, HANDWRITTEN_MS that of the SQL a
# user would write instead, both in ms; NA when it did not run (e.g. a
# timeout). OURS and HANDWRITTEN name the two, short, for the chart's key.
bench_tsv() {
    local ratio=NA f
    if [[ "$4" =~ ^[0-9.]+$ ]] && [[ "$5" =~ ^[0-9.]+$ ]]; then
        ratio=$(awk -v a="$4" -v b="$5" 'BEGIN { if (b == 0) print "NA"; else printf "%.3f", a / b }')
    fi
    local fields=("$1" "$2" "$3" "$4" "$5" "$ratio" "$6" "$7") out=""
    for f in "${fields[@]}"; do
        f=${f//$'\t'/ }; f=${f//$'\n'/ }
        out+="${out:+$'\t'}$f"
    done
    printf '%s\n' "$out" >>"$BENCH_TSV"
}

# psql for scripts: no psqlrc, unaligned tuples only, stop on the first error.
bench_psql() {
    psql -X -q -At -v ON_ERROR_STOP=1 "$@"
}

# Appends to the report (bench/results/latest.md) and to stdout.
report() {
    printf '%s\n' "$*" | tee -a "$BENCH_REPORT"
}

# Progress on stderr, not in the report.
say() {
    printf '  .. %s\n' "$*" >&2
}

# The timer and the sample store; run.sh calls this once per cluster.
bench_setup_timer() {
    bench_psql <<'SQL'
CREATE SCHEMA bench_;
CREATE TABLE bench_.samples (suite text, variant text, round int, ms float8);
CREATE FUNCTION bench_.time_ms(q text) RETURNS float8
LANGUAGE plpgsql AS $f$
DECLARE
    t0 timestamptz;
BEGIN
    t0 := clock_timestamp();
    EXECUTE q;
    RETURN extract(epoch FROM clock_timestamp() - t0) * 1000;
END
$f$;

-- Session A: once a backend waits for a lock on rel (pg_locks, and
-- pg_stat_activity says Lock), returns the time and that backend's
-- schedstat ("ns-on-CPU ns-in-run-queue"); fails after timeout_s.
CREATE FUNCTION bench_.await_lock_waiter(rel regclass, timeout_s float8) RETURNS text
LANGUAGE plpgsql AS $f$
DECLARE
    t0 timestamptz := clock_timestamp();
    waiter int;
BEGIN
    LOOP
        PERFORM pg_stat_clear_snapshot();  -- pg_stat_activity is cached per transaction
        SELECT l.pid INTO waiter FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.relation = rel AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND NOT l.granted AND a.wait_event_type = 'Lock'
        LIMIT 1;
        IF waiter IS NOT NULL THEN
            RETURN clock_timestamp() || '|' || bench_.schedstat(waiter);
        END IF;
        IF clock_timestamp() - t0 > timeout_s * interval '1 second' THEN
            RAISE EXCEPTION 'no backend waits for a lock on % after % s', rel, timeout_s;
        END IF;
        PERFORM pg_sleep(0.001);
    END LOOP;
END
$f$;

-- "ns-on-CPU|ns-in-run-queue" of a backend, from /proc/PID/schedstat.
CREATE FUNCTION bench_.schedstat(pid int) RETURNS text
LANGUAGE sql AS $f$
    SELECT split_part(s, ' ', 1) || '|' || split_part(s, ' ', 2)
    FROM pg_read_file('/proc/' || pid || '/schedstat') AS s
$f$;

-- WAL, buffers and time of one statement, from EXPLAIN (ANALYZE, WAL, BUFFERS):
-- the top node's counters include the SPI statements a function runs.
CREATE FUNCTION bench_.explain_counters(sql text, OUT wal_records bigint, OUT wal_fpi bigint,
                                        OUT wal_bytes bigint, OUT dirtied bigint, OUT written bigint,
                                        OUT ms numeric, OUT blocks bigint)
LANGUAGE plpgsql AS $f$
DECLARE
    plan json;
BEGIN
    EXECUTE 'EXPLAIN (ANALYZE, WAL, BUFFERS, FORMAT JSON) ' || sql INTO plan;
    wal_records := coalesce((plan->0->'Plan'->>'WAL Records')::bigint, 0);
    wal_fpi     := coalesce((plan->0->'Plan'->>'WAL FPI')::bigint, 0);
    wal_bytes   := coalesce((plan->0->'Plan'->>'WAL Bytes')::bigint, 0);
    dirtied     := coalesce((plan->0->'Plan'->>'Shared Dirtied Blocks')::bigint, 0)
                 + coalesce((plan->0->'Plan'->>'Local Dirtied Blocks')::bigint, 0);
    written     := coalesce((plan->0->'Plan'->>'Shared Written Blocks')::bigint, 0)
                 + coalesce((plan->0->'Plan'->>'Local Written Blocks')::bigint, 0)
                 + coalesce((plan->0->'Plan'->>'Temp Written Blocks')::bigint, 0);
    ms          := round((plan->0->>'Execution Time')::numeric, 1);
    -- Pages read or found in shared buffers (parallel workers' included).
    blocks      := coalesce((plan->0->'Plan'->>'Shared Hit Blocks')::bigint, 0)
                 + coalesce((plan->0->'Plan'->>'Shared Read Blocks')::bigint, 0)
                 + coalesce((plan->0->'Plan'->>'Local Hit Blocks')::bigint, 0)
                 + coalesce((plan->0->'Plan'->>'Local Read Blocks')::bigint, 0);
END
$f$;

-- Runs a query to its end and discards its rows in the server (EXPLAIN
-- ANALYZE sends them nowhere: no copy, no client): the cost of running
-- the query itself, for a baseline.
CREATE FUNCTION bench_.run_discarding(q text) RETURNS void
LANGUAGE plpgsql AS $f$
BEGIN
    EXECUTE 'EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF, SUMMARY OFF) ' || q;
END
$f$;
SQL
}

# bench_compare SUITE NAME SQL [NAME SQL]...
# Times every SQL BENCH_WARMUP times untimed, then BENCH_ROUNDS rounds,
# round-robin. Sets BENCH_MEDIAN[NAME] (milliseconds) and prints the timing
# table to the report: median, min, max, and the ratio to the first variant.
#
# BENCH_RESET[NAME]=SQL, when set, runs untimed right before each of NAME's
# statements (warm-up too), as separate top-level statements of the same
# session, so that every round measures the same work (e.g. TRUNCATE, reload,
# VACUUM, CHECKPOINT). Set it before bench_compare, clear it after
# (BENCH_RESET=()).
declare -A BENCH_MEDIAN=()
declare -A BENCH_RESET=()
bench_compare() {
    local suite=$1; shift
    local names=() sqls=()
    while [ $# -gt 0 ]; do
        names+=("$1"); sqls+=("$2"); shift 2
    done
    local n=${#names[@]} i r k script
    for ((i = 0; i < n; i++)); do
        if [[ "${sqls[i]}" == *'$bench$'* ]]; then
            echo "bench_compare: SQL of ${names[i]} must not contain \$bench\$" >&2; return 1
        fi
    done
    script="DELETE FROM bench_.samples WHERE suite = '$suite';"$'\n'
    for ((r = 1 - BENCH_WARMUP; r <= BENCH_ROUNDS; r++)); do
        for ((k = 0; k < n; k++)); do
            i=$(( (k + r + n * 1000) % n ))
            if [ -n "${BENCH_RESET[${names[i]}]:-}" ]; then
                script+="${BENCH_RESET[${names[i]}]}"$'\n'
            fi
            script+="INSERT INTO bench_.samples SELECT '$suite', '${names[i]}', $r, bench_.time_ms(\$bench\$${sqls[i]}\$bench\$);"$'\n'
        done
    done
    script+="DELETE FROM bench_.samples WHERE suite = '$suite' AND round < 1;"$'\n'
    say "$suite: $n variants, $BENCH_WARMUP warm-up + $BENCH_ROUNDS timed rounds"
    bench_psql <<<"$script"

    local rows name med min max
    local -A vmin=() vmax=()
    # Three decimals: at small sizes a statement takes well under a
    # millisecond, and the ratios must not come from rounded values.
    rows=$(bench_psql -F ' ' -c "
        SELECT variant,
               round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 3),
               round(min(ms)::numeric, 3), round(max(ms)::numeric, 3)
        FROM bench_.samples WHERE suite = '$suite' GROUP BY variant")
    while read -r name med min max; do
        BENCH_MEDIAN[$name]=$med
        vmin[$name]=$min
        vmax[$name]=$max
    done <<<"$rows"

    local first=${names[0]}
    report ""
    report "| variant | statement | median ms | min ms | max ms | median / ${first} |"
    report "|---|---|---:|---:|---:|---:|"
    for ((i = 0; i < n; i++)); do
        name=${names[i]}
        report "| $name | \`${sqls[i]}\` | $(bench_ms "${BENCH_MEDIAN[$name]}") | $(bench_ms "${vmin[$name]}") | $(bench_ms "${vmax[$name]}") | $(bench_ratio "${BENCH_MEDIAN[$name]}" "${BENCH_MEDIAN[$first]}")x |"
    done
    report ""
    report "Samples per variant: $BENCH_ROUNDS timed rounds after $BENCH_WARMUP warm-up round(s)."
}

# bench_ms MS: milliseconds for the report, two decimals below 10 ms, one
# above.
# bench_paired_ratio SUITE A B: the median over the rounds of suite SUITE
# (run by bench_compare) of A's time divided by B's in the same round:
# interleaved, so load from outside that comes and goes moves both sides of
# a round alike.
bench_paired_ratio() {
    bench_psql -c "
        SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY a.ms / b.ms)::numeric, 3)
        FROM bench_.samples a JOIN bench_.samples b ON b.suite = a.suite AND b.round = a.round
        WHERE a.suite = '$1' AND a.variant = '$2' AND b.variant = '$3'"
}

# bench_round_ratios SUITE A B: A's time divided by B's in each round of
# suite SUITE, in round order (two decimals, space-separated): the report
# shows them beside a goal on medians, so a run whose rounds fall in two
# modes can be read as such.
bench_round_ratios() {
    bench_psql -c "
        SELECT string_agg(to_char(a.ms / b.ms, 'FM990.00'), ' ' ORDER BY a.round)
        FROM bench_.samples a JOIN bench_.samples b ON b.suite = a.suite AND b.round = a.round
        WHERE a.suite = '$1' AND a.variant = '$2' AND b.variant = '$3'"
}

# bench_work_mem_bound_kb: the private memory a statement's work_mem-bounded
# steps may hold at any table size, in kB: four hash tables' worth (work_mem
# x hash_mem_multiplier each; sorts and tuplestores stop at work_mem) and
# 2 MB of page-granular noise. The memory goals of snapshot and growth.
bench_work_mem_bound_kb() {
    bench_psql -c "SELECT (4 * pg_size_bytes(current_setting('work_mem'))
                           * current_setting('hash_mem_multiplier')::float8 / 1024)::bigint + 2048"
}

bench_ms() {
    awk -v v="$1" 'BEGIN { printf (v < 10 ? "%.2f" : "%.1f"), v }'
}

# bench_ratio A B: A / B with two decimals.
bench_ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "inf"; else printf "%.2f", a / b }'
}

# Goals: bench_goal_begin, then bench_goal WHAT MEASURED OP TARGET [UNIT], with
# OP one of >= <=. A missed goal is printed as such, and counted in
# BENCH_GOALS_MISSED (run.sh reports the total; it does not fail the run).
BENCH_GOALS_MISSED=${BENCH_GOALS_MISSED:-0}
bench_goal_begin() {
    report ""
    report "| goal | measured | target | met |"
    report "|---|---:|---:|:---:|"
}
bench_goal() {
    local what=$1 measured=$2 op=$3 target=$4 unit=${5:-}
    local ok
    ok=$(awk -v m="$measured" -v t="$target" -v op="$op" \
        'BEGIN { print ((op == ">=" && m >= t) || (op == "<=" && m <= t)) ? "yes" : "no" }')
    if [ "$ok" = no ]; then
        BENCH_GOALS_MISSED=$((BENCH_GOALS_MISSED + 1))
        ok="**NO**"
    fi
    report "| $what | $measured$unit | $op $target$unit | $ok |"
}

# bench_peak_memory SQL: runs SQL in a fresh backend while sampling that
# backend's /proc/PID/status every few milliseconds; prints
#   "BASELINE_KB PEAK_KB HWM_KB"
# BASELINE_KB: RssAnon once connected and warmed up (SELECT 1), before SQL;
# PEAK_KB: the highest RssAnon seen while SQL ran (private memory: palloc,
# malloc, sort space; shared buffers are not in it);
# HWM_KB: VmHWM after SQL, the kernel's exact peak of the whole resident set,
# which also counts every shared-buffer page the backend touched.
bench_peak_memory() {
    local sql=$1 dir pid line
    dir=$(mktemp -d /tmp/pg_idempotent-bench.XXXXXX)
    mkfifo "$dir/in" "$dir/out" "$dir/sleep"
    # read -t on a fifo nobody writes to: a sleep that does not fork.
    exec {sleeper}<>"$dir/sleep"
    bench_psql <"$dir/in" >"$dir/out" 2>&1 &
    local psql_pid=$!
    exec {to_psql}>"$dir/in" {from_psql}<"$dir/out"
    echo "SELECT 1; SELECT pg_backend_pid();" >&$to_psql
    read -r line <&$from_psql
    read -r pid <&$from_psql
    if ! [[ "$pid" =~ ^[0-9]+$ ]] || [ ! -r "/proc/$pid/status" ]; then
        echo "bench_peak_memory: cannot read /proc/$pid/status (got '$line' '$pid')" >&2
        exec {to_psql}>&- {from_psql}<&- {sleeper}<&-; wait "$psql_pid" || true; rm -rf "$dir"
        return 1
    fi
    local baseline
    bench_status_kb "$pid" RssAnon; baseline=$BENCH_KB
    ( peak=0
      while [ ! -e "$dir/done" ] && bench_status_kb "$pid" RssAnon; do
          [ "$BENCH_KB" -gt "$peak" ] && peak=$BENCH_KB
          read -r -t 0.005 <&$sleeper || true
      done
      echo "$peak" >"$dir/peak" ) &
    local sampler=$!
    echo "$sql; SELECT 'bench-done';" >&$to_psql
    local done=no out=""
    while read -r line <&$from_psql; do
        [ "$line" = bench-done ] && { done=yes; break; }
        out+="$line"$'\n'
    done
    local hwm last
    bench_status_kb "$pid" VmHWM; hwm=$BENCH_KB
    bench_status_kb "$pid" RssAnon; last=$BENCH_KB
    touch "$dir/done"
    wait "$sampler"
    exec {to_psql}>&- {from_psql}<&- {sleeper}<&-
    wait "$psql_pid" || true
    if [ "$done" != yes ]; then
        echo "bench_peak_memory: the statement failed: $out" >&2
        rm -rf "$dir"; return 1
    fi
    local peak
    peak=$(cat "$dir/peak")
    [ "$last" -gt "$peak" ] && peak=$last
    rm -rf "$dir"
    echo "$baseline $peak $hwm"
}

# bench_status_kb PID FIELD: sets BENCH_KB to a kB field of /proc/PID/status
# without forking (the sampler runs it every few milliseconds); fails once
# the process is gone.
bench_status_kb() {
    local key val _
    BENCH_KB=
    while read -r key val _; do
        if [ "$key" = "$2:" ]; then BENCH_KB=$val; return 0; fi
    done 2>/dev/null <"/proc/$1/status" || return 1
    return 1
}

# bench_standard_table NAME ROWS: the SQL that creates and fills the 5-column
# table the benchmarks share (id bigint primary key, qty int, amount
# numeric(12,2), label text of 20-40 characters, created timestamptz).
bench_standard_table() {
    cat <<SQL
CREATE TABLE $1 (
    id      bigint PRIMARY KEY,
    qty     int NOT NULL,
    amount  numeric(12,2) NOT NULL,
    label   text NOT NULL,           -- 20 to 40 characters
    created timestamptz NOT NULL
);
INSERT INTO $1
SELECT g,
       (g * 7919) % 100003,
       ((g * 104729) % 10000000) / 100.0,
       left(md5(g::text) || md5((-g)::text), 20 + (g % 21)::int),
       timestamptz '2024-01-01 00:00+00' + g * interval '17 seconds'
FROM generate_series(1::bigint, $2) g;
SQL
}
