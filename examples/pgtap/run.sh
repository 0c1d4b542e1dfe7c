#!/usr/bin/env bash
# Runs the example's pgTAP tests in a throwaway database:
#
#   bash examples/pgtap/run.sh [PG_PROVE_OPTION ...] [TEST_FILE ...]
#
# On the server that the PG* variables (or libpq's defaults) point at, it
# creates the database $PGTAP_DB (default idem_pgtap_example; dropped first if
# it exists), installs pgtap and pg_idempotent there (which needs a
# superuser), loads pipeline.sql, runs pg_prove on the test files (default:
# all of test/*.sql), drops the database again (PGTAP_KEEP=1 keeps it), and
# exits with pg_prove's status: 0 when every assertion passed.
#
# `make test` runs it once per test file against its private cluster (suite
# "pgtap"). To run the tests against a database of your own instead, see
# README.md.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
DB=${PGTAP_DB:-idem_pgtap_example}
# psql and friends of the server's major version (Debian keeps them out of PATH).
BINDIR=${PG_BINDIR:-$(pg_config --bindir 2>/dev/null || echo /usr/lib/postgresql/15/bin)}

prove_args=()
files=()
for arg in "$@"; do
    case "$arg" in
        *.sql) files+=("$arg") ;;
        *) prove_args+=("$arg") ;;
    esac
done
if [ ${#files[@]} -eq 0 ]; then
    cd "$HERE"
    files=(test/*.sql)
fi

# (client_min_messages: no NOTICE when there is nothing to drop)
drop_db() { PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning" "$BINDIR/dropdb" --if-exists "$DB"; }
drop_db
"$BINDIR/createdb" "$DB"
if [ "${PGTAP_KEEP:-0}" != 1 ]; then
    trap drop_db EXIT
fi

"$BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -d "$DB" \
    -c 'CREATE EXTENSION pgtap' \
    -c 'CREATE EXTENSION pg_idempotent' \
    -f "$HERE/pipeline.sql"

# pg_prove runs each file with psql -v ON_ERROR_STOP=1: an unexpected error
# ends the file early, and the missing assertions fail the plan.
pg_prove --psql-bin "$BINDIR/psql" -d "$DB" ${prove_args[@]+"${prove_args[@]}"} "${files[@]}"
