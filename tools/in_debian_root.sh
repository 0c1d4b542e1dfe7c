#!/usr/bin/env bash
# tools/in_debian_root.sh MAJOR COMMAND [ARG...]: runs COMMAND, as root, in
# a copy of this tree inside the Debian root of PostgreSQL MAJOR (17: Debian
# 13, 18: Debian unstable; test/lib/debian_root.sh makes it once), e.g.
#
#   sudo tools/in_debian_root.sh 18 make bench
#   sudo tools/in_debian_root.sh 17 make installcheck PGHOST=...
#
# The root's Debian packages are the server and toolchain the command
# builds and runs with (PG_MAJOR is set, so the scripts take that major's
# pg_config). What the command writes into bench/results/pgMAJOR is copied
# back into this tree; the copy is removed afterwards. Exits with the
# command's status.
set -uo pipefail
MAJOR=${1:?usage: tools/in_debian_root.sh MAJOR COMMAND...}
shift
[ $# -gt 0 ] || { echo "usage: tools/in_debian_root.sh MAJOR COMMAND..." >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/test/lib/copy_tree.sh"

root=$(bash "$ROOT/test/lib/debian_root.sh" "$MAJOR") || exit 2
work=$(mktemp -d "$root/tmp/pg_idempotent-tool.XXXXXX")
trap 'rm -rf --one-file-system "$work"' EXIT
chmod 755 "$work"
copy_tree "$ROOT" "$work/p" || exit 2
bash "$ROOT/test/lib/debian_root_run.sh" "$root" PG_MAJOR="$MAJOR" \
    PG_CONFIG="/usr/lib/postgresql/$MAJOR/bin/pg_config" \
    sh -c 'cd "$1" && shift && exec "$@"' sh "${work#"$root"}/p" "$@"
rc=$?
if [ -d "$work/p/bench/results/pg$MAJOR" ]; then
    mkdir -p "$ROOT/bench/results/pg$MAJOR"
    cp -a "$work/p/bench/results/pg$MAJOR/." "$ROOT/bench/results/pg$MAJOR/"
fi
exit $rc
