#!/usr/bin/env bash
# build_deb.sh OUTDIR: build the Debian package of this checkout in a copy of
# the tree and put the .deb files (and .buildinfo/.changes) into OUTDIR.
# `make deb` and test/package/deb.sh call it.
#
# dpkg-buildpackage runs `debian/rules clean` (make clean) first, so it must
# never run in a checkout that others build and test in: it would delete
# their objects mid-build. The copy holds what git knows of the working tree:
# tracked files as they are now (uncommitted edits included, deleted files
# left out) and untracked files that are not ignored, so a new upgrade script
# is packaged before it is committed, and build outputs are not copied. Outside
# a git checkout (an unpacked release archive) the whole tree is copied.
#
# Environment: DEB_BUILD_OPTIONS is passed through (nocheck skips the
# build-time pg_regress run); BUILD_JOBS (default 2) is dpkg-buildpackage -j.
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$1"
OUTDIR=$(cd "$1" && pwd)

VERSION=$(sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" "$ROOT/pg_idempotent.control")
[ -n "$VERSION" ] || { echo "$0: no default_version in pg_idempotent.control" >&2; exit 2; }

WORK=$(mktemp -d /tmp/pg_idempotent-debbuild.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
# The build-time regress run starts its server as the postgres OS user, which
# must read the extension files under debian/ (mktemp makes the dir 0700).
chmod 755 "$WORK"
# dpkg-buildpackage writes its results into the parent of the source tree.
SRC="$WORK/pg-idempotent-$VERSION"
mkdir "$SRC"

if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard |
        while IFS= read -r -d '' f; do
            if [ -e "$f" ]; then printf '%s\0' "$f"; fi
        done | tar --null -T - -cf -) | tar -C "$SRC" -xf -
else
    (cd "$ROOT" && tar --exclude=./debian/.debhelper -cf - .) | tar -C "$SRC" -xf -
fi

# debian/control names the package of Debian 12's PostgreSQL (15); on
# another release (the Debian roots of 17 and 18) it is made from
# debian/control.in for the majors that release supports (debian/pgversions).
(cd "$SRC" && pg_buildext updatecontrol)
echo "building the Debian package of pg_idempotent $VERSION in $SRC ($(cd "$SRC" && pg_buildext supported-versions | xargs))"
(cd "$SRC" && dpkg-buildpackage -us -uc -b -j"${BUILD_JOBS:-2}")

shopt -s nullglob
results=("$WORK"/*.deb "$WORK"/*.buildinfo "$WORK"/*.changes)
[ ${#results[@]} -gt 0 ] || { echo "$0: dpkg-buildpackage produced no .deb" >&2; exit 1; }
cp "${results[@]}" "$OUTDIR/"
for f in "${results[@]}"; do echo "$OUTDIR/$(basename "$f")"; done
