#!/usr/bin/env bash
# The layout's one hard rule (docs/code-layout.md): PostgreSQL's headers enter
# through src/pg/postgres.hpp, and only src/pg/, src/pg_native/ and the entry
# shims (src/pg_idempotent.cpp) include it or any PostgreSQL header. Prints
# each file that breaks the rule and exits 1; exits 0 when none does.
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
exit "$bad"
