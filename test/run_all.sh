#!/usr/bin/env bash
# The whole test suite: `make test` (and .ci/run) runs exactly this.
#
#   1. installs missing Debian packages (as root; otherwise names them)
#   2. builds with -Werror and installs the module into a private copy of
#      PostgreSQL 15's installation (never over the installed module)
#   3. runs the GoogleTest unit tests of the pure C++ core, and the cmake
#      suite (test/cmake: CMakeLists.txt builds the same module)
#   4. starts a private PostgreSQL 15 cluster (own socket dir and port)
#   5. runs the docs suite (test/docs: README's and docs/' examples), the
#      demo suite (test/demo: `make demo`'s script), the pg_regress suite,
#      the security suite (sql/security_*.sql),
#      the isolation specs, the stress suite (test/stress: pgbench, its own
#      cluster), the pgTAP example (examples/pgtap) and the TAP tests; then
#      the package suite: builds, installs and purges the Debian package,
#      checks the PGXN archive; the bench suite (make bench at a tiny
#      size); last the sanitize suite
#   6. checks the server log for crashes
#   7. removes the cluster (also on failure or Ctrl-C) and prints
#      "N passed, N failed" last; exits non-zero on any failure
#
# SUITES="unit cmake docs demo regress security isolation stress pgtap tap citus package bench sanitize"
# limits what runs
# (all by default).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
source test/lib/deps.sh
source test/lib/cluster.sh
source test/lib/private_pg.sh
source test/lib/citus.sh

SUITES=${SUITES:-"unit cmake docs demo regress security isolation stress pgtap tap citus package bench sanitize"}
# Logs and pg_regress output go to a directory of this run, so two runs on
# one machine (a developer and CI, or two worktrees) never mix their results.
RUN_DIR=$(mktemp -d /tmp/pg_idempotent-run.XXXXXX)
chmod a+rwx "$RUN_DIR"
PASSED=0
FAILED=0
SKIPPED=0
FAILURES=()

note_result() {  # name ok|fail
    if [ "$2" = ok ]; then PASSED=$((PASSED + 1)); else FAILED=$((FAILED + 1)); FAILURES+=("$1"); fi
}

