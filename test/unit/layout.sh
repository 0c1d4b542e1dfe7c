#!/usr/bin/env bash
# The layout's two hard rules (docs/code-layout.md): PostgreSQL's headers enter
# through src/pg/postgres.hpp, and only src/pg/, src/pg_native/ and the entry
# shims (src/pg_idempotent.cpp) include it or any PostgreSQL header; and
# SQLSTATEs are named in src/pg/errors.hpp only. Prints what breaks them
# and exits 1; exits 0 when nothing does.
set -euo pipefail
cd "$(dirname "$0")/../.."

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

# Every SQLSTATE the C++ code raises or compares is named once, in
# src/pg/errors.hpp (pg::sqlstate): a five-character code written out
# anywhere else is either a duplicate name or an error docs/errors.md misses.
if grep -rnE '"[0-9A-Z]{5}"' src --include='*.cpp' --include='*.hpp' | grep -v '^src/pg/errors.hpp:'; then
    echo "layout: SQLSTATE literals outside src/pg/errors.hpp; name them in pg::sqlstate" >&2
    bad=1
fi
exit "$bad"
