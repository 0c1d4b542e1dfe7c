#!/usr/bin/env bash
# debian_root_run.sh ROOT [NAME=VALUE...] COMMAND [ARG...]: runs COMMAND
# inside the Debian root ROOT (test/lib/debian_root.sh), as root, with a
# clean environment plus the NAME=VALUE pairs given, and exits with its
# status.
#
# /proc, /dev and /dev/pts are bind-mounted for the command and unmounted on
# every way out (its end, a failure, Ctrl-C, TERM); whatever the command
# left running in the root (a server a killed test did not stop) is killed
# first, so nothing stays mounted or running. One command at a time per root
# (flock on ROOT/.in-use): a leftover process is then surely this run's.
set -uo pipefail

ROOT=${1:?usage: debian_root_run.sh ROOT [NAME=VALUE...] COMMAND...}
shift
ROOT=$(cd "$ROOT" && pwd -P)
[ -x "$ROOT/bin/sh" ] || { echo "debian_root_run.sh: $ROOT is not a Debian root" >&2; exit 2; }

exec {in_use}>"$ROOT/.in-use"
flock "$in_use"

MOUNTS=(proc dev dev/pts)
mounted=()
# Processes whose root directory is this root.
root_pids() {
    local p
    for p in /proc/[0-9]*; do
        [ "$(readlink "$p/root" 2>/dev/null)" = "$ROOT" ] && echo "${p#/proc/}"
    done
    return 0
}
cleanup() {
    local pids i m
    pids=$(root_pids)
    if [ -n "$pids" ]; then
        kill -TERM $pids 2>/dev/null
        for i in 1 2 3 4 5 6 7 8 9 10; do
            pids=$(root_pids); [ -z "$pids" ] && break; sleep 0.5
        done
        [ -n "$pids" ] && kill -KILL $pids 2>/dev/null && sleep 0.5
    fi
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
        m=${mounted[$i]}
        umount "$ROOT/$m" 2>/dev/null || umount -l "$ROOT/$m" 2>/dev/null ||
            echo "debian_root_run.sh: could not unmount $ROOT/$m" >&2
    done
    mounted=()
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

for m in "${MOUNTS[@]}"; do
    mkdir -p "$ROOT/$m"
    if [ "$m" = proc ]; then
        mount -t proc proc "$ROOT/proc" || exit 1
    else
        mount --bind "/$m" "$ROOT/$m" || exit 1
    fi
    mounted+=("$m")
done

env=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 TERM=dumb)
while [ $# -gt 0 ] && [[ "$1" =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; do
    env+=("$1"); shift
done
# Not exec: the trap must run after the command.
chroot "$ROOT" /usr/bin/env -i "${env[@]}" "$@"
rc=$?
exit $rc
