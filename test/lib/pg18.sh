#!/usr/bin/env bash
# Builds PostgreSQL 18 once into a cache directory and prints its prefix.
#
# Debian 12 packages PostgreSQL 15 only. Debian unstable (sid) has the source
# package postgresql-18: this adds a deb-src entry for sid (sources only;
# nothing installs sid binaries), fetches the source with apt-get source and
# builds it with contrib (the tests use pageinspect and pg_walinspect), and
# pgTAP for it the same way. A second run finds the finished build and does
# nothing.
#
#   PG18_CACHE   where the build goes (default /var/cache/pg_idempotent/pg18)
#
# Prints the prefix (its bin/pg_config is the one to build against) on
# stdout; progress and errors go to stderr. Exits non-zero when it cannot
# build (no root to install what the build needs, no source).
set -euo pipefail

CACHE=${PG18_CACHE:-/var/cache/pg_idempotent/pg18}
PREFIX="$CACHE/install"
# The build is complete only once this stamp exists: an interrupted build is
# started over, never used half made. Its number changes with what the build
# holds (2: with pgTAP), so an older cache is built again.
STAMP="$PREFIX/.complete-2"

if [ -f "$STAMP" ] && [ -x "$PREFIX/bin/pg_config" ]; then
    echo "$PREFIX"
    exit 0
fi

say() { echo "pg18: $*" >&2; }

if [ "$(id -u)" -ne 0 ]; then
    say "PostgreSQL 18 is not built in $CACHE, and building it needs root (apt-get)."
    exit 2
fi

export DEBIAN_FRONTEND=noninteractive
sid_list=/etc/apt/sources.list.d/pg_idempotent-sid-src.sources
if [ ! -f "$sid_list" ]; then
    # The machine's own archive and key, for source packages of sid only.
    uris=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)
    key=$(sed -n 's/^Signed-By: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)
    cat >"$sid_list" <<EOF
Types: deb-src
URIs: ${uris:-http://deb.debian.org/debian}
Suites: sid
Components: main
Signed-By: ${key:-/usr/share/keyrings/debian-archive-keyring.gpg}
EOF
    apt-get update -qq >&2
fi
missing=()
# The features Debian's own PostgreSQL 15 is built with, so the same tests
# run on both (ICU collations, xml, lz4 and zstd compression).
for pkg in bison flex libreadline-dev zlib1g-dev dpkg-dev make gcc libipc-run-perl pkg-config \
           libicu-dev libxml2-dev liblz4-dev libzstd-dev; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
    say "installing ${missing[*]}"
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

rm -rf "$CACHE/src" "$PREFIX"
mkdir -p "$CACHE/src"
cd "$CACHE/src"
say "fetching the source package postgresql-18 (Debian sid)"
apt-get source --download-only postgresql-18 >&2
tarball=$(ls postgresql-18_*.orig.tar.* | head -n 1)
tar -xf "$tarball"
srcdir=$(find . -maxdepth 1 -type d -name 'postgresql-18*' | head -n 1)
cd "$srcdir"
say "building $(basename "$srcdir") into $PREFIX (a few minutes)"
./configure --prefix="$PREFIX" --with-icu --with-libxml --with-lz4 --with-zstd --enable-tap-tests >"$CACHE/configure.log" 2>&1 ||
    { tail -n 30 "$CACHE/configure.log" >&2; exit 1; }
nice make -j"$(nproc)" >"$CACHE/make.log" 2>&1 || { tail -n 30 "$CACHE/make.log" >&2; exit 1; }
make install >>"$CACHE/make.log" 2>&1 && make -C contrib install >>"$CACHE/make.log" 2>&1 ||
    { tail -n 30 "$CACHE/make.log" >&2; exit 1; }
# The test programs and Perl modules PGXS's installcheck and the TAP tests use.
make -C src/test/regress install >>"$CACHE/make.log" 2>&1 || true
make -C src/test/isolation install >>"$CACHE/make.log" 2>&1 || true
# pgTAP for the example's tests (examples/pgtap): Debian 12 packages it for
# 15 only. Its source package comes from sid too; apt-get may fail to fetch
# the .dsc of a package sid has just replaced while the tarball arrived,
# which is all the build needs.
cd "$CACHE/src"
apt-get source --download-only pgtap >&2 || true
pgtap_tarball=$(ls pgtap_*.orig.tar.* 2>/dev/null | head -n 1)
if [ -z "$pgtap_tarball" ]; then
    say "could not fetch pgTAP's source"
    exit 1
fi
tar -xf "$pgtap_tarball"
pgtap_dir=$(find . -maxdepth 1 -type d -name 'pgtap-*' | head -n 1)
make -C "$pgtap_dir" PG_CONFIG="$PREFIX/bin/pg_config" >>"$CACHE/make.log" 2>&1 &&
    make -C "$pgtap_dir" PG_CONFIG="$PREFIX/bin/pg_config" install >>"$CACHE/make.log" 2>&1 ||
    { tail -n 30 "$CACHE/make.log" >&2; exit 1; }
cd "$CACHE"
rm -rf "$CACHE/src"
touch "$STAMP"
echo "$PREFIX"
