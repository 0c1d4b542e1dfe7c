#!/usr/bin/env python3
"""The docs suite: every SQL example in README.md and docs/*.md runs as shown.

For each Markdown file given, in a database of its own (created fresh,
dropped after), every fenced ```sql block runs in order, each block in its
own psql session, as the superuser the harness connects as. A block is
checked three ways:

- Errors: a block that is meant to fail says so with a comment line
  `-- ERROR: SQLSTATE` (for example `-- ERROR: ID005`), or `-- ERROR:
  message (SQLSTATE)`, after the statement that fails; the SQLSTATEs psql reports must be exactly those, in order. A
  block without such lines must raise no error.
- Output: a ```text block right after the ```sql block (blank lines between
  are allowed) is what psql prints for it (quiet mode: no command tags; the
  NOTICEs and errors as psql prints them, without CONTEXT lines). Compared
  line by line, trailing blanks ignored. A line `...` in the shown output stands for any number of
  lines (for output that differs from run to run, such as a time).
- Signatures: a ```sql block preceded by `<!-- docs-test: signature -->`
  is a list of signatures, not run: every `idem.name(` in it must be a
  function or procedure of the installed extension.
- `<!-- docs-test: skip REASON -->` before a block leaves it out, with the
  reason printed (the suite counts it).
- `<!-- docs-test: file PATH -->` before a block (Python, a shell script):
  the block is not run here but must be exactly the repository's file PATH,
  which a test of its own runs (docs/recipes.md's Python files:
  test/docs/recipes_test.py), so the page shows tested code.

Unless a file's first block creates the extension, the harness creates it first.
Besides the blocks, every file's relative links must name files that exist
(and headings that exist, for #anchors), and every repository path written
in backquotes must exist.

Prints one TAP line per file ("ok N - README.md") and per failed block the
difference; exits 1 on any failure.
"""
import argparse
import difflib
import glob
import os
import re
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^(\s*)```+\s*([A-Za-z0-9_+-]*)\s*$")
MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(\w+)\s*(.*?)\s*-->\s*$")
EXPECTED_ERROR = re.compile(r"^\s*--\s*ERROR:\s*(?:([0-9A-Z]{5})\b.*|.*\(([0-9A-Z]{5})\)\s*)$")
PSQL_PREFIX = re.compile(r"^psql:[^:]*:\d+: ")
VERBOSE_LEVEL = re.compile(r"^(ERROR|WARNING|NOTICE|INFO|DEBUG|LOG):  ([0-9A-Z]{5}): ")
FIELD_LINE = re.compile(r"^(SCHEMA|TABLE|COLUMN|DATATYPE|CONSTRAINT) NAME:  ")
SIGNATURE_NAME = re.compile(r"\bidem\.([a-z_][a-z0-9_]*)\s*\(")
LINK = re.compile(r"\]\(([^)\s]+)\)")
PATH_IN_QUOTES = re.compile(r"`([A-Za-z0-9_.*-]+(?:/[A-Za-z0-9_.*-]+)+/?)`")
FILE_IN_QUOTES = re.compile(r"`([A-Za-z0-9_-]+\.(?:md|sh|spec|pl|cpp|hpp|py))`")
_basenames = None


def repo_basenames(root):
    """The file names of the repository (as git knows them), any folder; in a
    tree that is not a git checkout (a release archive, the copy make test
    runs in a Debian root), the files under root less build output."""
    global _basenames
    if _basenames is None:
        git = subprocess.run(["git", "-C", root, "ls-files", "-co", "--exclude-standard"],
                             capture_output=True, text=True, check=False)
        if git.returncode == 0:
            _basenames = {os.path.basename(f) for f in git.stdout.split()}
        else:
            skip = {".git", "build", "results", "tmp_check", "log"}
            _basenames = set()
            for _, dirs, files in os.walk(root):
                dirs[:] = [d for d in dirs if d not in skip]
                _basenames.update(files)
    return _basenames


class Block:
    def __init__(self, lang, line, text, marker):
        self.lang, self.line, self.text, self.marker = lang, line, text, marker
        self.output = None  # the ```text block that follows, if any


def parse_blocks(path):
    """The fenced blocks of a Markdown file, each with its marker comment and
    the ```text block that follows a ```sql block."""
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks, i, marker, blank_since_block = [], 0, None, True
    while i < len(lines):
        m = FENCE.match(lines[i])
        mk = MARKER.match(lines[i])
        if mk:
            marker = (mk.group(1), mk.group(2))
            i += 1
            continue
        if not m:
            if lines[i].strip():
                blank_since_block = False
            i += 1
            continue
        start, lang, body, indent = i + 1, m.group(2), [], m.group(1)
        i += 1
        while i < len(lines) and not FENCE.match(lines[i]):
            # A block inside a list item is indented as its fence is.
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1  # the closing fence
        block = Block(lang, start, "\n".join(body) + "\n", marker)
        marker = None
        if lang == "text" and blank_since_block and blocks and blocks[-1].lang == "sql" \
                and blocks[-1].output is None:
            blocks[-1].output = block
        else:
            blocks.append(block)
        blank_since_block = True
    return [b for b in blocks if b.lang == "sql" or (b.marker and b.marker[0] == "file")]