finish() {
    cluster_stop
    citus_cluster_stop
    # The private installations go; the logs stay.
    rm -rf "$RUN_DIR/pg15" "$RUN_DIR/pg18" "$RUN_DIR/build18"
    echo
    if [ ${#FAILURES[@]} -gt 0 ]; then
        echo "failed: ${FAILURES[*]}"
    fi
    echo "logs: $RUN_DIR"
    if [ "$SKIPPED" -gt 0 ]; then
        echo "$PASSED passed, $FAILED failed, $SKIPPED skipped"
    else
        echo "$PASSED passed, $FAILED failed"
    fi
}
trap finish EXIT
trap 'exit 130' INT TERM

wants() { [[ " $SUITES " == *" $1 "* ]]; }
# PG_MAJORS ("15 18" by default): the PostgreSQL majors the server suites
# run on; PG_MAJORS=15 or PG_MAJORS=18 runs one. wants15 SUITE: the suite
# runs on 15.
PG_MAJORS=${PG_MAJORS:-"15 18"}
wants15() { [[ " $PG_MAJORS " == *" 15 "* ]] && wants "$1"; }

ensure_deps "${BUILD_DEPS[@]}" "${TEST_DEPS[@]}"
ensure_locale de_DE.UTF-8

echo "== build"
# The module under test is installed into a private copy of PostgreSQL 15's
# installation in this run's directory (test/lib/private_pg.sh), never over
# the installed module: other clusters on the machine (a developer's own,
# another run's) keep loading theirs, and two runs never test each other's
# build. The suites use the copy's programs.
if ! PGBIN=$(private_pg_copy /usr/lib/postgresql/15/bin/pg_config "$RUN_DIR/pg15" 2>"$RUN_DIR/private.log"); then
    cat "$RUN_DIR/private.log"
    note_result private-installation fail
    exit 1
fi
export PGBIN
PG15_BIN=$PGBIN
if ! make -s -j2 PG_CONFIG="$PGBIN/pg_config" >"$RUN_DIR/build.log" 2>&1; then
    cat "$RUN_DIR/build.log"
    note_result build fail
    exit 1
fi
if ! make -s install PG_CONFIG="$PGBIN/pg_config" >"$RUN_DIR/install.log" 2>&1; then
    cat "$RUN_DIR/install.log"
    note_result install fail
    exit 1
fi
chmod -R a+rX "$RUN_DIR/pg15"

PGXS_DIR=$(cd "$(dirname "$("$PGBIN/pg_config" --pgxs)")/../.." && pwd)

# pg_regress and pg_isolation_regress print "test NAME ... ok|FAILED" (or
# "ok N - NAME" in newer versions): count both forms.
count_regress_output() {  # file prefix
    local line name
    while IFS= read -r line; do
        if [[ "$line" =~ ^(test|[[:space:]]+)[[:space:]]*([A-Za-z0-9_-]+)[[:space:]]+\.\.\.[[:space:]]+(ok|FAILED|failed) ]]; then
            name=${BASH_REMATCH[2]}
            if [ "${BASH_REMATCH[3]}" = ok ]; then note_result "$2/$name" ok; else note_result "$2/$name" fail; fi
        elif [[ "$line" =~ ^(not\ )?ok\ [0-9]+[[:space:]]+[-+][[:space:]]+([A-Za-z0-9_-]+) ]]; then
            name=${BASH_REMATCH[2]}
            if [ -z "${BASH_REMATCH[1]}" ]; then note_result "$2/$name" ok; else note_result "$2/$name" fail; fi
        fi
    done <"$1"
}

# count_tap_lines FILE SUITE RC COUNTED_BEFORE FAILED_BEFORE: each "ok N -
# name" / "not ok N - name" line of a suite's log counts; a suite that
# counted nothing, or exited non-zero with no failure counted, is a failure.
count_tap_lines() {
    local line
    while IFS= read -r line; do
        if [[ "$line" =~ ^(not\ )?ok\ [0-9]+\ -\ ([^[:space:]]+) ]]; then
            if [ -z "${BASH_REMATCH[1]}" ]; then note_result "$2/${BASH_REMATCH[2]}" ok
            else note_result "$2/${BASH_REMATCH[2]}" fail; fi
        fi
    done <"$1"
    if [ $((PASSED + FAILED)) -eq "$4" ] || { [ "$3" -ne 0 ] && [ "$FAILED" -eq "$5" ]; }; then
        note_result "$2/runner" fail
    fi
}

if wants unit; then
    echo "== unit (GoogleTest)"
    if bash test/unit/run.sh >"$RUN_DIR/unit.log" 2>&1; then :; fi
    cat "$RUN_DIR/unit.log" | grep -E "^\[ *(OK|FAILED|PASSED) *\]" || cat "$RUN_DIR/unit.log"
    ok=$(grep -cE "^\[ +OK \]" "$RUN_DIR/unit.log" || true)
    bad=$(grep -E "^\[  FAILED  \] [A-Za-z]" "$RUN_DIR/unit.log" | grep -vc " listed below" || true)
    if [ "$ok" -eq 0 ] && [ "$bad" -eq 0 ]; then note_result unit/no-tests-ran fail; fi
    PASSED=$((PASSED + ok)); FAILED=$((FAILED + bad))
    [ "$bad" -gt 0 ] && FAILURES+=("unit")
fi

# run_script_suite LABEL SCRIPT: a suite script that prints its own TAP
# lines ("ok N - name"), run with the programs of $PGBIN; its log goes to
# $RUN_DIR/LABEL.log, each line counts, and a script that counted nothing,
# or failed without a failed line, is a failure too.
run_script_suite() {
    local label=$1 script=$2 counted_before=$((PASSED + FAILED)) failed_before=$FAILED rc
    PGBIN="$PGBIN" bash "$script" >"$RUN_DIR/$label.log" 2>&1
    rc=$?
    count_tap_lines "$RUN_DIR/$label.log" "$label" "$rc" "$counted_before" "$failed_before"
    grep -E "^(ok|not ok|#)" "$RUN_DIR/$label.log" | sed "s/^/   /"
}

# The cmake suite (test/cmake/run.sh): CMakeLists.txt builds, with
# -Werror, the module the Makefile built above: the same sources, exported
# symbols and installed files.
if wants cmake; then
    echo "== cmake (CMakeLists.txt builds the same module as the Makefile)"
    run_script_suite cmake test/cmake/run.sh
fi

if wants15 docs || wants15 regress || wants15 security || wants15 isolation || wants15 pgtap; then
    echo "== starting a private PostgreSQL 15 cluster"
    cluster_start || { note_result cluster fail; exit 1; }
    echo "   socket $PGHOST, port $PGPORT"
fi

# run_regress_suite SUITE RUNNER INPUTDIR DBNAME TEST...: one pg_regress or
# pg_isolation_regress run in a database of its own, against the cluster of
# $PGBIN; each test counts, and a runner that could not start, or counted
# nothing, is a failure too.
run_regress_suite() {
    local suite=$1 runner=$2 inputdir=$3 dbname=$4 rc before
    shift 4
    before=$((PASSED + FAILED))
    "$runner" --bindir="$PGBIN" --inputdir="$inputdir" --outputdir="$RUN_DIR/$suite" \
        --dbname="$dbname" --load-extension=pg_idempotent "$@" >"$RUN_DIR/$suite.log" 2>&1
    rc=$?
    cat "$RUN_DIR/$suite.log"
    count_regress_output "$RUN_DIR/$suite.log" "$suite"
    if [ $((PASSED + FAILED)) -eq "$before" ] || { [ $rc -ne 0 ] && [ "$FAILED" -eq 0 ]; }; then
        note_result "$suite/runner" fail
    fi
    [ -f "$RUN_DIR/$suite/regression.diffs" ] && cat "$RUN_DIR/$suite/regression.diffs"
}

# The docs suite (test/docs/run.sh, issue 26): every SQL example of
# README.md and docs/*.md runs in a fresh database of this cluster and
# prints what the page shows; links, named files, generated tables, figures
# and the version are checked; broken examples must fail it. First, while
# the cluster holds no other test's roles.
if wants15 docs; then
    echo "== docs (every SQL example of README.md and docs/ runs as shown)"
    run_script_suite docs test/docs/run.sh
fi

# The demo suite (test/demo/run.sh): `make demo`'s script, with this run's
# private installation, exits 0 and prints test/demo/expected.out, and
# docs/testing.md quotes only what it prints. Its own throwaway cluster.
if wants15 demo; then
    echo "== demo (make demo's script prints the story docs/testing.md tells)"
    run_script_suite demo test/demo/run.sh
fi

if wants15 regress; then
    echo "== regress (pg_regress)"
    run_regress_suite regress "$PGXS_DIR/src/test/regress/pg_regress" . idem_regress \
        $(cd sql && ls *.sql | grep -v '^security_' | sed "s/\.sql$//" | LC_ALL=C sort)
fi

# The security suite (SECURITY.md): the attacks on 0.6.0 and the trap test,
# as pg_regress files sql/security_*.sql in a database of their own.
if wants15 security; then
    echo "== security (pg_regress: attacks with real roles)"
    run_regress_suite security "$PGXS_DIR/src/test/regress/pg_regress" . idem_security \
        00_helpers $(cd sql && ls security_*.sql | sed "s/\.sql$//" | LC_ALL=C sort)
fi

if wants15 isolation && ls test/specs/*.spec >/dev/null 2>&1; then
    echo "== isolation (pg_isolation_regress)"
    run_regress_suite isolation "$PGXS_DIR/src/test/isolation/pg_isolation_regress" test idem_isolation \
        $(cd test/specs && ls *.spec | sed 's/\.spec$//' | LC_ALL=C sort)
fi

# The stress suite (test/stress/run.sh): every family under concurrency with
# pgbench (several clients, readers beside writers), in a cluster of its own
# of $PGBIN; bounded in transactions, about a minute. It prints "ok N -
# scenario".
if wants15 stress; then
    echo "== stress (pgbench: every family, several clients, readers beside writers)"
    run_script_suite stress test/stress/run.sh
fi

# The pgTAP example (examples/pgtap): each test file runs in a fresh database
# of the private cluster (run.sh creates and drops it) and counts as one test;
# its assertions are printed. pg_prove fails the file on any failed
# assertion, on an error that ends it early, or on a wrong plan.
# run_pgtap_suite LABEL: each pgTAP test file of the example in a fresh
# database of the running cluster (examples/pgtap/run.sh creates and drops
# it), with the psql of $PGBIN.
run_pgtap_suite() {
    local label=$1 t name log
    for t in examples/pgtap/test/*.sql; do
        name=$(basename "$t" .sql)
        log="$RUN_DIR/$label-$name.log"
        if PG_BINDIR="$PGBIN" PGTAP_DB="idem_pgtap_$name" bash examples/pgtap/run.sh -v "$t" >"$log" 2>&1 \
            && grep -qE "^ok [0-9]+" "$log"; then
            note_result "$label/$name" ok
            grep -E "^(ok|not ok) [0-9]+" "$log" | sed "s/^/   $name: /"
        else
            note_result "$label/$name" fail
            cat "$log"
        fi
    done
}

if wants15 pgtap; then
    echo "== pgtap (examples/pgtap, pg_prove)"
    run_pgtap_suite pgtap
fi

if wants15 docs || wants15 regress || wants15 security || wants15 isolation || wants15 pgtap; then
    problems=$(cluster_log_problems)
    if [ -n "$problems" ]; then
        echo "server log shows a crash:"; echo "$problems"
        note_result server-log fail
    else
        note_result server-log ok
    fi
    cluster_stop
fi

# run_tap_suite LABEL PGXS: the TAP tests (test/t/*.pl) with the programs of
# $PGBIN and the Perl modules and pg_regress of that PGXS directory.
run_tap_suite() {
    local label=$1 pgxs=$2 tap_dir t name f
    # TAP tests run initdb, so as root they run as postgres, which may not be
    # able to read this checkout (CI clones under /root): they get a copy.
    tap_dir=$(mktemp -d /tmp/pg_idempotent-tap.XXXXXX)
    mkdir -p "$tap_dir/repo"
    cp -r test META.json LICENSE pg_idempotent.control pg_idempotent--*.sql "$tap_dir/repo/"
    chmod -R a+rX "$tap_dir"
    [ "$(id -u)" -eq 0 ] && chown -R postgres:postgres "$tap_dir"
    for t in test/t/*.pl; do
        name=$(basename "$t" .pl)
        # TAP_ONLY="035_crash_every_family ...": only those (a quick rerun).
        if [ -n "${TAP_ONLY:-}" ] && [[ " $TAP_ONLY " != *" $name "* ]]; then continue; fi
        mkdir -p "$tap_dir/$name"
        [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$tap_dir/$name"
        # TESTDIR places 15's tmp_check and logs, TESTDATADIR and TESTLOGDIR
        # 16 and later's (without them those land in the shared working
        # directory, and a failure's server and test logs were not shown).
        if (cd "$tap_dir/repo" && as_pg env PATH="$PGBIN:$PATH" TESTDIR="$tap_dir/$name" \
            TESTDATADIR="$tap_dir/$name/tmp_check" TESTLOGDIR="$tap_dir/$name/tmp_check/log" \
            PG_REGRESS="$pgxs/src/test/regress/pg_regress" REPO_ROOT="$tap_dir/repo" \
            PERL5LIB="$pgxs/src/test/perl" \
            prove -v "test/t/$name.pl" >"$tap_dir/$name.log" 2>&1); then
            note_result "$label/$name" ok
            grep -E "^(ok|not ok)" "$tap_dir/$name.log" | sed "s/^/   $name: /"
        else
            note_result "$label/$name" fail
            cat "$tap_dir/$name.log"
            for f in "$tap_dir/$name"/tmp_check/log/*; do
                [ -f "$f" ] && { echo "--- $f"; tail -50 "$f"; }
            done
        fi
    done
    rm -rf "$tap_dir"
}

if wants15 tap && ls test/t/*.pl >/dev/null 2>&1; then
    echo "== TAP (prove, PostgreSQL::Test::Cluster)"
    run_tap_suite tap "$PGXS_DIR"
fi

# The citus suite (issue 25): the families against hash-distributed,
# reference and Citus local tables on a coordinator and two workers
# (test/lib/citus.sh), pg_regress files in test/citus. On PostgreSQL 15 only:
# Citus 13.2 supports 15 to 17. Citus is built once from CITUS_SRC (a
# tarball or a directory) into a cache, against the installed server's
# headers, and copied into this run's private installation; without
# CITUS_SRC, ../shared/citus's tarball when it is there; else skipped.
run_citus_suite() {
    local stage before
    ensure_deps "${CITUS_DEPS[@]}"
    if ! stage=$(citus_stage /usr/lib/postgresql/15/bin/pg_config 2>"$RUN_DIR/citus-build.log"); then
        cat "$RUN_DIR/citus-build.log"
        note_result citus/build fail
        return
    fi
    citus_install "$stage" "$RUN_DIR/pg15" || { note_result citus/install fail; return; }
    citus_cluster_start 2>"$RUN_DIR/citus-cluster.log" || {
        cat "$RUN_DIR/citus-cluster.log"; note_result citus/cluster fail; citus_cluster_stop; return; }
    before=$((PASSED + FAILED))
    PGHOST=$CITUS_DIR PGPORT=${CITUS_PORTS[0]} CITUS_WORKER_PORT=${CITUS_PORTS[1]} \
        "$PGXS_DIR/src/test/regress/pg_regress" --bindir="$PGBIN" --inputdir=test/citus \
        --outputdir="$RUN_DIR/citus" --use-existing --dbname=postgres --user=postgres \
        $(cd test/citus/sql && ls *.sql | sed "s/\.sql$//" | LC_ALL=C sort) >"$RUN_DIR/citus.log" 2>&1
    cat "$RUN_DIR/citus.log"
    count_regress_output "$RUN_DIR/citus.log" citus
    [ $((PASSED + FAILED)) -eq "$before" ] && note_result citus/runner fail
    [ -f "$RUN_DIR/citus/regression.diffs" ] && cat "$RUN_DIR/citus/regression.diffs"
    # Two coordinator sessions at once: isolation specs in test/citus/specs.
    before=$((PASSED + FAILED))
    PGHOST=$CITUS_DIR PGPORT=${CITUS_PORTS[0]} \
        "$PGXS_DIR/src/test/isolation/pg_isolation_regress" --bindir="$PGBIN" --inputdir=test/citus \
        --outputdir="$RUN_DIR/citus-isolation" --use-existing --dbname=postgres --user=postgres \
        $(cd test/citus/specs && ls *.spec | sed "s/\.spec$//" | LC_ALL=C sort) >"$RUN_DIR/citus-isolation.log" 2>&1
    cat "$RUN_DIR/citus-isolation.log"
    count_regress_output "$RUN_DIR/citus-isolation.log" citus-isolation
    [ $((PASSED + FAILED)) -eq "$before" ] && note_result citus-isolation/runner fail
    [ -f "$RUN_DIR/citus-isolation/regression.diffs" ] && cat "$RUN_DIR/citus-isolation/regression.diffs"
    # The pg_idempotent rerun command against the coordinator.
    before=$((PASSED + FAILED))
    local rc failed_before=$FAILED
    bash test/citus/cli.sh cli/pg_idempotent "$PGBIN/psql" \
        "host=$CITUS_DIR port=${CITUS_PORTS[0]} dbname=postgres user=postgres" >"$RUN_DIR/citus-cli.log" 2>&1
    rc=$?
    cat "$RUN_DIR/citus-cli.log"
    count_regress_output "$RUN_DIR/citus-cli.log" citus-cli
    if [ $((PASSED + FAILED)) -eq "$before" ] || { [ $rc -ne 0 ] && [ "$FAILED" -eq "$failed_before" ]; }; then
        note_result citus-cli/runner fail
    fi
    local problems
    problems=$(citus_log_problems)
    if [ -n "$problems" ]; then echo "$problems"; note_result citus/server-log fail; fi
    citus_cluster_stop
}
# The tarball beside the repository (../shared/citus) when CITUS_SRC is not
# set: make test runs what CI runs.
if [ -z "${CITUS_SRC:-}" ] && [ -f ../shared/citus/citus-13.2.2.tar.gz ]; then
    CITUS_SRC=$(cd ../shared/citus && pwd)/citus-13.2.2.tar.gz
fi
if wants15 citus; then
    echo "== citus (a coordinator and two workers, PostgreSQL 15)"
    if [ -z "${CITUS_SRC:-}" ]; then
        echo "   skipped: CITUS_SRC is not set (a Citus source tarball or directory) and there is no ../shared/citus/citus-13.2.2.tar.gz"
        SKIPPED=$((SKIPPED + 1))
    elif [ ! -e "$CITUS_SRC" ]; then
        echo "   CITUS_SRC=$CITUS_SRC does not exist"
        note_result citus/source fail
    else
        CITUS_SRC=$(cd "$(dirname "$CITUS_SRC")" && pwd)/$(basename "$CITUS_SRC")
        run_citus_suite
    fi
fi

# PostgreSQL 18 (PG_MAJORS="15 18" by default; PG_MAJORS=15 skips it): the
# module built from a copy of this tree against PostgreSQL 18.6, which
# test/lib/pg18.sh builds once from Debian sid's source package into a cache,
# installed into a private copy of that installation (never into the cache
# itself, which other runs share), and the regress, security, isolation,
# pgTAP, stress and TAP suites run again. Their names start with "pg18-".
# (The packages and the sanitizers are 15's: Debian 12 has no server-dev
# package for 18, which pg_buildext needs.)
if [[ " $PG_MAJORS " == *" 18 "* ]] && { wants regress || wants security || wants isolation || wants stress || wants tap || wants pgtap; }; then
    echo "== PostgreSQL 18 (build or reuse the cached server, build the module, run the suites)"
    if ! PG18_PREFIX=$(bash test/lib/pg18.sh 2>"$RUN_DIR/pg18-server.log"); then
        cat "$RUN_DIR/pg18-server.log"
        note_result pg18-server fail
    else
        PG18_DIR="$RUN_DIR/pg18"
        cp -a "$PG18_PREFIX" "$PG18_DIR" && rm -f "$PG18_DIR"/.complete*
        chmod -R a+rX "$PG18_DIR"
        mkdir -p "$RUN_DIR/build18"
        git ls-files -co --exclude-standard | grep -vE '\.(o|so|d|bc)$' | tar -cf - -T - | tar -xf - -C "$RUN_DIR/build18"
        if ! make -C "$RUN_DIR/build18" -s -j2 PG_CONFIG="$PG18_DIR/bin/pg_config" install >"$RUN_DIR/pg18-build.log" 2>&1; then
            cat "$RUN_DIR/pg18-build.log"
            note_result pg18-build fail
        else
            PGBIN="$PG18_DIR/bin"
            PGXS18="$PG18_DIR/lib/postgresql/pgxs"
            [ -d "$PGXS18" ] || PGXS18="$PG18_DIR/lib/pgxs"
            if cluster_start; then
                echo "   socket $PGHOST, port $PGPORT"
                if wants regress; then
                    echo "== pg18-regress"
                    run_regress_suite pg18-regress "$PGXS18/src/test/regress/pg_regress" . idem_regress \
                        $(cd sql && ls *.sql | grep -v '^security_' | sed "s/\.sql$//" | LC_ALL=C sort)
                fi
                if wants security; then
                    echo "== pg18-security"
                    run_regress_suite pg18-security "$PGXS18/src/test/regress/pg_regress" . idem_security \
                        00_helpers $(cd sql && ls security_*.sql | sed "s/\.sql$//" | LC_ALL=C sort)
                fi
                if wants isolation; then
                    echo "== pg18-isolation"
                    run_regress_suite pg18-isolation "$PGXS18/src/test/isolation/pg_isolation_regress" test \
                        idem_isolation $(cd test/specs && ls *.spec | sed 's/\.spec$//' | LC_ALL=C sort)
                fi
                if wants pgtap; then
                    echo "== pg18-pgtap"
                    run_pgtap_suite pg18-pgtap
                fi
                problems=$(cluster_log_problems)
                if [ -n "$problems" ]; then
                    echo "server log shows a crash:"; echo "$problems"
                    note_result pg18-server-log fail
                else
                    note_result pg18-server-log ok
                fi
                cluster_stop
            else
                note_result pg18-cluster fail
            fi
            if wants stress; then
                echo "== pg18-stress"
                run_script_suite pg18-stress test/stress/run.sh
            fi
            if wants tap && ls test/t/*.pl >/dev/null 2>&1; then
                echo "== pg18-tap"
                run_tap_suite pg18-tap "$PGXS18"
            fi
            PGBIN=$PG15_BIN
        fi
    fi
fi

# The packages (test/package): deb.sh builds the Debian package in a copy of
# the tree, installs it with dpkg -i, uses it and purges it; dist.sh makes the
# PGXN archive and checks it. dpkg -i writes where `make install` does, so
# deb.sh takes the install lock (/tmp/pg_idempotent-install.lock)
# exclusively: two runs never install their packages at once.
if wants15 package; then
    echo "== package (Debian package, PGXN archive)"
    for t in deb dist; do
        if bash "test/package/$t.sh" >"$RUN_DIR/package-$t.log" 2>&1; then
            note_result "package/$t" ok
            grep -E "^(ok|not ok) " "$RUN_DIR/package-$t.log" | sed "s/^/   $t: /"
        else
            note_result "package/$t" fail
            cat "$RUN_DIR/package-$t.log"
        fi
    done
fi

# The bench suite (test/bench/run.sh): make bench's script from end to end
# at a tiny size, one round each, into a directory of its own (the committed
# report stays): every benchmark runs and the report is whole. About three
# minutes (its own build and cluster).
if wants15 bench; then
    echo "== bench (make bench's script at a tiny size: every benchmark runs, the report is whole)"
    run_script_suite bench test/bench/run.sh
fi

# ASan + UBSan (test/sanitize/run.sh): the regress suite and the isolation
# specs once more, against a sanitized build of a copy of the tree, with a
# self-test that the sanitizers catch a planted bug. It installs that build
# into a private copy of PostgreSQL's installation of its own and runs its
# server from there.
if wants15 sanitize; then
    echo "== sanitize (ASan + UBSan build: regress, isolation, self-test)"
    failed_before=$FAILED
    counted_before=$((PASSED + FAILED))
    SANITIZE_OUT="$RUN_DIR/sanitize" bash test/sanitize/run.sh >"$RUN_DIR/sanitize.log" 2>&1
    rc=$?
    cat "$RUN_DIR/sanitize.log"
    count_tap_lines "$RUN_DIR/sanitize.log" sanitize "$rc" "$counted_before" "$failed_before"
fi

[ "$FAILED" -eq 0 ]
