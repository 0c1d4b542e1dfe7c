#!/usr/bin/env python3
"""Every output block a page quotes from the demo is in what the demo printed.

check_quotes.py PAGE OUTPUT: the fenced blocks without a language in PAGE's
section "## `make demo`" (up to its next heading of level 1 or 2) must each
appear, as consecutive lines, in OUTPUT. Trailing spaces do not count (psql
pads its header lines; the page does not). Exits 1 naming each block that
is not there, 2 when the section has no block (a check of nothing).
"""
import sys


def section_blocks(lines):
    blocks, block, inside, fence = [], None, False, None
    for line in lines:
        if not inside:
            inside = line.rstrip() == "## `make demo`"
            continue
        if block is None and line.startswith(("# ", "## ")):
            break
        if line.startswith("```"):
            if block is None:
                fence = line.rstrip()
                block = []
            else:
                if fence == "```":
                    blocks.append(block)
                block = None
            continue
        if block is not None:
            block.append(line.rstrip())
    return blocks


def contains(haystack, needle):
    n = len(needle)
    return any(haystack[i:i + n] == needle for i in range(len(haystack) - n + 1))


def main():
    page, output = sys.argv[1], sys.argv[2]
    with open(page, encoding="utf-8") as f:
        blocks = section_blocks(f.read().splitlines())
    with open(output, encoding="utf-8") as f:
        printed = [line.rstrip() for line in f.read().splitlines()]
    if not blocks:
        print(f"{page}: no output block in its section \"## `make demo`\"")
        return 2
    missing = [b for b in blocks if not contains(printed, b)]
    for b in missing:
        print(f"{page}: the demo did not print the block that begins {b[0]!r}")
    print(f"{page}: {len(blocks) - len(missing)} of {len(blocks)} quoted blocks printed by the demo")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
