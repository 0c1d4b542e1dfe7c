#!/usr/bin/env bash
# The docs suite (issue 26): what README.md and docs/*.md show is what the
# extension does. Against the running cluster of PGHOST/PGPORT, with the
# psql of PGBIN; prints one TAP line per check:
#   - every file's SQL blocks run in order in a fresh database, their
#     output and errors as shown (test/docs/check_docs.py), its links and
#     the repository paths it names exist (also for bench/README.md,
#     examples/pgtap/README.md and SECURITY.md);
#   - the checker fails on the broken examples of test/docs/broken/ (a
#     docs suite that cannot fail proves nothing);
#   - README's performance table is bench/report.sh's, from
#     bench/results/latest.tsv, and docs/reference.md's function table is
#     the installed extension's catalog (test/docs/reference_table.sql);
#   - one version everywhere: control file, META.json, Makefile, CHANGELOG,
#     debian/changelog, README, and the install script of that version.
#
# bash test/docs/run.sh --write-reference rewrites docs/reference.md's table
# from the catalog (after changing a function or its COMMENT).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
PSQL=${PGBIN:+$PGBIN/}psql
# Times and messages print the same on every machine.
export PGTZ=UTC PGDATESTYLE=ISO,MDY PGOPTIONS="${PGOPTIONS:-} -c lc_messages=C -c lc_monetary=C -c lc_numeric=C"

source test/lib/tap.sh
result() {  # ok|fail name description [details]
    tap_result "$1" "$2 $3" "${4:-}"
}

REF_BEGIN='<!-- generated: reference table begin -->'
REF_END='<!-- generated: reference table end -->'
reference_table() {  # the table from the catalog of a fresh database
    "$PSQL" -X -q -d postgres -c 'DROP DATABASE IF EXISTS idem_docs_reference' -c 'CREATE DATABASE idem_docs_reference' >/dev/null &&
        "$PSQL" -X -q -d idem_docs_reference -c 'CREATE EXTENSION pg_idempotent' >/dev/null &&
        "$PSQL" -X -q -d idem_docs_reference -f test/docs/reference_table.sql
    local rc=$?
    "$PSQL" -X -q -d postgres -c 'DROP DATABASE IF EXISTS idem_docs_reference' >/dev/null
    return $rc
}
region() {  # file begin end: the lines between the two marker lines
    awk -v b="$2" -v e="$3" '$0 == e { on = 0 } on { print } $0 == b { on = 1 }' "$1"
}

if [ "${1:-}" = --write-reference ]; then
    table=$(reference_table) || exit 1
    printf '%s\n' "$table" >/tmp/idem_reference_table.$$
    awk -v b="$REF_BEGIN" -v e="$REF_END" -v t=/tmp/idem_reference_table.$$ '
        $0 == b { print; while ((getline l < t) > 0) print l; skip = 1; next }
        $0 == e { skip = 0 }
        !skip' docs/reference.md >docs/reference.md.new && mv docs/reference.md.new docs/reference.md
    rm -f /tmp/idem_reference_table.$$
    echo "docs/reference.md: table written" >&2
    exit 0
fi

