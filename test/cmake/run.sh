#!/usr/bin/env bash
# The cmake suite: CMakeLists.txt builds the module the PGXS Makefile builds.
# Against the installation whose pg_config is $PGBIN/pg_config (make test's
# private copy), after the Makefile's build in the tree. Prints one TAP line
# per check:
#   - CMake configures and builds everything (module, command line tool,
#     unit tests) with -Wall -Wextra -Werror, and its unit tests pass (ctest);
#   - the module is compiled from the same sources (make print-module-srcs)
#     and the unit tests from the same pure sources (make print-pure-srcs,
#     both read src/pure_sources.txt);
#   - the two modules export the same symbols (nm -D --defined-only), and
#     those are PostgreSQL's entry points, every one (src/exports.map);
#   - both install the same files (DESTDIR installs compared; PGXS's JIT
#     bitcode aside, which CMake does not build).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
: "${PGBIN:?PGBIN: the bin directory of the installation both builds use}"
PG_CONFIG="$PGBIN/pg_config"

source test/lib/tap.sh
compare() {  # name expected-file actual-file: equal, and not empty
    local d
    if [ ! -s "$2" ]; then
        tap_result fail "$1" "nothing to compare: $(basename "$2") is empty"
    elif d=$(diff -u "$2" "$3"); then
        tap_result ok "$1" "$(wc -l <"$2") entries in both"
    else
        tap_result fail "$1" "$d"
    fi
}

work=$(mktemp -d /tmp/pg_idempotent-cmake.XXXXXX)
trap 'rm -rf "$work"' EXIT
build="$work/build"

if cmake -S . -B "$build" -DPG_CONFIG="$PG_CONFIG" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >"$work/configure.log" 2>&1; then
    tap_result ok cmake-configures
else
    tap_result fail cmake-configures "$(tail -30 "$work/configure.log")"
    exit 1
fi
if nice cmake --build "$build" -j"$(nproc)" >"$work/build.log" 2>&1; then
    tap_result ok cmake-builds-with-werror
else
    tap_result fail cmake-builds-with-werror "$(grep -E 'error|Error' "$work/build.log" | head -30)"
    exit 1
fi

# The unit tests as CMake built them, through ctest (CMakeLists.txt's
# "unit" test; the server suites it declares run test/run_all.sh).
if (cd "$build" && ctest -R '^unit$' --output-on-failure) >"$work/ctest.log" 2>&1 &&
    grep -q "100% tests passed" "$work/ctest.log"; then
    tap_result ok cmake-unit-tests-pass "ctest: $(grep -m1 'tests passed' "$work/ctest.log")"
else
    tap_result fail cmake-unit-tests-pass "$(tail -30 "$work/ctest.log")"
fi

# The sources each CMake target compiled, from its compile commands.
target_sources() {  # target-directory-name
    python3 - "$build/compile_commands.json" "$1" "$ROOT" <<'PY'
import json, os, sys
commands, target, root = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
for c in commands:
    if f"CMakeFiles/{target}.dir/" in c["command"]:
        print(os.path.relpath(c["file"], root))
PY
}
make -s --no-print-directory print-module-srcs | tr ' ' '\n' | LC_ALL=C sort >"$work/make-module.txt"
target_sources pg_idempotent | LC_ALL=C sort >"$work/cmake-module.txt"
compare same-module-sources "$work/make-module.txt" "$work/cmake-module.txt"
make -s --no-print-directory print-pure-srcs | tr ' ' '\n' | LC_ALL=C sort >"$work/make-pure.txt"
target_sources pg_idempotent_unit | grep -vE '^(test/unit/|cli/)' | LC_ALL=C sort >"$work/cmake-pure.txt"
compare same-pure-sources "$work/make-pure.txt" "$work/cmake-pure.txt"

exported() { nm -D --defined-only "$1" | awk '{ print $3 }' | LC_ALL=C sort; }
exported pg_idempotent.so >"$work/make-symbols.txt"
exported "$build/pg_idempotent.so" >"$work/cmake-symbols.txt"
compare same-exported-symbols "$work/make-symbols.txt" "$work/cmake-symbols.txt"
# What it exports is PostgreSQL's entry points, all of them (src/exports.map):
# the module magic, _PG_init, and each PG_FUNCTION_INFO_V1 function with its
# pg_finfo_ record.
{
    printf '%s\n' Pg_magic_func _PG_init
    sed -n 's/^PG_FUNCTION_INFO_V1(\(idem_[A-Za-z0-9_]*\));.*/\1/p' src/*.cpp src/*/*.cpp |
        while read -r f; do printf '%s\npg_finfo_%s\n' "$f" "$f"; done
} | LC_ALL=C sort >"$work/entry-points.txt"
compare exports-entry-points-only "$work/entry-points.txt" "$work/make-symbols.txt"

make -s install PG_CONFIG="$PG_CONFIG" DESTDIR="$work/make-root" >"$work/make-install.log" 2>&1 &&
    DESTDIR="$work/cmake-root" cmake --install "$build" >"$work/cmake-install.log" 2>&1
installed() { (cd "$1" && find . -type f | grep -v '/bitcode/' | LC_ALL=C sort); }
installed "$work/make-root" >"$work/make-files.txt"
installed "$work/cmake-root" >"$work/cmake-files.txt"
compare same-installed-files "$work/make-files.txt" "$work/cmake-files.txt"

tap_finish cmake
