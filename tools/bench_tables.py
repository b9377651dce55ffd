#!/usr/bin/env python3
"""Splice committed benchmark results into the chapters.

    python3 tools/bench_tables.py docs/results chapters      (what `make bench-tables` runs)

Results are the CSV files `ladder bench` writes, committed as
RESULTS/<gpu>-<date>.csv (for example h100-2026-11-21.csv). Chapters are the
Markdown files under CHAPTERS. Everything between a pair of marker lines

    <!-- bench:NAME -->
    <!-- /bench:NAME -->

is replaced by a table made from the newest results file that has rows for
NAME, followed by one line naming the GPU, the date, the shape, the commit
and the copy bandwidth measured in the same run. Running it twice changes
nothing the second time. NAME is

    ALGO                 every row of ALGO (columns: pass, rung, dtype, ...)
    ALGO:PASS            only that pass (fwd or bwd), without the pass column
    ALGO:PASS:RUNG,...   only those rungs of that pass, in the order given

"Newest" is the date in the file name; on a tie, the later name in sort order.
With no results file at all, the markers are left as they are and a note goes
to stderr (exit 0): chapters never show numbers that were not measured.
A malformed file or marker is an error (exit 1) that names the file and line.
Standard library only.
"""

import csv
import os
import re
import sys

HEADER = [
    "gpu", "date", "commit", "algo", "pass", "rung", "dtype", "B", "T", "D", "W",
    "median_ms", "bytes", "gbps", "copy_gbps", "pct_of_copy", "floor_ms", "speedup_vs_cpu",
]
FILE_RE = re.compile(r"^(?P<gpu>.+)-(?P<date>\d{4}-\d{2}-\d{2})\.csv$")
OPEN_RE = re.compile(r"^<!-- bench:(?P<name>[A-Za-z0-9_.:,-]+) -->[ \t]*$")
CLOSE_RE = re.compile(r"^<!-- /bench:(?P<name>[A-Za-z0-9_.:,-]+) -->[ \t]*$")
PASSES = ("fwd", "bwd")


class Failure(Exception):
    """A problem the user must fix; the message names the file."""


def note(msg):
    print("bench_tables: " + msg, file=sys.stderr)


def read_results(results_dir):
    """[(date, name, rows)] for every RESULTS/<gpu>-<date>.csv, oldest first."""
    if not os.path.isdir(results_dir):
        return []
    found = []
    for name in sorted(os.listdir(results_dir)):
        if not name.endswith(".csv"):
            continue
        m = FILE_RE.match(name)
        path = os.path.join(results_dir, name)
        if not m:
            note(f"{path}: ignored, the name is not <gpu>-<YYYY-MM-DD>.csv")
            continue
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            if header != HEADER:
                raise Failure(f"{path}: header is {header}, expected {','.join(HEADER)}")
            rows = []
            for lineno, cells in enumerate(reader, start=2):
                if not cells:
                    continue
                if len(cells) != len(HEADER):
                    raise Failure(f"{path}:{lineno}: {len(cells)} fields, expected {len(HEADER)}")
                rows.append(dict(zip(HEADER, cells)))
        found.append((m.group("date"), name, path, rows))
    found.sort(key=lambda r: (r[0], r[1]))
    return found


def parse_name(name):
    """NAME -> (algo, pass or None, [rungs] or None)."""
    parts = name.split(":")
    if len(parts) > 3 or not parts[0]:
        raise ValueError(f"'{name}' is not ALGO, ALGO:PASS or ALGO:PASS:RUNG,...")
    algo = parts[0]
    pas = parts[1] if len(parts) > 1 else None
    if pas is not None and pas not in PASSES:
        raise ValueError(f"'{name}': pass '{pas}' is not one of {', '.join(PASSES)}")
    rungs = [r for r in parts[2].split(",") if r] if len(parts) > 2 else None
    if rungs is not None and not rungs:
        raise ValueError(f"'{name}': empty rung list")
    return algo, pas, rungs


def select(rows, algo, pas, rungs):
    rows = [r for r in rows if r["algo"] == algo and (pas is None or r["pass"] == pas)]
    if rungs is not None:
        rows = [r for rung in rungs for r in rows if r["rung"] == rung]
    return rows


def num(text):
    try:
        v = float(text)
    except ValueError:
        return None
    return v if v == v and abs(v) != float("inf") else None


def fmt(text, spec, suffix=""):
    v = num(text)
    return "-" if v is None else format(v, spec) + suffix


def fmt_ms(text):
    v = num(text)
    if v is None:
        return "-"
    return f"{v:.3f}" if v >= 0.1 else f"{v:.4f}"