def psql(args, dbname, sql):
    """Runs sql in one psql session; returns its output (stdout and stderr
    together, as a reader sees them)."""
    cmd = [args.psql, "-X", "-q", "-d", dbname, "-v", "ON_ERROR_STOP=0",
           "-v", "VERBOSITY=verbose", "-v", "SHOW_CONTEXT=never", "-P", "pager=off"]
    with tempfile.TemporaryFile("w+") as out:
        subprocess.run(cmd, input=sql, stdout=out, stderr=subprocess.STDOUT,
                       text=True, check=False)
        out.seek(0)
        return out.read()


def reader_view(raw):
    """psql's verbose output as a reader sees it at the default verbosity,
    and the SQLSTATEs of the errors in it."""
    shown, errors = [], []
    for line in raw.split("\n"):
        line = PSQL_PREFIX.sub("", line)
        # What only VERBOSITY verbose prints (psql's default does not).
        if line.startswith("LOCATION:  ") or FIELD_LINE.match(line):
            continue
        m = VERBOSE_LEVEL.match(line)
        if m:
            if m.group(1) == "ERROR":
                errors.append(m.group(2))
            line = m.group(1) + ":  " + line[m.end():]
        shown.append(line.rstrip())
    while shown and not shown[-1]:
        shown.pop()
    while shown and not shown[0]:
        shown.pop(0)
    return shown, errors


def line_matches(expected, actual):
    """A line, where "..." inside it stands for any text."""
    if "..." not in expected:
        return expected == actual
    pattern = ".*".join(re.escape(part) for part in expected.split("..."))
    return re.fullmatch(pattern, actual) is not None


def matches(expected, actual):
    """Line by line; a line "..." matches any number of lines."""
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(matches(expected[1:], actual[k:]) for k in range(len(actual) + 1))
    return bool(actual) and line_matches(expected[0], actual[0]) and matches(expected[1:], actual[1:])


def strip_blank_ends(lines):
    lines = [l.rstrip() for l in lines]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return lines


def check_block(args, dbname, path, block, problems):
    raw = psql(args, dbname, block.text)
    shown, errors = reader_view(raw)
    if args.print_output:  # for a writer: what to show after the block
        print(f"=== {path}:{block.line}\n" + "\n".join(shown))
    expected_errors = [m.group(1) or m.group(2) for m in map(EXPECTED_ERROR.match, block.text.split("\n")) if m]
    where = f"{path}:{block.line}"
    if errors != expected_errors:
        problems.append(f"{where}: errors {errors or 'none'}, the block says {expected_errors or 'none'}\n"
                        + "\n".join("    " + l for l in shown))
        return
    if block.output is not None:
        expected = strip_blank_ends(block.output.text.split("\n"))
        if not matches(expected, shown):
            diff = difflib.unified_diff(expected, shown, "shown in the document", "printed by the server",
                                        lineterm="")
            problems.append(f"{where}: output differs\n" + "\n".join("    " + l for l in diff))


def check_signature(args, dbname, path, block, problems):
    names = sorted(set(SIGNATURE_NAME.findall(block.text)))
    if not names:
        problems.append(f"{path}:{block.line}: a signature block names no idem. function")
        return
    listed = "', '".join(names)
    raw = psql(args, dbname, "\\pset format unaligned\n\\pset tuples_only on\n"
               "SELECT n FROM unnest(ARRAY['" + listed + "']) n "
               "WHERE NOT EXISTS (SELECT FROM pg_proc p WHERE p.proname = n "
               "AND p.pronamespace = 'idem'::regnamespace);")
    missing = raw.split()
    if missing:
        problems.append(f"{path}:{block.line}: signatures of functions that do not exist: {' '.join(missing)}")


def check_file_copy(root, path, block, problems):
    name = block.marker[1]
    try:
        with open(os.path.join(root, name), encoding="utf-8") as f:
            want = f.read()
    except OSError:
        problems.append(f"{path}:{block.line}: docs-test: file {name}: no such file in the repository")
        return
    if block.text.strip("\n") != want.strip("\n"):
        diff = difflib.unified_diff(want.strip("\n").splitlines(), block.text.strip("\n").splitlines(),
                                    "the file " + name, "the block", lineterm="", n=1)
        problems.append(f"{path}:{block.line}: the block differs from {name}\n" + "\n".join(list(diff)[:20]))


