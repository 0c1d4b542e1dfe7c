#!/usr/bin/env bash
# bench/report.sh [DIR]: the size section of the benchmark report, from the
# machine-readable results. `make bench` (bench/run.sh) runs it at the end;
# run it by hand to redraw the report from a results directory.
#
# Reads DIR/latest.tsv (default DIR: bench/results), one row per function,
# case and size:
#   bench  case  size  ours_ms  handwritten_ms  ratio  ours  handwritten
# (medians in ms; ratio = ours_ms / handwritten_ms; NA where a variant did
# not run). Writes
#   - DIR/latest.svg: one panel per function and case, pg_idempotent against
#     the hand-written SQL, median time against rows, both axes logarithmic
#     (a straight line of slope 1 is linear growth), each pg_idempotent
#     point labelled with its ratio to the hand-written SQL;
#   - the section "Cost against table size" of DIR/latest.md: the chart, the
#     table of every row of the TSV, and the growth of each from the
#     smallest size to the largest. The section sits between two marker
#     comments, right after the report's header; a rerun replaces it, and
#     the rest of the file is left as it is (a missing latest.md is
#     created with the section alone).
# BENCH_CHART_PNG=FILE also draws the chart as a PNG (pngcairo), to look at
# it where no SVG viewer is at hand.
#
# For the default DIR it also writes README.md's performance table (the
# largest size of every function and case) between README's two marker
# comments. `bench/report.sh --readme-table [DIR]` prints that table and
# nothing else: the docs suite compares it with README.md, so no figure in
# the README is typed by hand.
set -euo pipefail

readme_table_only=
if [ "${1:-}" = --readme-table ]; then readme_table_only=1; shift; fi

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${1:-$ROOT/bench/results}
TSV=$DIR/latest.tsv
MD=$DIR/latest.md
SVG=$DIR/latest.svg
BEGIN_MARK='<!-- bench/report.sh: size section begin (generated from latest.tsv; edits here are overwritten) -->'
END_MARK='<!-- bench/report.sh: size section end -->'

die() { echo "bench/report.sh: $*" >&2; exit 1; }

[ -r "$TSV" ] || die "no results: $TSV does not exist (run make bench)"
expected_header=$'bench\tcase\tsize\tours_ms\thandwritten_ms\tratio\tours\thandwritten'
[ "$(head -1 "$TSV")" = "$expected_header" ] ||
    die "$TSV: the first line is not the header '${expected_header//$'\t'/ }'"
# Every row: 8 fields, a size, and numbers (or NA) where numbers belong; a
# malformed row would otherwise draw a wrong chart without a word.
bad=$(awk -F'\t' 'NR > 1 && (NF != 8 || $3 !~ /^[0-9]+$/ ||
                             $4 !~ /^([0-9.]+|NA)$/ || $5 !~ /^([0-9.]+|NA)$/ || $6 !~ /^([0-9.]+|NA)$/) {
                      print "line " NR ": " $0 }' "$TSV" | head -3)
[ -z "$bad" ] || die "$TSV: malformed rows:"$'\n'"$bad"
# A run of benchmarks without a size table (BENCH_ONLY=history) has only
# the header: nothing to tabulate or draw, and nothing wrong.
if [ "$(wc -l <"$TSV")" -le 1 ]; then
    echo "bench/report.sh: $TSV has no per-size results; no size tables or chart" >&2
    exit 0
fi

