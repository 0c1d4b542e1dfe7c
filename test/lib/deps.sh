# Sourced. ensure_deps PKG...: installs the missing Debian packages when run
# as root; as anyone else, names them and stops (exit 2).
ensure_deps() {
    local missing=()
    local pkg
    for pkg in "$@"; do
        if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
            missing+=("$pkg")
        fi
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        echo "pg_idempotent: missing packages: ${missing[*]}" >&2
        echo "install them with: sudo apt-get install -y ${missing[*]}" >&2
        exit 2
    fi
    echo "pg_idempotent: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# What building and testing need on a fresh Debian machine, for the
# PostgreSQL major PG_MAJOR (15 by default: Debian 12's; 17 and 18 in the
# Debian roots that test/lib/debian_root.sh makes from these same lists).
PG_MAJOR=${PG_MAJOR:-15}
BUILD_DEPS=(make g++ cmake postgresql-$PG_MAJOR postgresql-server-dev-$PG_MAJOR postgresql-common
            libxxhash-dev libpq-dev)
# pgTAP and pg_prove: the pgTAP example (examples/pgtap, suite "pgtap").
TEST_DEPS=(libipc-run-perl libgtest-dev libjson-pp-perl locales
           postgresql-$PG_MAJOR-pgtap libtap-parser-sourcehandler-pgtap-perl)
# The package suite (test/package): dpkg-buildpackage and pg_buildext for the
# Debian package (debian/), git for `make dist`, unzip to read its archive.
TEST_DEPS+=(build-essential debhelper dpkg-dev postgresql-server-dev-all git unzip)
# DBD::Pg: the bad-input fuzzer (test/t/070) sends thousands of calls over one
# connection and reads each error's SQLSTATE.
TEST_DEPS+=(libdbd-pg-perl)
# python3: the docs suite (test/docs/check_docs.py) and the check that every
# error has a HINT (test/unit/error_hints.py); python3-psycopg: the docs
# suite runs the Python recipes of docs/recipes.md (test/docs/recipes_test.py).
TEST_DEPS+=(python3 python3-psycopg)
# gnuplot draws the bench report's chart (the bench suite, bench/report.sh).
TEST_DEPS+=(gnuplot-nox)
# The sanitizers' runtimes come with g++ (gcc 12's libasan8 and libubsan1 on
# Debian 12; the roots' gcc brings its own).
# On the host only (Debian 12):
# - clang-format: the unit suite checks the C++ layout (make format-check)
#   with Debian 12's clang-format 14 only, since releases disagree on layout;
# - debootstrap: the Debian roots of PostgreSQL 17 and 18.
HOST_DEPS=(clang-format libasan8 libubsan1 debootstrap)

# ensure_locale NAME: the tests switch lc_* to a locale other than the
# cluster's (de_DE.UTF-8) to prove checksums ignore them; generate it if
# missing (root), or say how.
ensure_locale() {
    if locale -a 2>/dev/null | grep -qix "$(echo "$1" | sed 's/UTF-8/utf8/')"; then
        return 0
    fi
    if [ "$(id -u)" -ne 0 ]; then
        echo "pg_idempotent: the tests need the locale $1: sudo localedef -i ${1%%.*} -f UTF-8 $1" >&2
        exit 2
    fi
    localedef -i "${1%%.*}" -f UTF-8 "$1" >&2
}
