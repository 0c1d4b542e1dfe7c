#!/usr/bin/env bash
# The layout's two hard rules (docs/code-layout.md): PostgreSQL's headers enter
# through src/pg/postgres.hpp, and only src/pg/, src/pg_native/ and the entry
# shims (src/pg_idempotent.cpp) include it or any PostgreSQL header; and
# SQLSTATEs are named in src/pg/errors.hpp only. Prints what breaks them
# and exits 1; exits 0 when nothing does.
# LAYOUT_ROOT: another tree to check (the unit suite's self-test).
set -euo pipefail
cd "${LAYOUT_ROOT:-$(dirname "$0")/../..}"

# PostgreSQL's own headers, as the code would name them.
PG_HEADERS='^#include[[:space:]]*[<"](postgres\.h|postgres_ext\.h|fmgr\.h|funcapi\.h|miscadmin\.h|pg_config\.h|(access|catalog|commands|executor|nodes|parser|storage|utils|lib|tcop|optimizer|mb|common|port)/[^">]*\.h|pg/postgres\.hpp)[">]'

bad=0
while IFS= read -r f; do
    case "$f" in
        src/pg/*|src/pg_native/*|src/pg_idempotent.cpp) continue ;;
    esac
    if grep -En "$PG_HEADERS" "$f"; then
        echo "layout: $f includes PostgreSQL; only src/pg/, src/pg_native/ and src/pg_idempotent.cpp may" >&2
        bad=1
    fi
done < <(find src -name '*.cpp' -o -name '*.hpp' | sort)

# Includes run down the layers, never up (docs/code-layout.md): the pure
# core, the boundary (pg), the feature code against PostgreSQL's executor
# (pg_native), what families share (common), the families, and last the
# entry shims. A family includes no other family. The project's headers are
# the .hpp files (PostgreSQL's common/ headers are .h).
layer() {
    case "$1" in
        core) echo 0 ;; pg) echo 1 ;; pg_native) echo 2 ;; common) echo 3 ;;
        append|checkpoints|keys|merge|overwrite|proof|publish|snapshot) echo 4 ;;
        *) echo 5 ;;
    esac
}
while IFS= read -r f; do
    dir=${f#src/}
    dir=${dir%%/*}
    [ "$dir" = pg_idempotent.cpp ] && continue
    from=$(layer "$dir")
    while IFS= read -r inc; do
        to=$(layer "$inc")
        if [ "$to" -gt "$from" ] || { [ "$to" -eq 4 ] && [ "$from" -eq 4 ] && [ "$inc" != "$dir" ]; }; then
            echo "layout: $f includes $inc/, a layer above $dir/ (or another family)" >&2
            bad=1
        fi
    done < <(sed -nE 's|^#include "([a-z_]+)/[^"]*\.hpp".*|\1|p' "$f")
done < <(find src -mindepth 2 -name '*.cpp' -o -mindepth 2 -name '*.hpp' | sort)

# Every SQLSTATE the C++ code raises or compares is named once, in
# src/pg/errors.hpp (pg::sqlstate): a five-character code written out
# anywhere else is either a duplicate name or an error docs/errors.md misses.
if grep -rnE '"[0-9A-Z]{5}"' src --include='*.cpp' --include='*.hpp' | grep -v '^src/pg/errors.hpp:'; then
    echo "layout: SQLSTATE literals outside src/pg/errors.hpp; name them in pg::sqlstate" >&2
    bad=1
fi
exit "$bad"