# 1. Every document's examples.
# (and the other pages a reader meets: bench's and the pgTAP example's READMEs, SECURITY.md)
docs=(README.md docs/*.md bench/README.md examples/pgtap/README.md SECURITY.md)
out=$(python3 test/docs/check_docs.py --psql "$PSQL" --root "$ROOT" "${docs[@]}" 2>&1)
while IFS= read -r line; do
    case "$line" in
        "ok "*) line=${line#ok * - }; result ok "${line%% *}" "${line#* }" ;;
        "not ok "*) line=${line#not ok * - }; result fail "${line%% *}" "${line#* }" ;;
        *) echo "$line" ;;
    esac
done <<<"$out"
[ -n "$out" ] || result fail check_docs.py "printed nothing"

# The Python recipes (docs/recipes.md shows their files, checked above),
# run against this cluster with Debian's python3 and python3-psycopg.
out=$(PGUSER=${PGUSER:-postgres} /usr/bin/python3 test/docs/recipes_test.py 2>&1)
rc=$?
ran=0
failed=0
while IFS= read -r line; do
    case "$line" in
        "ok "*) ran=$((ran + 1)); result ok "recipe-$ran" "${line#ok * - }" ;;
        "not ok "*) ran=$((ran + 1)); failed=$((failed + 1)); result fail "recipe-$ran" "${line#not ok * - }" ;;
        "1.."*) ;;
        *) echo "$line" ;;
    esac
done <<<"$out"
if [ "$ran" -eq 0 ] || { [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; }; then
    result fail recipes "test/docs/recipes_test.py exited $rc after $ran tests" "$out"
fi

# 2. The checker fails where it must: each broken example names the problem
# it plants in a line "<!-- expect: TEXT -->", and the checker's output must
# say each.
for f in test/docs/broken/*.md; do
    out=$(python3 test/docs/check_docs.py --psql "$PSQL" --root "$ROOT" --db-prefix idem_docs_broken_ "$f" 2>&1)
    rc=$?
    missing=""
    while IFS= read -r want; do
        grep -qF -- "$want" <<<"$out" || missing+="$want"$'\n'
    done < <(sed -n 's/^<!-- expect: \(.*\) -->$/\1/p' "$f")
    if [ $rc -ne 0 ] && [ -z "$missing" ] && grep -q '^<!-- expect: ' "$f"; then
        result ok "broken/$(basename "$f")" "makes the checker fail, saying why"
    else
        result fail "broken/$(basename "$f")" "makes the checker fail, saying why" "exit $rc; not said: $missing$out"
    fi
done

# 3. Generated tables.
if want=$(bash bench/report.sh --readme-table 2>&1) && [ "$want" = "$(region README.md \
    '<!-- bench/report.sh: readme table begin (generated from bench/results/latest.tsv) -->' \
    '<!-- bench/report.sh: readme table end -->')" ]; then
    result ok readme-performance-table "is bench/report.sh's, from bench/results/latest.tsv"
else
    result fail readme-performance-table "is bench/report.sh's, from bench/results/latest.tsv" \
        "run bench/report.sh (make bench does) to write it"
fi
if want=$(reference_table 2>/dev/null) && [ "$want" = "$(region docs/reference.md "$REF_BEGIN" "$REF_END")" ]; then
    result ok reference-table "docs/reference.md's table is the extension's catalog"
else
    result fail reference-table "docs/reference.md's table is the extension's catalog" \
        "$(diff <(region docs/reference.md "$REF_BEGIN" "$REF_END") <(printf '%s\n' "$want") | head -20)
run bash test/docs/run.sh --write-reference"
fi

# Every speed ratio the documents give (1.23x) is one the last full report
# holds: figures from other runs go to bench/README.md, with their history.
stray=""
for f in README.md docs/*.md; do
    while IFS= read -r figure; do
        grep -qF -- "$figure" bench/results/latest.md || stray+="$f: $figure"$'\n'
    done < <(grep -oE '\b[0-9]+\.[0-9]+x\b' "$f" | sort -u)
done
if [ -z "$stray" ]; then
    result ok figures "every ratio in README.md and docs/ is in bench/results/latest.md"
else
    result fail figures "every ratio in README.md and docs/ is in bench/results/latest.md" "$stray"
fi

# Every SQLSTATE the code names (src/pg/errors.hpp, and the codes the SQL it
# writes passes to idem._raise) has its cause and cure in docs/errors.md.
unlisted=""
for code in $( { grep -ohE '"[0-9A-Z]{5}"' src/pg/errors.hpp; grep -rohE "_raise\('[0-9A-Z]{5}'" src --include='*.cpp'; } |
               grep -oE '[0-9A-Z]{5}' | sort -u); do
    grep -q -- "$code" docs/errors.md || unlisted+="$code "
done
if [ -z "$unlisted" ]; then
    result ok errors-listed "every SQLSTATE the code names is in docs/errors.md"
else
    result fail errors-listed "every SQLSTATE the code names is in docs/errors.md" "missing: $unlisted"
fi

# 4. One version everywhere.
version=$(sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" pg_idempotent.control)
problems=""
meta=$(python3 -c 'import json,sys; m=json.load(open("META.json")); print(m["version"], m["provides"]["pg_idempotent"]["version"], m["provides"]["pg_idempotent"]["file"])')
read -r meta_version meta_provides meta_file <<<"$meta"
[ "$meta_version" = "$version" ] || problems+="META.json version $meta_version"$'\n'
[ "$meta_provides" = "$version" ] || problems+="META.json provides version $meta_provides"$'\n'
[ "$meta_file" = "pg_idempotent--$version.sql" ] || problems+="META.json provides file $meta_file"$'\n'
grep -qx "EXTVERSION = $version" Makefile || problems+="Makefile EXTVERSION"$'\n'
head -1 debian/changelog | grep -qF "($version)" || problems+="debian/changelog: $(head -1 debian/changelog)"$'\n'
# (an "## [Unreleased]" section above it collects what the next release brings)
top=$(grep -m1 '^## \[[0-9]' CHANGELOG.md)
# The version under development is "## [X.Y.Z] - unreleased" until its date.
[[ "$top" =~ ^"## [$version] - "([0-9]{4}-[0-9]{2}-[0-9]{2}|unreleased)$ ]] || problems+="CHANGELOG's first release: $top"$'\n'
grep -q "^Version $version\. " README.md || problems+="README does not say 'Version $version.'"$'\n'
[ -f "pg_idempotent--$version.sql" ] || problems+="no install script pg_idempotent--$version.sql"$'\n'
bash tools/install_script.sh | cmp -s - "pg_idempotent--$version.sql" ||
    problems+="pg_idempotent--$version.sql is not tools/install_script.sh's output (run make install-script)"$'\n'
others=$(grep -ohE "(Release|[Vv]ersion) [0-9]+\.[0-9]+\.[0-9]+" README.md | grep -v "$version" | sort -u)
[ -z "$others" ] || problems+="README names another version: $others"$'\n'
if [ -z "$problems" ]; then
    result ok one-version "$version: control file, META.json, Makefile, CHANGELOG, debian/changelog, README, install script"
else
    result fail one-version "$version everywhere" "$problems"
fi

# 5. The README is the front door, not the manual.
# Nothing in the repository names a file outside it: a user's clone has no
# ../shared beside it (the pattern is split so that this file does not match).
outside=$(grep -rnI --exclude-dir=.git --exclude-dir=build --exclude-dir=results -e '\.\./shar''ed/' . || true)
if [ -z "$outside" ]; then result ok no-outside-files "no file of the repository names ../shared"
else result fail no-outside-files "no file of the repository names ../shared" "$outside"; fi

lines=$(wc -l <README.md)
if [ "$lines" -le 420 ]; then result ok readme-length "README.md is $lines lines (at most about 400)"
else result fail readme-length "README.md is $lines lines (at most about 400)"; fi

tap_finish docs
