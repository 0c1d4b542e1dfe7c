#!/usr/bin/env bash
# The demo suite: `make demo` is one of the README's two commands, so its
# script runs here as the README runs it (demo/run.sh: build, install, a
# throwaway cluster, demo/*.sql in order), with one difference: PG_CONFIG is
# this run's private copy of PostgreSQL 15 (PGBIN), so it never installs over
# the server's module. Prints one TAP line per check:
#   - it exits 0 (the two ERRORs it prints are part of the story);
#   - it prints test/demo/expected.out (the line naming the throwaway
#     cluster's socket and port left out: they change with every run);
#   - every output block docs/testing.md quotes from it is in what it printed
#     (test/demo/check_quotes.py), and the checker fails on a quote the demo
#     never printed (test/demo/broken.md).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
: "${PGBIN:?PGBIN: the bin directory of the installation to run the demo with}"

source test/lib/tap.sh

out=$(mktemp -d /tmp/pg_idempotent-demo.XXXXXX)
trap 'rm -rf "$out"' EXIT
PG_CONFIG="$PGBIN/pg_config" bash demo/run.sh >"$out/demo.log" 2>&1
rc=$?
if [ $rc -eq 0 ]; then tap_result ok demo-exits-0; else tap_result fail demo-exits-0 "exit status $rc; it printed:
$(cat "$out/demo.log")"; fi

grep -v '^throwaway cluster: socket ' "$out/demo.log" >"$out/demo.out"
if d=$(diff -u test/demo/expected.out "$out/demo.out"); then
    tap_result ok demo-prints-expected
else
    tap_result fail demo-prints-expected "$d"
fi

if q=$(python3 test/demo/check_quotes.py docs/testing.md "$out/demo.out"); then
    tap_result ok docs-testing-quotes-printed "$q"
else
    tap_result fail docs-testing-quotes-printed "$q"
fi
if q=$(python3 test/demo/check_quotes.py test/demo/broken.md "$out/demo.out"); then
    tap_result fail checker-fails-on-broken-quote "it passed test/demo/broken.md: $q"
else
    tap_result ok checker-fails-on-broken-quote "$q"
fi

tap_finish demo