def pct(row):
    """pct_of_copy as a percentage, whether the file holds 72.5 or 0.725."""
    v, gbps, copy = num(row["pct_of_copy"]), num(row["gbps"]), num(row["copy_gbps"])
    if v is None:
        return "-"
    if gbps is not None and copy:
        ratio = gbps / copy
        if abs(v - ratio) < abs(v - 100 * ratio):
            v *= 100
    return f"{v:.1f}%"


def one_or_list(rows, key):
    vals = []
    for r in rows:
        if r[key] not in vals:
            vals.append(r[key])
    return vals


def render(rows, with_pass):
    """The Markdown table and the line under it (no surrounding blank lines)."""
    shapes = one_or_list([{"s": (r["B"], r["T"], r["D"], r["W"])} for r in rows], "s")
    head = (["pass"] if with_pass else []) + ["rung", "dtype"]
    if len(shapes) > 1:
        head += ["B", "T", "D", "W"]
    head += ["median ms", "GB/s", "% of copy", "floor ms", "x cpu"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" if i < len(head) - 5 else "--:"
                                                           for i in range(len(head))) + "|"]
    for r in rows:
        cells = ([r["pass"]] if with_pass else []) + [r["rung"], r["dtype"]]
        if len(shapes) > 1:
            cells += [r["B"], r["T"], r["D"], r["W"]]
        cells += [fmt_ms(r["median_ms"]), fmt(r["gbps"], ".0f"), pct(r), fmt_ms(r["floor_ms"]),
                  fmt(r["speedup_vs_cpu"], ".1f")]
        lines.append("| " + " | ".join(cells) + " |")

    gpus, dates, commits = one_or_list(rows, "gpu"), one_or_list(rows, "date"), one_or_list(rows, "commit")
    copies = [fmt(c, ".0f") for c in one_or_list(rows, "copy_gbps")]
    if len(shapes) == 1:
        b, t, d, w = shapes[0]
        at = f"B={b}, T={t}, D={d}, W={w}"
    else:
        at = "the shapes in the table"
    copy = " / ".join(copies)  # one run, one copy measurement; several only if files were merged
    lines.append("")
    lines.append(f"Measured on {', '.join(gpus)} on {', '.join(dates)} at {at} "
                 f"(commit {', '.join(commits)}); copy bandwidth {copy} GB/s measured in the same run.")
    return lines


def splice(path, results, stats):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines = text.split("\n")
    out, i, changed = [], 0, False
    while i < len(lines):
        line = lines[i]
        m = OPEN_RE.match(line)
        if CLOSE_RE.match(line):
            raise Failure(f"{path}:{i + 1}: closing marker without an opening one")
        if not m:
            out.append(line)
            i += 1
            continue
        name = m.group("name")
        close = next((j for j in range(i + 1, len(lines)) if OPEN_RE.match(lines[j]) or CLOSE_RE.match(lines[j])),
                     None)
        if close is None or not CLOSE_RE.match(lines[close]) or CLOSE_RE.match(lines[close]).group("name") != name:
            raise Failure(f"{path}:{i + 1}: <!-- bench:{name} --> is not followed by <!-- /bench:{name} -->")
        try:
            algo, pas, rungs = parse_name(name)
        except ValueError as e:
            raise Failure(f"{path}:{i + 1}: {e}") from None
        old = lines[i + 1:close]
        new = old
        source = next((r for r in reversed(results) if select(r[3], algo, pas, rungs)), None)
        if source is None:
            stats["missing"].append(f"{path}:{i + 1}: no results for bench:{name}; left as it is")
        else:
            new = [""] + render(select(source[3], algo, pas, rungs), with_pass=pas is None) + [""]
            stats["tables"] += 1
            stats["sources"].add(source[2])
        changed |= new != old
        out += [line] + new + [lines[close]]
        i = close + 1
    if changed:
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(out))
        stats["written"].append(path)


def main(argv):
    if len(argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    results_dir, chapters_dir = argv[1], argv[2]
    try:
        results = read_results(results_dir)
        chapters = sorted(os.path.join(root, f) for root, _, files in os.walk(chapters_dir)
                          for f in files if f.endswith(".md"))
        if not results:
            note(f"no <gpu>-<date>.csv in {results_dir}: the bench markers in {chapters_dir} are left untouched")
            return 0
        stats = {"tables": 0, "sources": set(), "missing": [], "written": []}
        for path in chapters:
            splice(path, results, stats)
    except (Failure, OSError) as e:
        note(str(e))
        return 1
    for msg in stats["missing"]:
        note(msg)
    print(f"bench_tables: {stats['tables']} tables from {', '.join(sorted(stats['sources'])) or 'no file'}; "
          f"{len(stats['written'])} chapter(s) changed" +
          (": " + ", ".join(stats["written"]) if stats["written"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