# readme_table TSV: one row per function and case at its largest size.
readme_table() {
    awk -F'\t' '
        function rows(n,   s, out) {  # 1000000 -> 1,000,000 (mawk: no gensub)
            s = n ""; out = ""
            while (length(s) > 3) { out = "," substr(s, length(s) - 2) out; s = substr(s, 1, length(s) - 3) }
            return s out
        }
        function ms(v) { return v == "NA" ? "n/a" : sprintf("%.1f", v) }
        NR == 1 { next }
        {
            key = $1 SUBSEP $2
            if (!(key in at)) { order[++nk] = key }
            if (!(key in at) || $3 + 0 > size[key] + 0) { at[key] = $0; size[key] = $3 }
        }
        END {
            print "| function | case | rows | pg_idempotent ms | hand-written ms | ratio |"
            print "|---|---|---:|---:|---:|---:|"
            for (i = 1; i <= nk; i++) {
                split(at[order[i]], f, "\t")
                print "| " f[1] " | " f[2] " | " rows(f[3]) " | " ms(f[4]) " | " ms(f[5]) " | " \
                      (f[6] == "NA" ? "n/a" : sprintf("%.2fx", f[6])) " |"
            }
        }' "$1"
}
README_BEGIN='<!-- bench/report.sh: readme table begin (generated from bench/results/latest.tsv) -->'
README_END='<!-- bench/report.sh: readme table end -->'
if [ -n "$readme_table_only" ]; then
    readme_table "$TSV"
    exit 0
fi
if [ "$DIR" = "$ROOT/bench/results" ] && grep -qxF "$README_BEGIN" "$ROOT/README.md"; then
    readme_work=$(mktemp -d /tmp/pg_idempotent-readme.XXXXXX)
    readme_table "$TSV" >"$readme_work/table.md"
    awk -v begin_mark="$README_BEGIN" -v end_mark="$README_END" -v section="$readme_work/table.md" '
        $0 == begin_mark { print; while ((getline l < section) > 0) print l; skip = 1; next }
        $0 == end_mark { skip = 0 }
        !skip' "$ROOT/README.md" >"$readme_work/README.md"
    cat "$readme_work/README.md" >"$ROOT/README.md"
    rm -rf "$readme_work"
fi

if ! command -v gnuplot >/dev/null; then
    source "$ROOT/test/lib/deps.sh"
    ensure_deps gnuplot-nox
fi

work=$(mktemp -d /tmp/pg_idempotent-report.XXXXXX)
trap 'rm -rf "$work"' EXIT

# Panels: one per (bench, case), in the order of the TSV (the benchmarks'
# order); per panel a data file "size ours_ms handwritten_ms ratio label",
# sorted by size. $work/panels: index, title, ours, handwritten, sizes.
awk -F'\t' -v dir="$work" '
    function label(n) {
        if (n % 1000000 == 0) return (n / 1000000) "M"
        if (n % 1000 == 0) return (n / 1000) "k"
        return n
    }
    NR == 1 { next }
    {
        key = $1 SUBSEP $2
        if (!(key in panel)) {
            panel[key] = ++np
            title[np] = $1 ": " $2; ours[np] = $7; hand[np] = $8
            # claim: the size is the number of keys the table holds already.
            xlab[np] = ($1 == "claim") ? "keys already in the table" : "rows"
        }
        p = panel[key]
        rows[p] = rows[p] $3 " " $4 " " $5 " " $6 " " ($6 == "NA" ? "n/a" : sprintf("%.2fx", $6)) "\n"
        if (!((p, $3) in seen)) { seen[p, $3] = 1; tics[p] = tics[p] (tics[p] == "" ? "" : ", ") "\"" label($3) "\" " $3 }
        if (!(p in lo) || $3 + 0 < lo[p]) lo[p] = $3 + 0
        if (!(p in hi) || $3 + 0 > hi[p]) hi[p] = $3 + 0
    }
    END {
        for (p = 1; p <= np; p++) {
            f = dir "/panel" p ".dat"
            cmd = "sort -n -k1,1 > " f
            printf "%s", rows[p] | cmd
            close(cmd)
            print p "\t" title[p] "\t" ours[p] "\t" hand[p] "\t" xlab[p] "\t" lo[p] "\t" hi[p] "\t" tics[p] > (dir "/panels")
        }
    }' "$TSV"

np=$(wc -l <"$work/panels")
cols=$(( np <= 2 ? np : (np <= 4 ? 2 : 3) ))
rows=$(( (np + cols - 1) / cols ))