def slug(heading):
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    seen, result, in_fence = {}, set(), False
    for line in open(path, encoding="utf-8"):
        if FENCE.match(line):
            in_fence = not in_fence
        if in_fence or not line.startswith("#"):
            continue
        s = slug(line.lstrip("#"))
        n = seen.get(s, 0)
        seen[s] = n + 1
        result.add(s if n == 0 else f"{s}-{n}")
    return result


def check_references(root, path, problems):
    """Relative links, their anchors, and repository paths in backquotes."""
    base = os.path.dirname(path)
    text = open(path, encoding="utf-8").read()
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    for target in LINK.findall(prose):
        if re.match(r"^[a-z]+:", target):
            continue
        file_part, _, anchor = target.partition("#")
        linked = os.path.normpath(os.path.join(base, file_part)) if file_part else path
        if not os.path.exists(linked):
            problems.append(f"{path}: links to {target}, which does not exist")
        elif anchor and linked.endswith(".md") and anchor not in anchors(linked):
            problems.append(f"{path}: links to {target}, which has no heading #{anchor}")
    for named in PATH_IN_QUOTES.findall(prose):
        # Only paths into this repository (its top-level folders): not
        # `application/json` or a path on the reader's machine.
        if not os.path.isdir(os.path.join(root, named.split("/")[0])):
            continue
        candidates = [os.path.join(root, named), os.path.join(base, named)]
        if not any(glob.glob(c) for c in candidates):
            problems.append(f"{path}: names `{named}`, which does not exist")
    for named in FILE_IN_QUOTES.findall(prose):
        if named not in repo_basenames(root):
            problems.append(f"{path}: names `{named}`, which is no file of the repository")


ROLES_SQL = "\\pset format unaligned\n\\pset tuples_only on\nSELECT rolname FROM pg_roles;"


def create_database(args, dbname):
    psql(args, "postgres", f'DROP DATABASE IF EXISTS "{dbname}";')
    out = psql(args, "postgres", f'CREATE DATABASE "{dbname}";')
    if "ERROR" in out:
        raise RuntimeError(out)


def check_file(args, root, path, number):
    problems, skipped = [], []
    blocks = parse_blocks(path)
    check_references(root, path, problems)
    dbname = args.db_prefix + re.sub(r"[^a-z0-9]+", "_", os.path.relpath(path, root).lower())
    roles_before = set(psql(args, "postgres", ROLES_SQL).split())
    create_database(args, dbname)
    try:
        runnable = [b for b in blocks if b.marker is None]
        if not (runnable and re.search(r"CREATE\s+EXTENSION\s+(IF\s+NOT\s+EXISTS\s+)?pg_idempotent",
                                       runnable[0].text, re.I)):
            psql(args, dbname, "CREATE EXTENSION pg_idempotent;")
        for block in blocks:
            kind = block.marker[0] if block.marker else None
            if kind == "skip":
                if not block.marker[1]:
                    problems.append(f"{path}:{block.line}: a skipped block without a reason")
                skipped.append(f"{path}:{block.line}: {block.marker[1]}")
            elif kind == "signature":
                check_signature(args, dbname, path, block, problems)
            elif kind == "file":
                check_file_copy(root, path, block, problems)
            elif kind is None:
                check_block(args, dbname, path, block, problems)
            else:
                problems.append(f"{path}:{block.line}: unknown marker docs-test: {kind}")
    finally:
        psql(args, "postgres", f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE);')
        # The roles a file's examples created go with its database, so the
        # next file (or the next run) can create them again.
        for role in sorted(set(psql(args, "postgres", ROLES_SQL).split()) - roles_before):
            psql(args, "postgres", f'DROP ROLE "{role}";')
    rel = os.path.relpath(path, root)
    ran = sum(1 for b in blocks if b.marker is None)
    print(f"{'not ok' if problems else 'ok'} {number} - {rel} ({ran} blocks run, {len(skipped)} skipped)")
    for s in skipped:
        print(f"#   skipped {os.path.relpath(s, root) if s.startswith(root) else s}")
    for p in problems:
        print("#   " + p.replace("\n", "\n#   "))
    return not problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--psql", default="psql")
    ap.add_argument("--db-prefix", default="idem_docs_")
    ap.add_argument("--root", default=os.getcwd())
    ap.add_argument("--print-output", action="store_true",
                    help="print what each block printed (to write its ```text block)")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    ok = True
    for n, f in enumerate(args.files, 1):
        ok = check_file(args, root, os.path.abspath(f), n) and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
