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
and the ceilings measured in the same run. Running it twice changes nothing
the second time.

Marker names
------------
NAME is up to four parts separated by colons, ALGO[:PASS[:RUNGS[:SHAPE]]]:

    dynconv                                  every row of dynconv (with a pass column)
    dynconv:fwd                              the forward rows
    dynconv:fwd:cpu,gpu_naive                those rungs of the forward, in the order given
    dynconv:fwd:gpu_tiled:B=8 T=4096 D=2048 W=4      one shape
    dynconv:bwd:gpu_tiled,gpu_tensorcore:W=2,4,8     rows whose W is 2, 4 or 8, any B, T, D
    dynconv:::B=2 T=4096 D=2048              both passes, every rung, one (B, T, D), every W

PASS is fwd, bwd, or empty for both. RUNGS is a comma-separated list, or
empty for every rung in file order. SHAPE is a filter: space-separated
NAME=VALUE pairs, where VALUE may list alternatives separated by commas. A
row matches when its shape has every NAME of the filter with one of the
values given; names the filter does not mention may take any value. Marker
names may therefore contain spaces and '=' (never '--').

A table whose rows have more than one shape gets a "shape" column holding the
pairs that differ between its rows; the line under the table names the pairs
they share.

Results files
-------------
The header `ladder bench` writes now (shape is space-separated NAME=VALUE
pairs such as "B=8 T=4096 D=2048 W=4"):

    gpu,date,commit,algo,pass,rung,dtype,shape,median_ms,bytes,flops,gbps,tflops,
    copy_gbps,gemm_tflops,pct_of_copy,pct_of_gemm,floor_ms,speedup_vs_cpu

copy_gbps, gemm_tflops, pct_of_copy, pct_of_gemm and floor_ms are empty cells
when that ceiling was not measured (never 0); an empty cell prints as "-".
The older header of the first committed run is still read:

    gpu,date,commit,algo,pass,rung,dtype,B,T,D,W,median_ms,bytes,gbps,copy_gbps,
    pct_of_copy,floor_ms,speedup_vs_cpu

Its B, T, D and W become the shape "B=8 T=4096 D=2048 W=4", and the columns
it lacks are empty.

Numbers are printed as the Markdown report of `ladder bench` prints them:
median ms with 3 decimals, GB/s with 0, TFLOP/s with 2, % of copy with 0 and
a "%", % of GEMM with 1 and a "%", floor ms with 3, x cpu with 1. Where
`ladder bench` wrote its Markdown beside the CSV (RESULTS/<gpu>-<date>.md)
and that file has the row, its cells are copied as they are, so a chapter
never rounds a number differently from the results file (a CSV may hold
fewer digits than the value the Markdown was printed from). A Markdown cell
that disagrees with its CSV value by more than one unit in its last place is
an error. A column that is empty in every row of a table is left out, as
are TFLOP/s and % of GEMM where no row has them.

"Newest" is the date in the file name; on a tie, the later name in sort order.
With no results file at all, the markers are left as they are and a note goes
to stderr (exit 0): chapters never show numbers that were not measured.
A marker with no matching rows is left as it is, with a note. A malformed
file or marker is an error (exit 1) that names the file and line.

