#!/usr/bin/env bash
# The PGXN archive (suite "package" of make test): `make dist` makes
# pg_idempotent-<version>.zip from the committed tree, and
# test/t/001_meta_json.pl checks it: the single top directory, no build
# outputs, and the same META.json checks as on the tree (mandatory keys,
# provides with file and version, versions equal to the control file's
# default_version, the provided file present in the archive).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

if ! git -C "$ROOT" rev-parse --verify -q HEAD >/dev/null; then
    echo "not ok 1 - make dist needs a git checkout with a commit (it archives HEAD)"
    exit 1
fi
WORK=$(mktemp -d /tmp/pg_idempotent-dist.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

VERSION=$(sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" "$ROOT/pg_idempotent.control")
make -s -C "$ROOT" dist OUTDIR="$WORK"
PG_IDEMPOTENT_DIST="$WORK/pg_idempotent-$VERSION.zip" prove -v "$ROOT/test/t/001_meta_json.pl"
