#!/usr/bin/env bash
# `make demo`: the story from the seeds, on a throwaway PostgreSQL 15 cluster.
# Installs what is missing (as root; otherwise says what to install), builds,
# installs, plays demo/*.sql in order, and removes the cluster at the end.
# PG_CONFIG (from the environment; PostgreSQL 15's by default) names the
# installation to build for, install into and run: the demo suite of make
# test passes its private copy, so that it never installs over the server's.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
source test/lib/deps.sh
source test/lib/cluster.sh

ensure_deps "${BUILD_DEPS[@]}"
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
PGBIN=$("$PG_CONFIG" --bindir)
echo "building and installing pg_idempotent..."
# The installed module is shared by every cluster of that installation (the
# package suite installs there too): build and install holding the lock
# exclusively, then hold it shared while the demo runs.
exec 9>>/tmp/pg_idempotent-install.lock
chmod a+rw /tmp/pg_idempotent-install.lock 2>/dev/null || true
flock 9
make -s -j2 PG_CONFIG="$PG_CONFIG" >/dev/null
if ! make -s install PG_CONFIG="$PG_CONFIG" >/dev/null 2>&1; then
    echo "make install failed: run 'sudo make install' (or 'make demo' as root) first" >&2
    exit 2
fi
flock -s 9

trap cluster_stop EXIT
trap 'exit 130' INT TERM
cluster_start
echo "throwaway cluster: socket $PGHOST, port $PGPORT"
echo

for part in demo/[0-9]*.sql; do
    "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -f "$part"
done
