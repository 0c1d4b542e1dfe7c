#!/usr/bin/env bash
# The whole test suite: `make test` (and .ci/run) runs exactly this.
#
# Every suite runs on each PostgreSQL major of PG_MAJORS ("15 17 18" by
# default), each from Debian's own packages: 15 on this Debian 12 machine, 17
# (Debian 13) and 18 (Debian unstable) in Debian roots that
# test/lib/debian_root.sh makes once with debootstrap and caches under
# /var/cache/pg_idempotent/roots (their binaries need a newer libc than
# Debian 12's). For each major:
#
#   1. installs missing Debian packages (as root; otherwise names them)
#   2. builds with -Werror and installs the module into a private copy of
#      that major's installation (never over the installed module)
#   3. runs the GoogleTest unit tests of the pure C++ core, and the cmake
#      suite (test/cmake: CMakeLists.txt builds the same module)
#   4. starts a private cluster (own socket dir and port)
#   5. runs the docs suite (test/docs: README's and docs/' examples), the
#      demo suite (test/demo: `make demo`'s script), the pg_regress suite,
#      the security suite (sql/security_*.sql),
#      the isolation specs, the stress suite (test/stress: pgbench, its own
#      cluster), the fault suite (test/faults: cancels, kills, a full disk,
#      its own cluster), the pgTAP example (examples/pgtap) and the TAP tests; the
#      citus suite where Citus is installed for that major; then
#      the package suite: builds, installs and purges the Debian package,
#      checks the PGXN archive; the bench suite (make bench at a tiny
#      size); last the sanitize suite
#   6. checks the server log for crashes
#   7. removes the cluster (also on failure or Ctrl-C)
#
# A major other than 15 runs this same script inside its root
# (test/lib/debian_root_run.sh: /proc and /dev mounted for the run and
# unmounted on every way out) on a copy of the tree; its results come back
# in a file. Every result is named after its major (pg17-regress/merge);
# each major prints its counts, and the run ends with one total,
# "N passed, N failed[, N skipped]", and a non-zero exit on any failure.
#
# SUITES="unit cmake docs demo regress security isolation stress faults pgtap tap citus package bench sanitize"
# limits what runs (all by default); PG_MAJORS="15" or "17 18" the majors.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
# Inside a Debian root, IDEM_ROOT_MAJOR is the major it holds (and the only
# one this run tests); IDEM_RESULTS the file the results go back in.
IDEM_ROOT_MAJOR=${IDEM_ROOT_MAJOR:-}
HOST_MAJOR=15
export PG_MAJOR=${IDEM_ROOT_MAJOR:-$HOST_MAJOR}
source test/lib/deps.sh
source test/lib/cluster.sh
source test/lib/private_pg.sh
source test/lib/citus.sh
source test/lib/copy_tree.sh

SUITES=${SUITES:-"unit cmake docs demo regress security isolation stress faults pgtap tap citus package bench sanitize"}
PG_MAJORS=${PG_MAJORS:-"15 17 18"}
export SUITES
# Logs and pg_regress output go to a directory of this run, so two runs on
# one machine (a developer and CI, or two worktrees) never mix their results.
RUN_DIR=${IDEM_RUN_DIR:-$(mktemp -d /tmp/pg_idempotent-run.XXXXXX)}
mkdir -p "$RUN_DIR"
chmod a+rwx "$RUN_DIR"
PASSED=0
FAILED=0
SKIPPED=0
FAILURES=()
# The major whose suites are running: every result is named after it.
MAJOR=$PG_MAJOR

note_result() {  # name ok|fail
    if [ "$2" = ok ]; then PASSED=$((PASSED + 1)); else FAILED=$((FAILED + 1)); FAILURES+=("pg$MAJOR-$1"); fi
}
note_skip() {  # what: one line, counted in "N skipped"
    echo "   skipped: $1"
    SKIPPED=$((SKIPPED + 1))
}