Standard library only. Self-test: python3 -m unittest discover -s tools -p 'test_bench_tables.py'
"""

import csv
import os
import re
import sys

HEADER = [
    "gpu", "date", "commit", "algo", "pass", "rung", "dtype", "shape", "median_ms", "bytes", "flops", "gbps",
    "tflops", "copy_gbps", "gemm_tflops", "pct_of_copy", "pct_of_gemm", "floor_ms", "speedup_vs_cpu",
]
OLD_HEADER = [
    "gpu", "date", "commit", "algo", "pass", "rung", "dtype", "B", "T", "D", "W",
    "median_ms", "bytes", "gbps", "copy_gbps", "pct_of_copy", "floor_ms", "speedup_vs_cpu",
]
# The numeric columns a table can show: (CSV key, column title, decimals, suffix, always shown).
COLUMNS = [
    ("median_ms", "median ms", 3, "", True),
    ("gbps", "GB/s", 0, "", True),
    ("tflops", "TFLOP/s", 2, "", False),
    ("pct_of_copy", "% of copy", 0, "%", False),
    ("pct_of_gemm", "% of GEMM", 1, "%", False),
    ("floor_ms", "floor ms", 3, "", False),
    ("speedup_vs_cpu", "x cpu", 1, "", True),
]
KEY = ("algo", "pass", "rung", "dtype", "shape")  # what identifies a row, in the CSV and in the Markdown
FILE_RE = re.compile(r"^(?P<gpu>.+)-(?P<date>\d{4}-\d{2}-\d{2})\.csv$")
NAME_CHARS = r"[A-Za-z0-9_.:,=+ -]+?"
OPEN_RE = re.compile(r"^<!-- bench:(?P<name>" + NAME_CHARS + r") -->[ \t]*$")
CLOSE_RE = re.compile(r"^<!-- /bench:(?P<name>" + NAME_CHARS + r") -->[ \t]*$")
PAIR_RE = re.compile(r"^(?P<k>[A-Za-z_][A-Za-z0-9_]*)=(?P<v>[^\s=,]+(?:,[^\s=,]+)*)$")
PASSES = ("fwd", "bwd")


class Failure(Exception):
    """A problem the user must fix; the message names the file."""


def note(msg):
    print("bench_tables: " + msg, file=sys.stderr)


def parse_shape(text, where):
    """'B=8 T=4096' -> [('B', '8'), ('T', '4096')]; in a row each value is one value."""
    pairs = []
    for word in text.split():
        m = PAIR_RE.match(word)
        if not m:
            raise Failure(f"{where}: '{word}' in shape '{text}' is not NAME=VALUE")
        if any(k == m.group("k") for k, _ in pairs):
            raise Failure(f"{where}: '{m.group('k')}' appears twice in shape '{text}'")
        pairs.append((m.group("k"), m.group("v")))
    return pairs


def num(text):
    """The cell's value, or None for an empty cell, '-', 'n/a', NaN or Inf."""
    try:
        v = float(text)
    except ValueError:
        return None
    return v if v == v and abs(v) != float("inf") else None


def fmt(text, decimals, suffix=""):
    v = num(text)
    return "-" if v is None else f"{v:.{decimals}f}{suffix}"


def read_csv(path):
    """The rows of one results file, every row with the keys of HEADER."""
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header == HEADER:
            old = False
        elif header == OLD_HEADER:
            old = True
        else:
            raise Failure(f"{path}: header is {','.join(header or [])}, expected {','.join(HEADER)} "
                          f"(or the older {','.join(OLD_HEADER)})")
        width = len(header)
        rows = []
        for lineno, cells in enumerate(reader, start=2):
            if not cells:
                continue
            if len(cells) != width:
                raise Failure(f"{path}:{lineno}: {len(cells)} fields, expected {width}")
            raw = dict(zip(header, cells))
            if old:
                row = {k: raw.get(k, "") for k in HEADER}
                row["shape"] = " ".join(f"{k}={raw[k]}" for k in ("B", "T", "D", "W"))
            else:
                row = raw
            row["_pairs"] = parse_shape(row["shape"], f"{path}:{lineno}")
            row["_line"] = f"{path}:{lineno}"
            rows.append(row)
    return rows


def read_markdown(path):
    """{(algo, pass, rung, dtype, shape): {column title: cell}} from the tables of a `ladder bench` Markdown
    file; {} when there is none."""
    if not os.path.exists(path):
        return {}
    cells = {}
    head = None
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line.startswith("|"):
                head = None
                continue
            parts = [c.strip() for c in line.strip("|").split("|")]
            if head is None:
                head = parts
                continue
            if all(re.fullmatch(r":?-+:?", c) for c in parts):
                continue
            row = dict(zip(head, parts))
            if all(k in row for k in KEY):
                cells[tuple(" ".join(row[k].split()) for k in KEY)] = row
    return cells


def attach_markdown(rows, md, csv_path, md_path):
    """Copy the Markdown's cells into the rows (as '_cells'), after checking they agree with the CSV."""
    for row in rows:
        key = tuple(" ".join(row[k].split()) for k in KEY)
        found = md.get(key)
        if not found:
            continue
        row["_cells"] = {}
        for col, title, decimals, suffix, _ in COLUMNS:
            if title not in found:
                continue
            cell = found[title]
            want = num(row[col])
            got = num(cell[:-len(suffix)] if suffix and cell.endswith(suffix) else cell)
            if (want is None) != (got is None) or (want is not None and abs(want - got) > 10.0 ** -decimals):
                raise Failure(f"{md_path}: '{title}' of {' '.join(key)} is {cell}, but {row['_line']} "
                              f"({csv_path}) has {row[col] or 'an empty cell'}")
            row["_cells"][col] = cell


def read_results(results_dir):
    """[(date, name, path, rows)] for every RESULTS/<gpu>-<date>.csv, oldest first."""
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
        rows = read_csv(path)
        md_path = path[:-len(".csv")] + ".md"
        attach_markdown(rows, read_markdown(md_path), path, md_path)
        found.append((m.group("date"), name, path, rows))
    found.sort(key=lambda r: (r[0], r[1]))
    return found