# gnuplot strings are double-quoted here: escape backslashes and quotes.
gp_str() { local s=${1//\\/\\\\}; printf '"%s"' "${s//\"/\\\"}"; }

{
    echo 'set datafile missing "NA"'
    echo 'set logscale xy'
    echo 'set format y "%g"'
    echo 'set grid xtics ytics lc rgb "#dddddd" lw 1'
    echo 'set mytics 1'
    echo 'set border 3 lc rgb "#444444"'
    echo 'set tics nomirror'
    echo 'set ylabel "median ms"'
    echo 'set key top left Left reverse noenhanced samplen 2 font ",10" opaque box lc rgb "#ffffff"'
    echo 'set offsets 0, 0, graph 0.25, graph 0.05'
    echo "set multiplot layout $rows,$cols title \"pg_idempotent against the SQL a user would hand-write: median time against rows, log-log (labels: pg_idempotent / hand-written)\" font \",14\""
    while IFS=$'\t' read -r p title ours hand xlab lo hi tics; do
        echo "set title $(gp_str "$title") noenhanced font \",13\""
        echo "set xlabel $(gp_str "$xlab") offset 0,0.3"
        echo "set xtics ($tics)"
        # Just beyond the sizes measured (gnuplot would widen a log axis to
        # whole decades, squeezing the points to one side).
        echo "set xrange [$lo / 1.8 : $hi * 1.8]"
        echo "plot '$work/panel$p.dat' using 1:2 with linespoints lw 2 pt 7 ps 0.8 lc rgb \"#1f6fb4\" title $(gp_str "$ours"), \\"
        echo "     '' using 1:3 with linespoints lw 2 dt (6,4) pt 5 ps 0.8 lc rgb \"#e0701a\" title $(gp_str "$hand"), \\"
        echo "     '' using 1:2:5 with labels offset 0,0.9 font \",10\" tc rgb \"#1f6fb4\" notitle"
    done <"$work/panels"
    echo 'unset multiplot'
} >"$work/chart.gp"

draw() {  # TERMINAL-LINE OUTPUT
    if ! { echo "$1"; echo "set output '$2'"; cat "$work/chart.gp"; } | gnuplot 2>"$work/gnuplot.err"; then
        cat "$work/gnuplot.err" >&2
        die "gnuplot failed drawing $2"
    fi
    # gnuplot warns (e.g. a non-positive value on a log axis) without failing.
    grep -v '^$' "$work/gnuplot.err" >&2 || true
}
draw "set terminal svg size $((cols * 500)),$((rows * 340 + 40)) font \"Helvetica,12\" background rgb \"white\" noenhanced" "$work/latest.svg"
mv "$work/latest.svg" "$SVG"
if [ -n "${BENCH_CHART_PNG:-}" ]; then
    draw "set terminal pngcairo size $((cols * 500)),$((rows * 340 + 40)) font \"Helvetica,10\" background rgb \"white\" noenhanced" "$BENCH_CHART_PNG"
fi

# The markdown section.
awk -F'\t' -v begin_mark="$BEGIN_MARK" -v end_mark="$END_MARK" '
    function rows(n,   s, out) {  # 1000000 -> 1,000,000 (mawk: no gensub)
        s = sprintf("%d", n); out = ""
        while (length(s) > 3) { out = "," substr(s, length(s) - 2) out; s = substr(s, 1, length(s) - 3) }
        return s out
    }
    function ms(v) { return v == "NA" ? "n/a" : (v + 0 < 10 ? sprintf("%.2f", v) : sprintf("%.1f", v)) }
    function slope(t1, t2, n1, n2) {
        if (t1 == "NA" || t2 == "NA" || t1 <= 0 || t2 <= 0 || n1 == n2) return "n/a"
        return sprintf("%.2f", log(t2 / t1) / log(n2 / n1))
    }
    function growth(t1, t2) {
        if (t1 == "NA" || t2 == "NA" || t1 <= 0) return "n/a"
        return ms(t1) " → " ms(t2) " ms (" sprintf("%.3g", t2 / t1) "x)"
    }
    NR == 1 { next }
    {
        key = $1 SUBSEP $2
        if (!(key in first)) { order[++nk] = key; first[key] = $3; lo_o[key] = $4; lo_h[key] = $5; what_o[key] = $7; what_h[key] = $8; name[key] = $1 " | " $2 }
        # The table groups by function and case, sizes ascending.
        cnt[key]++; size[key, cnt[key]] = $3 + 0
        line[key, cnt[key]] = "| " $1 " | " $2 " | " rows($3) " | " ms($4) " | " ms($5) " | " ($6 == "NA" ? "n/a" : sprintf("%.2fx", $6)) " |"
        if ($3 + 0 < first[key] + 0) { first[key] = $3; lo_o[key] = $4; lo_h[key] = $5 }
        if (!(key in last) || $3 + 0 > last[key] + 0) { last[key] = $3; hi_o[key] = $4; hi_h[key] = $5 }
    }
    END {
        print begin_mark
        print "## Cost against table size"
        print ""
        print "![pg_idempotent against hand-written SQL, median time against rows, log-log](latest.svg)"
        print ""
        print "Each function against the SQL a user would hand-write for the same job, at every size: medians in ms from the comparisons in the sections below (which show every statement in full, with min and max). Ratio: pg_idempotent / hand-written (below 1: pg_idempotent is faster). For claim, rows are the keys already in the table, and a time is that of all the calls the case names, in one `DO` loop. Generated by `bench/report.sh` from `latest.tsv`; the chart is `latest.svg`."
        print ""
        print "| function | case | rows | pg_idempotent ms | hand-written ms | ratio |"
        print "|---|---|---:|---:|---:|---:|"
        for (i = 1; i <= nk; i++) {
            k = order[i]
            for (a = 2; a <= cnt[k]; a++)  # insertion sort by size: a handful of rows
                for (b = a; b > 1 && size[k, b] < size[k, b - 1]; b--) {
                    t = size[k, b]; size[k, b] = size[k, b - 1]; size[k, b - 1] = t
                    t = line[k, b]; line[k, b] = line[k, b - 1]; line[k, b - 1] = t
                }
            for (a = 1; a <= cnt[k]; a++) print line[k, a]
        }
        print ""
        print "Growth from the smallest size to the largest. Slope: of the log-log line through the two points, 1 = time proportional to rows, 0 = time independent of rows."
        print ""
        print "| function | case | pg_idempotent | time | slope | hand-written | time | slope |"
        print "|---|---|---|---:|---:|---|---:|---:|"
        for (i = 1; i <= nk; i++) {
            k = order[i]
            print "| " name[k] " | `" what_o[k] "` | " growth(lo_o[k], hi_o[k]) " | " slope(lo_o[k], hi_o[k], first[k], last[k]) \
                  " | `" what_h[k] "` | " growth(lo_h[k], hi_h[k]) " | " slope(lo_h[k], hi_h[k], first[k], last[k]) " |"
        }
        print end_mark
    }' "$TSV" >"$work/section.md"

# Splice: replace an earlier section; else insert it before the report's
# first "## " heading (after the header), or append.
if [ -f "$MD" ] && grep -qxF "$BEGIN_MARK" "$MD"; then
    grep -qxF "$END_MARK" "$MD" || die "$MD: the section's begin marker has no end marker"
    awk -v begin_mark="$BEGIN_MARK" -v end_mark="$END_MARK" -v section="$work/section.md" '
        $0 == begin_mark { while ((getline l < section) > 0) print l; skip = 1; next }
        $0 == end_mark { skip = 0; next }
        !skip' "$MD" >"$work/latest.md"
elif [ -f "$MD" ] && grep -q '^## ' "$MD"; then
    awk -v section="$work/section.md" '
        !done && /^## / { while ((getline l < section) > 0) print l; print ""; done = 1 }
        { print }' "$MD" >"$work/latest.md"
else
    { [ -f "$MD" ] && cat "$MD" && echo; cat "$work/section.md"; } >"$work/latest.md"
fi
cat "$work/latest.md" >"$MD"
echo "bench/report.sh: $np panel(s) in ${SVG#"$ROOT"/}, size section in ${MD#"$ROOT"/}" >&2