finish() {
    cluster_stop
    citus_cluster_stop
    # The private installations go; the logs stay.
    rm -rf "$RUN_DIR/pg$MAJOR"
    if [ -n "$IDEM_ROOT_MAJOR" ]; then
        { echo "$PASSED $FAILED $SKIPPED"; printf '%s\n' ${FAILURES[@]+"${FAILURES[@]}"}; } >"$IDEM_RESULTS"
        return
    fi
    echo
    [ -n "${MAJOR_SUMMARY:-}" ] && printf '%s' "$MAJOR_SUMMARY"
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
wants_server() { wants docs || wants regress || wants security || wants isolation || wants pgtap; }

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

# run_regress_suite SUITE RUNNER INPUTDIR DBNAME TEST...: one pg_regress or
# pg_isolation_regress run in a database of its own, against the cluster of
# $PGBIN; each test counts, and a runner that could not start, or counted
# nothing, is a failure too.
run_regress_suite() {
    local suite=$1 runner=$2 inputdir=$3 dbname=$4 rc before failed_before=$FAILED
    shift 4
    before=$((PASSED + FAILED))
    "$runner" --bindir="$PGBIN" --inputdir="$inputdir" --outputdir="$RUN_DIR/$suite" \
        --dbname="$dbname" --load-extension=pg_idempotent "$@" >"$RUN_DIR/$suite.log" 2>&1
    rc=$?
    cat "$RUN_DIR/$suite.log"
    count_regress_output "$RUN_DIR/$suite.log" "$suite"
    if [ $((PASSED + FAILED)) -eq "$before" ] || { [ $rc -ne 0 ] && [ "$FAILED" -eq "$failed_before" ]; }; then
        note_result "$suite/runner" fail
    fi
    [ -f "$RUN_DIR/$suite/regression.diffs" ] && cat "$RUN_DIR/$suite/regression.diffs"
}

# run_pgtap_suite: each pgTAP test file of the example (examples/pgtap) in
# a fresh database of the running cluster (examples/pgtap/run.sh creates
# and drops it), with the psql of $PGBIN; each file counts as one test and
# its assertions are printed. pg_prove fails the file on any failed
# assertion, on an error that ends it early, or on a wrong plan.
run_pgtap_suite() {
    local t name log
    for t in examples/pgtap/test/*.sql; do
        name=$(basename "$t" .sql)
        log="$RUN_DIR/pgtap-$name.log"
        if PG_BINDIR="$PGBIN" PGTAP_DB="idem_pgtap_$name" bash examples/pgtap/run.sh -v "$t" >"$log" 2>&1 \
            && grep -qE "^ok [0-9]+" "$log"; then
            note_result "pgtap/$name" ok
            grep -E "^(ok|not ok) [0-9]+" "$log" | sed "s/^/   $name: /"
        else
            note_result "pgtap/$name" fail
            cat "$log"
        fi
    done
}

# run_tap_suite: the TAP tests (test/t/*.pl) with the programs of $PGBIN and
# the Perl modules and pg_regress of $PGXS_DIR.
run_tap_suite() {
    local tap_dir t name f
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
            PG_REGRESS="$PGXS_DIR/src/test/regress/pg_regress" REPO_ROOT="$tap_dir/repo" \
            PERL5LIB="$PGXS_DIR/src/test/perl" \
            prove -v "test/t/$name.pl" >"$tap_dir/$name.log" 2>&1); then
            note_result "tap/$name" ok
            grep -E "^(ok|not ok)" "$tap_dir/$name.log" | sed "s/^/   $name: /"
        else
            note_result "tap/$name" fail
            cat "$tap_dir/$name.log"
            for f in "$tap_dir/$name"/tmp_check/log/*; do
                [ -f "$f" ] && { echo "--- $f"; tail -50 "$f"; }
            done
        fi
    done
    rm -rf "$tap_dir"
}

# The citus suite (issue 25): the families against hash-distributed,
# reference and Citus local tables on a coordinator and two workers
# (test/lib/citus.sh), pg_regress files and isolation specs in test/citus,
# and the command line tool against the coordinator. It runs where Citus is
# installed for the server under test (Citus's own packages put citus.so in
# its pg_config --pkglibdir; the private copy of that installation then
# holds it too), or CITUS_PG_CONFIG names such a server of this major (the
# module is then built and installed into a private copy of it). Without
# either, one line says it is skipped. The project never carries, fetches
# or builds Citus.
run_citus_suite() {
    local config pgbin=$PGBIN
    if ! config=$(citus_pg_config "$MAJOR" "$SYSTEM_PG_CONFIG"); then
        note_skip "no Citus installation for PostgreSQL $MAJOR (citus.so in $("$SYSTEM_PG_CONFIG" --pkglibdir), or CITUS_PG_CONFIG)"
        return
    fi
    if [ "$config" != "$SYSTEM_PG_CONFIG" ]; then
        echo "   Citus of $config: the module is built into a private copy of that installation"
        if ! pgbin=$(private_pg_copy "$config" "$RUN_DIR/citus-pg" 2>"$RUN_DIR/citus-build.log") ||
           ! copy_tree "$ROOT" "$RUN_DIR/citus-src" ||
           ! make -C "$RUN_DIR/citus-src" -s -j2 PG_CONFIG="$pgbin/pg_config" install >>"$RUN_DIR/citus-build.log" 2>&1; then
            cat "$RUN_DIR/citus-build.log"; note_result citus/build fail; return
        fi
    fi
    PGBIN=$pgbin citus_suite
    rm -rf "$RUN_DIR/citus-pg" "$RUN_DIR/citus-src"
}
citus_suite() {
    local before rc failed_before problems
    citus_cluster_start 2>"$RUN_DIR/citus-cluster.log" || {
        cat "$RUN_DIR/citus-cluster.log"; note_result citus/cluster fail; citus_cluster_stop; return; }
    echo "   Citus $(citus_version) on PostgreSQL $MAJOR"
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
    failed_before=$FAILED
    bash test/citus/cli.sh "$PGBIN/pg_idempotent" "$PGBIN/psql" \
        "host=$CITUS_DIR port=${CITUS_PORTS[0]} dbname=postgres user=postgres" >"$RUN_DIR/citus-cli.log" 2>&1
    rc=$?
    cat "$RUN_DIR/citus-cli.log"
    count_regress_output "$RUN_DIR/citus-cli.log" citus-cli
    if [ $((PASSED + FAILED)) -eq "$before" ] || { [ $rc -ne 0 ] && [ "$FAILED" -eq "$failed_before" ]; }; then
        note_result citus-cli/runner fail
    fi
    problems=$(citus_log_problems)
    if [ -n "$problems" ]; then echo "$problems"; note_result citus/server-log fail; fi
    citus_cluster_stop
}

# run_major: every suite of SUITES on PostgreSQL $MAJOR, Debian's package of
# it on this machine (the host's 15, or the major of the Debian root this
# runs in).
run_major() {
    SYSTEM_PG_CONFIG=/usr/lib/postgresql/$MAJOR/bin/pg_config
    ensure_deps "${BUILD_DEPS[@]}" "${TEST_DEPS[@]}"
    ensure_locale de_DE.UTF-8

    echo "== PostgreSQL $MAJOR: build"
    # The module under test is installed into a private copy of the
    # installation in this run's directory (test/lib/private_pg.sh), never
    # over the installed module: other clusters on the machine (a
    # developer's own, another run's) keep loading theirs, and two runs
    # never test each other's build. The suites use the copy's programs.
    if ! PGBIN=$(private_pg_copy "$SYSTEM_PG_CONFIG" "$RUN_DIR/pg$MAJOR" 2>"$RUN_DIR/private.log"); then
        cat "$RUN_DIR/private.log"
        note_result private-installation fail
        return
    fi
    export PGBIN
    echo "   $("$PGBIN/pg_config" --version), g++ $(g++ -dumpfullversion)"
    if ! make -s -j2 PG_CONFIG="$PGBIN/pg_config" >"$RUN_DIR/build.log" 2>&1; then
        cat "$RUN_DIR/build.log"
        note_result build fail
        return
    fi
    if ! make -s install PG_CONFIG="$PGBIN/pg_config" >"$RUN_DIR/install.log" 2>&1; then
        cat "$RUN_DIR/install.log"
        note_result install fail
        return
    fi
    chmod -R a+rX "$RUN_DIR/pg$MAJOR"
    PGXS_DIR=$(cd "$(dirname "$("$PGBIN/pg_config" --pgxs)")/../.." && pwd)

    if wants unit; then
        echo "== unit (GoogleTest)"
        if bash test/unit/run.sh >"$RUN_DIR/unit.log" 2>&1; then :; fi
        grep -E "^\[ *(OK|FAILED|PASSED) *\]|^format-check" "$RUN_DIR/unit.log" || cat "$RUN_DIR/unit.log"
        local ok bad
        ok=$(grep -cE "^\[ +OK \]" "$RUN_DIR/unit.log" || true)
        bad=$(grep -E "^\[  FAILED  \] [A-Za-z]" "$RUN_DIR/unit.log" | grep -vc " listed below" || true)
        if [ "$ok" -eq 0 ] && [ "$bad" -eq 0 ]; then note_result unit/no-tests-ran fail; fi
        PASSED=$((PASSED + ok)); FAILED=$((FAILED + bad))
        [ "$bad" -gt 0 ] && FAILURES+=("pg$MAJOR-unit")
    fi

    # The cmake suite (test/cmake/run.sh): CMakeLists.txt builds, with
    # -Werror, the module the Makefile built above: the same sources,
    # exported symbols and installed files.
    if wants cmake; then
        echo "== cmake (CMakeLists.txt builds the same module as the Makefile)"
        run_script_suite cmake test/cmake/run.sh
    fi

    if wants_server; then
        echo "== starting a private PostgreSQL $MAJOR cluster"
        if cluster_start; then
            echo "   socket $PGHOST, port $PGPORT"
            server_suites
            local problems
            problems=$(cluster_log_problems)
            if [ -n "$problems" ]; then
                echo "server log shows a crash:"; echo "$problems"
                note_result server-log fail
            else
                note_result server-log ok
            fi
            cluster_stop
        else
            note_result cluster fail
        fi
    fi

    # The demo suite (test/demo/run.sh): `make demo`'s script, with this
    # run's private installation, exits 0 and prints test/demo/expected.out,
    # and docs/testing.md quotes only what it prints. Its own cluster.
    if wants demo; then
        echo "== demo (make demo's script prints the story docs/testing.md tells)"
        run_script_suite demo test/demo/run.sh
    fi

    # The stress suite (test/stress/run.sh): every family under concurrency
    # with pgbench (several clients, readers beside writers), in a cluster
    # of its own; bounded in transactions, about a minute.
    if wants stress; then
        echo "== stress (pgbench: every family, several clients, readers beside writers)"
        run_script_suite stress test/stress/run.sh
    fi

    # The fault suite (test/faults/run.sh): every family's jobs retried by
    # several clients while an agent cancels, terminates and kills backends,
    # kills the postmaster and fills a small tablespace; then each family's
    # invariant, amcheck, and three self-tests (one a mutated build). About a minute.
    if wants faults; then
        echo "== faults (cancels, timeouts, kill -9, a full disk; the invariants after)"
        run_script_suite faults test/faults/run.sh
    fi

    if wants tap && ls test/t/*.pl >/dev/null 2>&1; then
        echo "== TAP (prove, PostgreSQL::Test::Cluster)"
        run_tap_suite
    fi

    if wants citus; then
        echo "== citus (a coordinator and two workers)"
        run_citus_suite
    fi

    # The packages (test/package): deb.sh builds the Debian package of this
    # major in a copy of the tree, installs it with apt, uses it and purges
    # it; dist.sh makes the PGXN archive and checks it. The install writes
    # where `make install` does, so deb.sh takes the install lock
    # (/tmp/pg_idempotent-install.lock) exclusively.
    if wants package; then
        echo "== package (Debian package, PGXN archive)"
        local t
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

    # The bench suite (test/bench/run.sh): make bench's script from end to
    # end at a tiny size, one round each, into a directory of its own (the
    # committed report stays): every benchmark runs and the report is whole.
    if wants bench; then
        echo "== bench (make bench's script at a tiny size: every benchmark runs, the report is whole)"
        run_script_suite bench test/bench/run.sh
    fi

    # ASan + UBSan (test/sanitize/run.sh): the regress suite and the
    # isolation specs once more, against a sanitized build of a copy of the
    # tree, with a self-test that the sanitizers catch a planted bug, in a
    # private installation of its own.
    if wants sanitize; then
        echo "== sanitize (ASan + UBSan build: regress, isolation, self-test)"
        local failed_before=$FAILED counted_before=$((PASSED + FAILED)) rc
        SANITIZE_OUT="$RUN_DIR/sanitize" bash test/sanitize/run.sh >"$RUN_DIR/sanitize.log" 2>&1
        rc=$?
        cat "$RUN_DIR/sanitize.log"
        count_tap_lines "$RUN_DIR/sanitize.log" sanitize "$rc" "$counted_before" "$failed_before"
    fi
}

# server_suites: the suites that share the private cluster of run_major.
server_suites() {
    # The docs suite (test/docs/run.sh, issue 26): every SQL example of
    # README.md and docs/*.md runs in a fresh database of this cluster and
    # prints what the page shows; links, named files, generated tables,
    # figures and the version are checked; broken examples must fail it.
    # First, while the cluster holds no other test's roles.
    if wants docs; then
        echo "== docs (every SQL example of README.md and docs/ runs as shown)"
        run_script_suite docs test/docs/run.sh
    fi
    if wants regress; then
        echo "== regress (pg_regress)"
        run_regress_suite regress "$PGXS_DIR/src/test/regress/pg_regress" . idem_regress \
            $(cd sql && ls *.sql | grep -v '^security_' | sed "s/\.sql$//" | LC_ALL=C sort)
    fi
    # The security suite (SECURITY.md): the attacks with real roles, as
    # pg_regress files sql/security_*.sql in a database of their own.
    if wants security; then
        echo "== security (pg_regress: attacks with real roles)"
        run_regress_suite security "$PGXS_DIR/src/test/regress/pg_regress" . idem_security \
            00_helpers $(cd sql && ls security_*.sql | sed "s/\.sql$//" | LC_ALL=C sort)
    fi
    if wants isolation && ls test/specs/*.spec >/dev/null 2>&1; then
        echo "== isolation (pg_isolation_regress)"
        run_regress_suite isolation "$PGXS_DIR/src/test/isolation/pg_isolation_regress" test idem_isolation \
            $(cd test/specs && ls *.spec | sed 's/\.spec$//' | LC_ALL=C sort)
    fi
    if wants pgtap; then
        echo "== pgtap (examples/pgtap, pg_prove)"
        run_pgtap_suite
    fi
}

# run_in_root M: run_major for PostgreSQL M inside its Debian root, on a copy
# of this tree; its results are added to this run's.
ROOT_ENV_PASSED=(SUITES TAP_ONLY STRESS_ONLY STRESS_SCALE CI DEB_BUILD_OPTIONS)
run_in_root() {
    local m=$1 root work inner rc results p f s name v env=()
    MAJOR=$m
    echo "== PostgreSQL $m: Debian's packages in a Debian root (test/lib/debian_root.sh)"
    if [ "$(id -u)" -ne 0 ]; then
        note_skip "PostgreSQL $m runs in a Debian root (debootstrap, chroot), which needs root"
        return
    fi
    if ! root=$(bash test/lib/debian_root.sh "$m" 2>&1 >"$RUN_DIR/root-$m.path" | tee "$RUN_DIR/root-$m.log" >&2;
                [ "${PIPESTATUS[0]}" -eq 0 ] && cat "$RUN_DIR/root-$m.path"); then
        note_result debian-root fail
        return
    fi
    work=$(mktemp -d "$root/tmp/pg_idempotent-run.XXXXXX")
    chmod 755 "$work"
    inner=${work#"$root"}
    copy_tree "$ROOT" "$work/p" || { note_result copy-tree fail; return; }
    # The git directory too (a few MB): make dist archives HEAD, and the
    # docs suite lists the repository's files as git knows them.
    [ -d "$ROOT/.git" ] && cp -a "$ROOT/.git" "$work/p/.git"
    mkdir -p "$work/logs"
    for name in "${ROOT_ENV_PASSED[@]}"; do
        [ -n "${!name+x}" ] && env+=("$name=${!name}")
    done
    bash test/lib/debian_root_run.sh "$root" "${env[@]}" IDEM_ROOT_MAJOR="$m" \
        IDEM_RESULTS="$inner/results" IDEM_RUN_DIR="$inner/logs" bash "$inner/p/test/run_all.sh"
    rc=$?
    if [ -f "$work/results" ]; then
        { read -r p f s; mapfile -t results; } <"$work/results"
        PASSED=$((PASSED + p)); FAILED=$((FAILED + f)); SKIPPED=$((SKIPPED + s))
        for v in ${results[@]+"${results[@]}"}; do [ -n "$v" ] && FAILURES+=("$v"); done
        [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && note_result root-run fail
    else
        echo "   the run in the Debian root exited $rc and wrote no results"
        note_result root-run fail
    fi
    rm -rf "$RUN_DIR/pg$m-logs"
    mv "$work/logs" "$RUN_DIR/pg$m-logs" 2>/dev/null
    rm -rf --one-file-system "$work"
}

# major_done M START: this major's counts, kept for the end.
major_done() {
    local m=$1 p=$((PASSED - $2)) f=$((FAILED - $3)) s=$((SKIPPED - $4))
    MAJOR_SUMMARY+="PostgreSQL $m: $p passed, $f failed, $s skipped ($(( SECONDS - $5 )) s)"$'\n'
    echo "== PostgreSQL $m: $p passed, $f failed, $s skipped"
}

if [ -n "$IDEM_ROOT_MAJOR" ]; then
    run_major
    [ "$FAILED" -eq 0 ]
    exit
fi

MAJOR_SUMMARY=
ensure_deps "${HOST_DEPS[@]}"
for m in $PG_MAJORS; do
    start=("$PASSED" "$FAILED" "$SKIPPED" "$SECONDS")
    case $m in
        "$HOST_MAJOR") MAJOR=$m; run_major ;;
        17|18) run_in_root "$m" ;;
        *) MAJOR=$m; echo "== PostgreSQL $m"; note_result major fail
           echo "   PG_MAJORS: $m is not one of $HOST_MAJOR (this machine), 17 (Debian 13) or 18 (Debian unstable)" ;;
    esac
    major_done "$m" "${start[@]}"
    MAJOR=$HOST_MAJOR
    PGBIN=/usr/lib/postgresql/$HOST_MAJOR/bin
done

[ "$FAILED" -eq 0 ]
