# private_pg_copy SYSTEM_PG_CONFIG DEST: a private copy of a PostgreSQL
# installation under DEST, for test builds: they are installed there, never
# over the installed module that other clusters on the machine load.
#
# PostgreSQL's programs find their lib and share directories relative to
# their own location, and pg_config reports them so: a copy of the
# installation under DEST (same paths below it) is an installation of its
# own. Its postgres loads modules and extension scripts from the copy, and
# make install with its pg_config installs into the copy. The headers come
# along, so that its pg_config builds too. pg_idempotent's own installed
# files stay behind (only the tree under test belongs here).
#
# Prints the copy's bindir. Fails (non-zero, a message on stderr) when the
# copy cannot be made, or reports a directory outside DEST, or holds a link
# that leads out of it.
private_pg_copy() {
    local system=$1 dest=$2 d bindir prefix dirs=() config pgxs
    bindir=$("$system" --bindir)
    prefix=$(dirname "$bindir")
    for d in pkglibdir sharedir includedir; do
        dirs+=("$("$system" --$d)")
    done
    # An installation under one prefix (PostgreSQL built from source,
    # into its own prefix) is copied whole: its lib directory holds the libpq
    # its programs use. Debian's, spread over /usr/lib/postgresql/N,
    # /usr/share/postgresql/N and /usr/include/postgresql, directory by
    # directory.
    if [[ "${dirs[0]}" == "$prefix"/* && "${dirs[1]}" == "$prefix"/* && "${dirs[2]}" == "$prefix"/* ]]; then
        dirs=("$prefix")
    else
        dirs=("$bindir" "${dirs[@]}")
    fi
    for d in "${dirs[@]}"; do
        # Member names relative to the directory, so that the exclusion
        # matches only pg_idempotent's files, not a directory above them
        # (/var/cache/pg_idempotent/...).
        mkdir -p "$dest$d" || return 1
        if ! (cd "$d" && tar --exclude='pg_idempotent*' --exclude='.complete*' -cf - .) | tar -C "$dest$d" -xf -; then
            echo "private_pg_copy: cannot copy $d to $dest" >&2
            return 1
        fi
    done
    config="$dest$bindir/pg_config"
    pgxs=$(cd "$(dirname "$("$config" --pgxs)")/../.." && pwd)
    if [[ "$("$config" --pkglibdir)" == "$dest"/* && "$("$config" --sharedir)" == "$dest"/* &&
          "$("$config" --bindir)" == "$dest"/* && "$pgxs" == "$dest"/* ]] &&
       [ -z "$(find "$dest" -type l -lname '/*')" ] && [ -x "$dest$bindir/postgres" ]; then
        chmod -R a+rX "$dest"
        echo "$dest$bindir"
    else
        echo "private_pg_copy: $config does not report directories below $dest (or a link there leads out of it)" >&2
        return 1
    fi
}
