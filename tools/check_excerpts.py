#!/usr/bin/env python3
"""Prove every code excerpt in the chapters true to the file it quotes.

    python3 tools/check_excerpts.py chapters/*.md            (what `make docs` runs first)
    python3 tools/check_excerpts.py --fix chapters/*.md      (renumber excerpts whose lines moved)

An excerpt is a line naming a file of the repository and a range of its
lines, followed by a fenced code block:

    `gpu_tiled/dynconv.cu`, lines 234-251:

    ```cpp
    ...
    ```

The block must be those lines of that file, as they are now, with their
common indentation removed (as Python's textwrap.dedent removes it). A file
that no longer exists, a range past its end, or a block that differs fails
the check, with the first line that differs, so that a change to the code
that moves or alters a quoted line shows up in CI instead of in a reader's
confusion. Paths are relative to the repository root (the current folder).

With --fix, an excerpt whose block is still in its file, unchanged but at
other lines (code was added or removed above it), gets its line range
rewritten in the chapter when exactly one place in the file matches; what
changed in the code itself still fails, for a person to refresh.

Each chapter gets one line: `ok` with its count of excerpts, or the failures.
Exit code 0 when every excerpt matches, 1 when one does not, 2 on a usage
error. Standard library only. Self-test:
python3 -m unittest discover -s tools -p 'test_check_excerpts.py'
"""

import os
import re
import sys
import textwrap

HEAD_RE = re.compile(r"^`(?P<path>[^`]+)`, lines (?P<a>\d+)-(?P<b>\d+):\s*$")
FENCE_RE = re.compile(r"^```")


def excerpts(path):
    """[(line number of the head, quoted path, first, last, block text)] of one chapter."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        m = HEAD_RE.match(lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        if j >= len(lines) or not FENCE_RE.match(lines[j]):
            out.append((i + 1, m.group("path"), int(m.group("a")), int(m.group("b")), None))
            i = j
            continue
        k = j + 1
        while k < len(lines) and not FENCE_RE.match(lines[k]):
            k += 1
        out.append((i + 1, m.group("path"), int(m.group("a")), int(m.group("b")), "\n".join(lines[j + 1:k])))
        i = k + 1
    return out


def find_moved(block, text):
    """The (first, last) line numbers where the lines of block (dedented) stand in text, when exactly one place
    matches; else None."""
    want = block.split("\n")
    n = len(want)
    hits = [i for i in range(len(text) - n + 1) if textwrap.dedent("\n".join(text[i:i + n])).split("\n") == want]
    return (hits[0] + 1, hits[0] + n) if len(hits) == 1 else None


def check(path, root=".", fix=False):
    """(number of excerpts, [failure lines]) for one chapter; with fix, moved excerpts are renumbered in place."""
    bad = []
    moved = {}
    found = excerpts(path)
    for lineno, src, a, b, block in found:
        where = f"{path}:{lineno}: {src} lines {a}-{b}"
        if block is None:
            bad.append(f"{where}: no code block follows the line that names it")
            continue
        full = os.path.join(root, src)
        if not os.path.isfile(full):
            bad.append(f"{where}: no such file")
            continue
        with open(full, encoding="utf-8") as f:
            text = f.read().split("\n")
        if a < 1 or b < a or b > len(text):
            bad.append(f"{where}: the file has {len(text)} lines")
            continue
        want = textwrap.dedent("\n".join(text[a - 1:b])).split("\n")
        got = block.split("\n")
        if got != want and fix:
            place = find_moved(block, text)
            if place:
                moved[lineno] = (src, a, b) + place
                continue
        if got != want:
            n = next((i for i, (x, y) in enumerate(zip(got, want)) if x != y), min(len(got), len(want)))
            g = got[n] if n < len(got) else "(the block ends)"
            w = want[n] if n < len(want) else "(the range ends)"
            bad.append(f"{where}: line {n + 1} of the excerpt differs from {src}:{a + n}\n"
                       f"      excerpt: {g.strip()}\n      file:    {w.strip()}")
    if moved:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        for lineno, (src, a, b, a2, b2) in moved.items():
            lines[lineno - 1] = lines[lineno - 1].replace(f"lines {a}-{b}:", f"lines {a2}-{b2}:")
            print(f"check_excerpts: {path}:{lineno}: {src} lines {a}-{b} moved to {a2}-{b2}")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
    return len(found), bad


def main(argv):
    args = argv[1:]
    fix = bool(args) and args[0] == "--fix"
    if fix:
        args = args[1:]
    if not args:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    failed = False
    for path in args:
        if not os.path.isfile(path):
            print(f"check_excerpts: {path}: no such file", file=sys.stderr)
            return 2
        n, bad = check(path, fix=fix)
        if bad:
            failed = True
            print(f"check_excerpts: {path}: FAIL, {len(bad)} of {n} excerpt(s) no longer match the code")
            for line in bad:
                print("  " + line)
        else:
            print(f"check_excerpts: {path}: ok, {n} excerpt(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
