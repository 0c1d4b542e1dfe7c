#!/usr/bin/env bash
# debian_root.sh MAJOR: makes (once) a Debian root holding Debian's own
# PostgreSQL MAJOR and everything the suites need, and prints its directory.
#
# Debian 12 packages PostgreSQL 15 only. Debian 13 (trixie) ships 17 and
# Debian unstable (sid) 18; their binaries need a newer libc than Debian 12's,
# so they run inside a root made with debootstrap (Debian 12's package), from
# the machine's own Debian archive and keyring. test/lib/debian_root_run.sh
# runs commands in it.
#
#   DEBIAN_ROOT_CACHE  where roots are kept (default /var/cache/pg_idempotent/roots)
#
# A root is complete only once its stamp exists: the stamp's name holds a
# digest of the package list (test/lib/deps.sh for that major) and of this
# script, so a root made from another list is made again, and an interrupted
# one is never used half made. One root is made at a time per major (flock);
# who waited finds it complete.
#
# The full postgresql-server-dev-MAJOR is installed, with the clang and llvm
# it depends on (about 0.9 GB more, 20 s): a user's `make install` against
# Debian's packages compiles the JIT bitcode too, so the suites build what
# users build, and the package suite needs the installed package.
set -euo pipefail

MAJOR=${1:?usage: debian_root.sh MAJOR}
HERE=$(cd "$(dirname "$0")" && pwd)
say() { echo "debian root $MAJOR: $*" >&2; }

case $MAJOR in
    17) SUITE=trixie ;;
    18) SUITE=sid ;;
    *) say "no Debian release here ships PostgreSQL $MAJOR (17: trixie, 18: sid)"; exit 2 ;;
esac
[ "$(id -u)" -eq 0 ] || { say "making or entering a Debian root needs root (debootstrap, chroot)"; exit 2; }

PG_MAJOR=$MAJOR
source "$HERE/deps.sh"
PACKAGES=("${BUILD_DEPS[@]}" "${TEST_DEPS[@]}")
CACHE=${DEBIAN_ROOT_CACHE:-/var/cache/pg_idempotent/roots}
DIR="$CACHE/$SUITE-$MAJOR"
KEY=$( { printf '%s\n' "${PACKAGES[@]}"; cat "$0"; } | sha256sum | cut -c1-12)
STAMP="$DIR/.complete-$KEY"

mkdir -p "$CACHE"
exec {lock}>"$CACHE/.lock-$MAJOR"
flock "$lock"
if [ -f "$STAMP" ] && [ -x "$DIR/usr/lib/postgresql/$MAJOR/bin/pg_config" ]; then
    echo "$DIR"
    exit 0
fi

# A half-made root may still have /proc or /dev mounted in it (a run killed
# with SIGKILL): never remove across a mount.
if grep -q " $DIR/" /proc/mounts; then
    say "$DIR still has file systems mounted in it (grep '$DIR' /proc/mounts): unmount them first"
    exit 1
fi
rm -rf --one-file-system "$DIR"

uri=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)
keyring=$(sed -n 's/^Signed-By: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)
uri=${uri:-http://deb.debian.org/debian}
keyring=${keyring:-/usr/share/keyrings/debian-archive-keyring.gpg}
start=$(date +%s)
say "debootstrap $SUITE from $uri into $DIR"
debootstrap --variant=minbase --keyring="$keyring" "$SUITE" "$DIR" "$uri" >"$CACHE/debootstrap-$MAJOR.log" 2>&1 ||
    { tail -n 30 "$CACHE/debootstrap-$MAJOR.log" >&2; exit 1; }

# Inside the root: no service starts while packages install (a server on
# 5432 would outlive the install and keep the root busy), no default
# cluster, and sid's Release file, which this mirror serves expired, is read
# anyway.
printf '#!/bin/sh\nexit 101\n' >"$DIR/usr/sbin/policy-rc.d"
chmod 755 "$DIR/usr/sbin/policy-rc.d"
mkdir -p "$DIR/etc/postgresql-common/createcluster.d"
echo "create_main_cluster = false" >"$DIR/etc/postgresql-common/createcluster.d/pg_idempotent.conf"
echo 'Acquire::Check-Valid-Until "false";' >"$DIR/etc/apt/apt.conf.d/99pg_idempotent"
cp /etc/resolv.conf "$DIR/etc/resolv.conf" 2>/dev/null || true

say "installing ${#PACKAGES[@]} packages"
bash "$HERE/debian_root_run.sh" "$DIR" sh -c '
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq &&
    apt-get install -y -qq --no-install-recommends "$@" &&
    localedef -i de_DE -f UTF-8 de_DE.UTF-8 &&
    apt-get clean' sh "${PACKAGES[@]}" >"$CACHE/install-$MAJOR.log" 2>&1 ||
    { tail -n 30 "$CACHE/install-$MAJOR.log" >&2; exit 1; }
[ -x "$DIR/usr/lib/postgresql/$MAJOR/bin/pg_config" ] ||
    { say "the root has no /usr/lib/postgresql/$MAJOR/bin/pg_config after the install"; exit 1; }
touch "$STAMP"
say "ready in $(( $(date +%s) - start )) s ($(du -sh --one-file-system "$DIR" | cut -f1))"
echo "$DIR"
