#!/usr/bin/env python3
"""Prove every measured number in the chapters and the README traceable.

    python3 tools/check_numbers.py docs/results FILE.md...             (what `make check-numbers` runs)
    python3 tools/check_numbers.py --pending FILE.md docs/results FILE.md...

A figure with a unit is a number followed by one of the units below, for
example "0.523 ms", "85%", "2991 GB/s", "780 TFLOP/s", "1.6 GHz":

    ns  us  µs  ms  GHz  MHz  GB/s  TB/s  MB/s  GFLOP/s  TFLOP/s  PFLOP/s  %

(a range such as "79% to 82%" is two figures; "1e-5" and "2^-9" carry no
unit and are not figures). Each figure in a checked file must be either

- inside a spliced benchmark block, between `<!-- bench:NAME -->` and
  `<!-- /bench:NAME -->` (or the bench-chart or ideas pair), which
  tools/bench_tables.py fills from the committed results, or
- a number that appears, written the same way, in a committed file under
  RESULTS (docs/results/): a CSV, a `ladder bench` report, a run record or a
  notes file, either as a figure with the same unit (chains included, as
  below) or as a cell of a table (a CSV field, or a cell of a Markdown table
  row), whose column names the unit. "Written the same way" compares the
  digits: "0.523 ms" matches "0.523 ms" or a cell "0.523" there, not
  "0.5234", "0.52" or "0.523%"; thousands separators are ignored ("1,380" is
  "1380"), and "us" is "µs".

The check proves that a number was recorded, not that the sentence around it
means what the record does: that is the reviewer's part. It reads only the
text files under RESULTS (.md, .csv, .txt), never the SVG charts.

Each checked file gets one line: `ok` with its count of figures, or the
failures, one per line, as FILE:LINE: the figure and the line's text. A file
named with --pending (any number of times) is checked and reported the same
way, but its failures do not fail the run: it is a file being rewritten,
listed so that its owner can see what is left. Exit code 0 when every file
not pending passes, 1 when one fails, 2 on a usage error.

Standard library only. Self-test: python3 -m unittest discover -s tools -p 'test_check_numbers.py'
"""

import os
import re
import sys

UNITS = ["TFLOP/s", "GFLOP/s", "PFLOP/s", "GB/s", "TB/s", "MB/s", "GHz", "MHz", "ns", "us", "µs", "ms", "%"]
# a number: digits with optional thousands separators and decimals; not part of a word or of another number
NUMBER = r"(?<![\w.^/-])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?"
FIGURE_RE = re.compile(NUMBER + r"\s?(" + "|".join(re.escape(u) for u in UNITS) + r")(?![A-Za-z/])")
TOKEN_RE = re.compile(r"(?<![\d.])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\d])")
# a number chained to the figure after it: "0.152 to " in "from 0.152 to 0.127 ms"
CHAIN_RE = re.compile(NUMBER + r"\s*(?:to|and|or|against|→|->)\s*$")
MARKER_RE = re.compile(r"^<!-- (/?)(bench|bench-chart|ideas):(.+?) -->\s*$")
RESULT_EXTS = (".md", ".csv", ".txt")


def normal(whole, frac):
    """The digits of a number as written, without thousands separators: ('1,380', None) -> '1380'."""
    return whole.replace(",", "") + (frac or "")


def unit_of(fig):
    """The unit a figure's text ends with ('' for a bare number), "us" written as "µs"."""
    unit = re.sub(r"^[\d.,\s]+", "", fig)
    return "µs" if unit == "us" else unit


def recorded(results_dir):
    """What the text files under RESULTS record: ({(digits, unit)} of their figures, {digits} of their table cells)."""
    figs, cells = set(), set()
    for root, _, files in os.walk(results_dir):
        for name in sorted(files):
            if not name.endswith(RESULT_EXTS):
                continue
            path = os.path.join(root, name)
            for _, fig, digits, unit, _ in figures(path, skip_spliced=False):
                figs.add((digits, unit))
            with open(path, encoding="utf-8") as f:
                for line in f:
                    if name.endswith(".csv"):
                        fields = line.split(",")
                    elif line.lstrip().startswith("|"):
                        fields = line.split("|")
                    else:
                        continue
                    for field in fields:
                        for m in TOKEN_RE.finditer(field):
                            cells.add(normal(m.group(1), m.group(2)))
    return figs, cells


def figures(path, skip_spliced=True):
    """[(line number, figure text, digits, unit, line text)] for every figure outside the spliced blocks. A figure
    may run over a line break ("0.523\nms"); the numbers chained to it by "to", "and", "or", "against", a
    an arrow ("from 0.152 to 0.127 ms", "(2.675 and 1.631 ms)") are figures with its unit too."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    kept = []
    inside = False
    for line in lines:
        m = MARKER_RE.match(line.strip()) if skip_spliced else None
        if m:
            inside = not m.group(1)
            kept.append("")
            continue
        kept.append("" if inside else line)
    text = "\n".join(kept)
    starts = [0]
    for line in kept:
        starts.append(starts[-1] + len(line) + 1)

    def where(pos):
        lo, hi = 0, len(starts) - 1
        while lo < hi - 1:
            mid = (lo + hi) // 2
            if starts[mid] <= pos:
                lo = mid
            else:
                hi = mid
        return lo + 1

    out = []
    for fm in FIGURE_RE.finditer(text):
        unit = unit_of(fm.group(0))
        found = [(fm.start(), fm.group(0), normal(fm.group(1), fm.group(2)), unit)]
        end = fm.start()
        while True:
            lo = max(0, end - 48)
            cm = CHAIN_RE.search(text[lo:end])
            if not cm:
                break
            found.append((lo + cm.start(), cm.group(1) + (cm.group(2) or ""), normal(cm.group(1), cm.group(2)), unit))
            end = lo + cm.start()
        out += found
    # in the order they are written; a number chained to a later figure is found after it
    return [(where(pos), " ".join(fig.split()), digits, unit, lines[where(pos) - 1])
            for pos, fig, digits, unit in sorted(out)]


def check(path, record):
    """(number of figures, [failure lines]) for one file; record is what recorded() returns."""
    figs, cells = record
    found = figures(path)
    bad = [f"{path}:{lineno}: '{text}' is in no spliced table and in no file under the results: "
           f"{line.strip()}" for lineno, text, digits, unit, line in found
           if (digits, unit) not in figs and digits not in cells]
    return len(found), bad


def main(argv):
    args = argv[1:]
    pending = set()
    while args and args[0] == "--pending":
        if len(args) < 2:
            print(__doc__.split("\n\n")[1], file=sys.stderr)
            return 2
        pending.add(os.path.normpath(args[1]))
        args = args[2:]
    if len(args) < 2 or not os.path.isdir(args[0]):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    results_dir, files = args[0], args[1:]
    record = recorded(results_dir)
    failed = False
    for path in files:
        if not os.path.isfile(path):
            print(f"check_numbers: {path}: no such file", file=sys.stderr)
            return 2
        n, bad = check(path, record)
        waiting = os.path.normpath(path) in pending
        if not bad:
            print(f"check_numbers: {path}: ok, {n} figure(s) traced")
            continue
        if waiting:
            print(f"check_numbers: {path}: pending (being rewritten; not failing the check): "
                  f"{len(bad)} of {n} figure(s) untraced")
        else:
            print(f"check_numbers: {path}: FAIL, {len(bad)} of {n} figure(s) untraced")
            failed = True
        for line in bad:
            print("  " + line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