def parse_name(name):
    """NAME -> (algo, pass or None, [rungs] or None, [(shape name, {values})] or None)."""
    parts = name.split(":")
    if len(parts) > 4 or not parts[0]:
        raise ValueError(f"'{name}' is not ALGO[:PASS[:RUNG,...[:SHAPE]]]")
    algo = parts[0]
    pas = parts[1] if len(parts) > 1 and parts[1] else None
    if pas is not None and pas not in PASSES:
        raise ValueError(f"'{name}': pass '{pas}' is not one of {', '.join(PASSES)} (or empty for both)")
    rungs = None
    if len(parts) > 2 and parts[2].strip():
        rungs = [r.strip() for r in parts[2].split(",")]
        if not all(rungs):
            raise ValueError(f"'{name}': empty name in the rung list '{parts[2]}'")
    shape = None
    if len(parts) > 3:
        shape = []
        for word in parts[3].split():
            m = PAIR_RE.match(word)
            if not m:
                raise ValueError(f"'{name}': '{word}' in the shape filter is not NAME=VALUE[,VALUE...]")
            shape.append((m.group("k"), set(m.group("v").split(","))))
        if not shape:
            raise ValueError(f"'{name}': empty shape filter")
    return algo, pas, rungs, shape


def select(rows, algo, pas, rungs, shape=None):
    def fits(r):
        have = dict(r["_pairs"])
        return all(have.get(k) in values for k, values in shape or [])

    rows = [r for r in rows if r["algo"] == algo and (pas is None or r["pass"] == pas) and fits(r)]
    if rungs is not None:
        rows = [r for rung in rungs for r in rows if r["rung"] == rung]
    return rows


def one_or_list(values):
    out = []
    for v in values:
        if v not in out:
            out.append(v)
    return out


def cell(row, col, decimals, suffix):
    given = row.get("_cells", {}).get(col)
    return given if given is not None else fmt(row[col], decimals, suffix)


def render(rows, with_pass):
    """The Markdown table and the line under it (no surrounding blank lines)."""
    shapes = one_or_list([tuple(r["_pairs"]) for r in rows])
    common = [p for p in shapes[0] if all(p in s for s in shapes)]
    varying = [k for k in one_or_list(k for s in shapes for k, _ in s) if k not in dict(common)]

    cols = [c for c in COLUMNS if c[4] or any(num(r[c[0]]) is not None for r in rows)]
    head = (["pass"] if with_pass else []) + ["rung", "dtype"] + (["shape"] if len(shapes) > 1 else [])
    n_text = len(head)
    head += [c[1] for c in cols]
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join("---" if i < n_text else "--:" for i in range(len(head))) + "|"]
    for r in rows:
        cells = ([r["pass"]] if with_pass else []) + [r["rung"], r["dtype"]]
        if len(shapes) > 1:
            have = dict(r["_pairs"])
            cells.append(" ".join(f"{k}={have[k]}" for k in varying if k in have))
        cells += [cell(r, col, decimals, suffix) for col, _, decimals, suffix, _ in cols]
        lines.append("| " + " | ".join(cells) + " |")

    gpus = one_or_list(r["gpu"] for r in rows)
    dates = one_or_list(r["date"] for r in rows)
    commits = one_or_list(r["commit"] for r in rows)
    at = ", ".join(f"{k}={v}" for k, v in common)
    if len(shapes) > 1:
        what = ", ".join(varying)
        at = f"{at} and the {what} in each row" if at else "the shapes in the table"
    copies = one_or_list(fmt(r["copy_gbps"], 0) for r in rows)
    gemms = one_or_list(fmt(r["gemm_tflops"], 0) for r in rows)
    # one run, one measurement of each ceiling; several only if files were merged
    ceilings = ("copy bandwidth not measured" if copies == ["-"]
                else f"copy bandwidth {' / '.join(copies)} GB/s measured in the same run")
    if gemms != ["-"]:
        ceilings += f"; bf16 GEMM {' / '.join(gemms)} TFLOP/s in the same run"
    lines.append("")
    lines.append(f"Measured on {', '.join(gpus)} on {', '.join(dates)} at {at} "
                 f"(commit {', '.join(commits)}); {ceilings}.")
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
            algo, pas, rungs, shape = parse_name(name)
        except ValueError as e:
            raise Failure(f"{path}:{i + 1}: {e}") from None
        old = lines[i + 1:close]
        new = old
        source = next((r for r in reversed(results) if select(r[3], algo, pas, rungs, shape)), None)
        if source is None:
            stats["missing"].append(f"{path}:{i + 1}: no results for bench:{name}; left as it is")
        else:
            new = [""] + render(select(source[3], algo, pas, rungs, shape), with_pass=pas is None) + [""]
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
