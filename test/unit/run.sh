#!/usr/bin/env bash
# GoogleTest unit tests of the pure C++ sources (src/core, merge_sql,
# row_sample: the Makefile's PURE_SRCS) and the command line's
# option parsing (cli/options.cpp): no server needed.
# Builds into build/unit (gitignored) with Debian's libgtest-dev and runs the
# binary; exits non-zero on a build or test failure. Extra arguments go to the
# test binary (e.g. --gtest_filter=Multiset.*).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"

CXX=${CXX:-g++}
OUT=${UNIT_BUILD_DIR:-$ROOT/build/unit}
GTEST_LIB=/usr/lib/x86_64-linux-gnu
mkdir -p "$OUT"

for lib in libgtest.a libgtest_main.a; do
    if [ ! -f "$GTEST_LIB/$lib" ]; then
        echo "missing $GTEST_LIB/$lib: install libgtest-dev" >&2
        exit 2
    fi
done

# Only the boundary folders include PostgreSQL (docs/code-layout.md), and
# the C++ is laid out as .clang-format says.
bash test/unit/layout.sh
# ...and it fails where it must: a copy of src/ with the boundary including
# feature code (the upward include 0.8.0 had).
planted=$(mktemp -d)
cp -r src "$planted/src"
sed -i '1i #include "pg_native/row_digest_receiver.hpp"' "$planted/src/pg/args.cpp"
if LAYOUT_ROOT=$planted bash test/unit/layout.sh 2>/dev/null; then
    echo "layout.sh passed a tree whose src/pg/args.cpp includes pg_native/" >&2
    rm -rf "$planted"
    exit 1
fi
rm -rf "$planted"
python3 test/unit/error_hints.py
# The layout is the one Debian 12's clang-format 14 gives (.clang-format):
# later releases reflow some lambdas differently, so the check runs with 14
# only (on the host; the Debian roots of 17 and 18 have no clang-format).
if clang-format --version 2>/dev/null | grep -qE 'version 14\.'; then
    make -s --no-print-directory format-check
    echo "format-check: the C++ layout is .clang-format's (clang-format 14)"
else
    echo "format-check: not run here: it is pinned to clang-format 14 (Debian 12's), this machine has $(clang-format --version 2>/dev/null || echo none)"
fi

# No PostgreSQL include path: a pure source that includes a PostgreSQL
# header fails here.
read -r -a PURE_SRCS <<<"$(make -s --no-print-directory print-pure-srcs)"
"$CXX" -std=c++17 -Wall -Wextra -Werror -O2 -I src \
    -I cli "${PURE_SRCS[@]}" cli/options.cpp test/unit/*.cpp \
    "$GTEST_LIB/libgtest_main.a" "$GTEST_LIB/libgtest.a" -pthread \
    -o "$OUT/pg_idempotent_unit"

exec "$OUT/pg_idempotent_unit" "$@"
