# Sourced. copy_tree SRC DEST: a copy of the source tree SRC in DEST (made
# if missing), without build output: in a git checkout, what git knows of
# the working tree (tracked files as they are now, uncommitted edits
# included, deleted ones left out, and untracked files that are not
# ignored); elsewhere (an unpacked release archive) the whole tree less
# objects, modules and test output. PGXS builds in the tree, so a build for
# another installation (a Debian root, a sanitized build) needs its own copy.
copy_tree() {
    local src=$1 dest=$2
    mkdir -p "$dest" || return 1
    if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        (cd "$src" && git ls-files -z -co --exclude-standard |
            tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -C "$dest" -xf -
    else
        (cd "$src" && tar --exclude='*.o' --exclude='*.bc' --exclude='*.so' --exclude='*.d' \
            --exclude=./build --exclude=./results --exclude=./tmp_check -cf - .) | tar -C "$dest" -xf -
    fi
}
