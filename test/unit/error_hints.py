#!/usr/bin/env python3
"""Every error the extension raises says what to do (issue 26).

Checks, in the C++ sources, that each `UserError(code, message, detail,
hint)` passes a hint, that each `ereport(ERROR, ...)` passes `errhint`
(`elog(ERROR)`, PostgreSQL's form for an internal can't-happen error, is
left alone), and that each `idem._raise(code, message, detail, hint)`
written into a statement's SQL passes one, except the internal
signals listed below (raised inside a subtransaction the caller catches,
never shown to a user). The PL/pgSQL functions' RAISEs are checked on the
installed catalog by sql/error_hints.sql. Exits 1 and names each site
without a hint.
"""
import glob
import re
import sys

# _raise calls that never reach a user, each with why.
INTERNAL_SIGNALS = {
    "null key in a first load": "merge's first-load attempt; run_merge catches it and runs the whole statement",
    "null key in an append": "append's guarded insert; the whole statement runs and raises 23502 with a HINT",
    "keys may repeat in the batch": "append's guarded insert; the whole statement runs and explains the repeats",
}


def call_args(text, open_paren):
    """The top-level arguments of the call whose '(' is at open_paren."""
    depth, cur, out, quote, i = 0, "", [], None, open_paren
    while i < len(text):
        c = text[i]
        if quote:
            cur += c
            if c == "\\":
                cur += text[i + 1]
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "\"'":
            quote = c
            cur += c
        elif c in "([{":
            depth += 1
            if depth > 1:
                cur += c
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                out.append(cur.strip())
                return out
            cur += c
        elif c == "," and depth == 1:
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
        i += 1
    return out


def main():
    problems = []
    sites = 0
    for path in sorted(glob.glob("src/**/*.cpp", recursive=True)):
        text = open(path, encoding="utf-8").read()
        for m in re.finditer(r"\bUserError\s*[({]", text):
            line = text.count("\n", 0, m.start()) + 1
            args = call_args(text, m.end() - 1)
            sites += 1
            if len(args) < 4 or args[3] in ("{}", '""', "std::string()"):
                problems.append(f"{path}:{line}: UserError without a hint")
        # The SQL text is C++ string literals: join them to read the call.
        sql = re.sub(r'"\s*(?:\+\s*)?\n\s*"', "", text)
        for m in re.finditer(r"idem\._raise\(", sql):
            sites += 1
            window = sql[m.end():m.end() + 600]
            message = re.search(r"^[^,]*,\s*(?:pg_catalog\.format\()?'((?:[^']|'')*)'", window)
            name = message.group(1) if message else "?"
            if name in INTERNAL_SIGNALS:
                continue
            # The fourth argument: a string literal or an expression, not NULL.
            args = call_args(sql, m.end() - 1)
            if len(args) < 4 or args[3].strip() in ("NULL", ""):
                problems.append(f"{path}: idem._raise of '{name}' without a hint")
        # ereport(ERROR, ...) written directly (the boundary, src/pg and
        # src/pg_native) must pass errhint; elog(ERROR) is PostgreSQL's form
        # for a can't-happen internal error and carries none.
        for m in re.finditer(r"\bereport\s*\(\s*ERROR\b", text):
            sites += 1
            if "errhint(" not in " ".join(call_args(text, text.index("(", m.start()))):
                line = text.count("\n", 0, m.start()) + 1
                problems.append(f"{path}:{line}: ereport(ERROR) without errhint")
    for p in problems:
        print(p)
    print(f"error_hints: {sites} raising sites, {len(problems)} without a hint")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
