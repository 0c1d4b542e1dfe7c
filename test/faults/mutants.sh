# Sourced by test/faults/run.sh: a build of the extension with four
# deliberate bugs, for the self-test that the checks catch them:
#
#   merge      no version guard (neither the plan's "stale" action nor the
#              upsert's WHERE): a lower version that arrives last wins
#   fencing    tokens are not compared (check_lease and save_point accept
#              any token of an in-progress key): a stalled worker's write
#              after a takeover commits
#   publish    retention drops old version tables but keeps their rows in
#              idem.dataset_versions
#   effects    effect_done compares neither the token nor the state: a
#              stalled dispatcher's report after a takeover takes hold
#
# Each mutation is a Perl substitution of the source that must match: a
# mutation that no longer applies (the code moved on) fails the suite, and
# is then rewritten against the new code.

# mutate FILE SUBSTITUTION: applies it to the copy in MUTANT_SRC.
mutate() {
    perl -0777 -i -pe "$2 or die qq{mutation of $1 did not apply: $2\n}" "$MUTANT_SRC/$1"
}

# build_mutant DEST: copies the tree (with this tree's objects, so that only
# the mutated files are compiled again) to DEST/src, applies the mutations,
# and installs the build into a private copy of PGBIN's installation in
# DEST/pg. Prints that copy's bindir; the build's output goes to
# DEST/build.log.
build_mutant() {
    local dest=$1 bindir
    MUTANT_SRC=$dest/src
    copy_tree "$ROOT" "$MUTANT_SRC" || return 1
    (cd "$ROOT" && find src cli -name '*.o' -o -name '*.bc' -o -name '*.d' | tar -cf - -T - pg_idempotent.so cli/pg_idempotent 2>/dev/null) |
        tar -C "$MUTANT_SRC" -xf - 2>/dev/null
    {
        mutate src/merge/merge_sql.cpp 's/(\n    if \()!s\.version\.empty\(\)(\)\n        p \+= " WHEN " \+ s\.version\.less\(s\.version\.value\("d"\))/${1}false${2}/' &&
        mutate src/merge/merge_sql.cpp 's/(std::string not_older\([^)]*\)\n\{\n    if \()s\.version\.empty\(\)\)/${1}true)/' &&
        mutate src/keys/leases.cpp 's/if \(row->token != std::optional<std::int64_t>\(token\)\)/if (false)/' &&
        mutate src/keys/leases.cpp 's/\? " AND k\.token OPERATOR\(pg_catalog\.=\) \$4"/? " AND \$4::pg_catalog.int8 IS NOT NULL"/' &&
        mutate src/effects/delivery.cpp 's/" AND e\.token OPERATOR\(pg_catalog\.=\) \$3 AND e\.state OPERATOR\(pg_catalog\.=\) '"'"'leased'"'"' RETURNING true"/" AND \$3::pg_catalog.int8 IS NOT NULL RETURNING true"/' &&
        mutate src/publish/publish.cpp 's/"DELETE FROM idem\.dataset_versions WHERE schema_name/"SELECT FROM idem.dataset_versions WHERE schema_name/'
    } >"$dest/build.log" 2>&1 || { cat "$dest/build.log" >&2; return 1; }
    bindir=$(private_pg_copy "$PGBIN/pg_config" "$dest/pg" 2>>"$dest/build.log") &&
        make -C "$MUTANT_SRC" -s -j2 PG_CONFIG="$bindir/pg_config" install >>"$dest/build.log" 2>&1 ||
        { cat "$dest/build.log" >&2; return 1; }
    chmod -R a+rX "$dest/pg"
    echo "$bindir"
}
