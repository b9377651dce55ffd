#!/usr/bin/env python3
"""Splice committed benchmark results into the chapters.

    python3 tools/bench_tables.py docs/results chapters      (what `make bench-tables` runs)

Results are the CSV files `ladder bench` writes, committed as
RESULTS/<gpu>-<date>.csv (for example h100-2026-11-21.csv). Chapters are the
Markdown files under CHAPTERS. Everything between a pair of marker lines

    <!-- bench:NAME -->
    <!-- /bench:NAME -->

is replaced by a table made from the newest results file that has rows for
NAME, followed by one line naming the GPU, the date, the shape, the results
file (whose commit column names the code that ran) and the ceilings measured
in the same run. Running it twice changes nothing
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
    copy_gbps,gemm_tflops,pct_of_copy,pct_of_gemm,floor_ms,speedup_vs_cpu,
    cpu_copy_gbps,cpu_threads,cpu_gflops

copy_gbps, gemm_tflops, pct_of_copy, pct_of_gemm and floor_ms are empty cells
when that ceiling was not measured (never 0); an empty cell prints as "-".
A cpu row's pct_of_copy and floor_ms are against cpu_copy_gbps, the host's
copy bandwidth measured in the same run at cpu_threads threads, which the
line under a table names; the other rows' against copy_gbps, the device's.
cpu_gflops, the host's rate on a loop of multiply-adds at cpu_threads, goes in
no table. Files written before it was measured lack that column, and files
written before the host's copy ceiling lack its two columns as well (every
row's % of copy is then of the device's copy); both are still read, and so is
the older header of the first committed run:

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

Charts
------
A second pair of markers draws a chart instead of a table:

    <!-- bench-chart:NAME:X -->
    <!-- /bench-chart:NAME:X -->

NAME is the filter above and X a shape name, for example

    <!-- bench-chart:dynconv:::B=2 T=4096 D=2048:W -->

The chart plots % of copy (y, from 0 to the larger of 110% and the highest
point rounded up to 10%) against X (x), one line of points per (rung, dtype,
pass) of the rows NAME selects that have X in their shape: colour and point
shape name the rung and dtype (a rung's first dtype drawn wider, so that
lines that coincide still show), a solid line with filled points is the
forward, a dashed line with open points the backward.
Dashed lines mark 100% (the copy rate) and 80%. The x axis has a tick at
every value of X and is on a log2 scale when every value is a power of two
(a sweep that doubles), on a linear scale otherwise. Rows with an empty
pct_of_copy (no ceiling measured, as in a run without a GPU) are left out,
and the chart comes from the newest results file that has a row to plot.
Apart from X, the plotted rows must share their shape: a filter that lets
another shape name vary is an error.

The chart is written as plain SVG (standard library, no timestamps) to
CHAPTERS/figures/bench-<NAME and X as a file name>.svg, for the marker above
bench-dynconv-B2-T4096-D2048-W.svg ("=" is dropped, spaces and colons become
"-", commas "+"). Between the markers go a Markdown image line that points
at it, as the chapters' other figures do, and the line naming the GPU, the
date, the shape and the results file. An SVG is rewritten only when its bytes
change. Two markers whose names give one file name, and two rows for one
point, are errors.

Ideas
-----
A third pair of markers shows what each idea of a rung bought, from a
committed ablation rather than the newest run:

    <!-- ideas:TABLE -->
    <!-- /ideas:TABLE -->

RESULTS/ideas.csv lists the ideas, in the order that builds the kernel, with
the header `table,idea,before,after,rows`: TABLE, the idea's name, the
`ladder bench` CSV (a file of RESULTS, any name) that times the kernel
without the idea and the one that times it with it, each FILE or
FILE@COMMIT (the rows whose commit column is COMMIT: variants timed by
tools/gpu/make-variants.sh name themselves there), and a filter of the rows
to show, space-separated NAME=VALUE[,VALUE...] pairs over the shape and the
columns algo, pass, rung and dtype (for example "pass=fwd deterministic=0").
A row of `before` that fits the filter is matched with the row of `after`
with the same algo, pass, rung, dtype and shape, and both must come from one
lease (the same gpu and date; times from different leases are never set
side by side). The table has a row per idea and matched row: the idea, the
pass and the shape pairs that differ (where they do), median ms without and
with the idea as the CSVs hold them (the median of its rounds where a file
timed a variant in several), and the speed-up (without / with, two decimals
and an "x"); the line under it names the GPU, the date, the shared
shape and the files. Every idea must match at least one row.

"Newest" is the date in the file name; on a tie, the later name in sort order.
With no results file at all, the markers are left as they are and a note goes
to stderr (exit 0): chapters never show numbers that were not measured.
A marker with no matching rows is left as it is, with a note. A malformed
file or marker is an error (exit 1) that names the file and line.

Standard library only. Self-test: python3 -m unittest discover -s tools -p 'test_bench_tables.py'
"""

import csv
import math
import os
import re
import sys
from xml.sax.saxutils import escape

HEADER = [
    "gpu", "date", "commit", "algo", "pass", "rung", "dtype", "shape", "median_ms", "bytes", "flops", "gbps",
    "tflops", "copy_gbps", "gemm_tflops", "pct_of_copy", "pct_of_gemm", "floor_ms", "speedup_vs_cpu",
    "cpu_copy_gbps", "cpu_threads", "cpu_gflops",
]
HOST_HEADER = HEADER[:-1]  # before the host's multiply-add rate
PREV_HEADER = HEADER[:-3]  # before the host's copy ceiling: every row's % of copy is of the device's copy
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
# <!-- bench:NAME --> or <!-- bench-chart:NAME:X -->, or the closing one with a '/' before the kind
MARKER_RE = re.compile(r"^<!-- (?P<close>/?)(?P<kind>bench|bench-chart|ideas):(?P<name>" + NAME_CHARS + r") -->[ \t]*$")
IDEAS = "ideas.csv"  # in RESULTS: the ablations the ideas markers show
IDEAS_HEADER = ["table", "idea", "before", "after", "rows"]
ROW_KEYS = ("algo", "pass", "rung", "dtype")  # the columns an ideas filter may name beside the shape
PAIR_RE = re.compile(r"^(?P<k>[A-Za-z_][A-Za-z0-9_]*)=(?P<v>[^\s=,]+(?:,[^\s=,]+)*)$")
PASSES = ("fwd", "bwd")
X_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
FIGURES = "figures"  # under CHAPTERS, where the charts go


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
        if header in (HEADER, HOST_HEADER, PREV_HEADER):
            old = False
        elif header == OLD_HEADER:
            old = True
        else:
            raise Failure(f"{path}: header is {','.join(header or [])}, expected {','.join(HEADER)} "
                          f"(or the older {','.join(HOST_HEADER)}, {','.join(PREV_HEADER)} or "
                          f"{','.join(OLD_HEADER)})")
        width = len(header)
        rows = []
        for lineno, cells in enumerate(reader, start=2):
            if not cells:
                continue
            if len(cells) != width:
                raise Failure(f"{path}:{lineno}: {len(cells)} fields, expected {width}")
            raw = dict(zip(header, cells))
            row = {k: raw.get(k, "") for k in HEADER}
            if old:
                row["shape"] = " ".join(f"{k}={raw[k]}" for k in ("B", "T", "D", "W"))
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
        if not name.endswith(".csv") or name == IDEAS:
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


def shape_split(rows):
    """(the rows' distinct shapes, the pairs all of them share, the names whose values differ between them)."""
    shapes = one_or_list([tuple(r["_pairs"]) for r in rows])
    common = [p for p in shapes[0] if all(p in s for s in shapes)]
    varying = [k for k in one_or_list(k for s in shapes for k, _ in s) if k not in dict(common)]
    return shapes, common, varying


def render(rows, with_pass):
    """The Markdown table and the line under it (no surrounding blank lines)."""
    shapes, common, varying = shape_split(rows)

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

    at = ", ".join(f"{k}={v}" for k, v in common)
    if len(shapes) > 1:
        what = ", ".join(varying)
        at = f"{at} and the {what} in each row" if at else "the shapes in the table"
    lines.append("")
    lines.append(measured(rows, at))
    return lines


def measured(rows, at):
    """The line under a table or a chart: GPU, date, shape (AT), results file and the ceilings of the run."""
    gpus = one_or_list(r["gpu"] for r in rows)
    dates = one_or_list(r["date"] for r in rows)
    files = one_or_list(os.path.basename(r["_line"].rpartition(":")[0]) for r in rows)
    copies = one_or_list(fmt(r["copy_gbps"], 0) for r in rows)
    gemms = one_or_list(fmt(r["gemm_tflops"], 0) for r in rows)
    hosts = one_or_list(f"{fmt(r['cpu_copy_gbps'], 0)} GB/s at {fmt(r['cpu_threads'], 0)} threads"
                        for r in rows if r["rung"] == "cpu" and num(r["cpu_copy_gbps"]) is not None)
    # one run, one measurement of each ceiling; several only if files were merged
    ceilings = ("copy bandwidth not measured" if copies == ["-"]
                else f"copy bandwidth {' / '.join(copies)} GB/s measured in the same run")
    if hosts:
        ceilings += f"; host copy {' / '.join(hosts)} in the same run, the cpu rung's % of copy"
    if gemms != ["-"]:
        ceilings += f"; bf16 GEMM {' / '.join(gemms)} TFLOP/s in the same run"
    return f"Measured on {', '.join(gpus)} on {', '.join(dates)} at {at} ({', '.join(files)}); {ceilings}."


def parse_chart_name(name):
    """'NAME:X' of a chart marker -> (NAME, X, what parse_name gives for NAME)."""
    if ":" not in name:
        raise ValueError(f"'{name}' is not ALGO[:PASS[:RUNG,...[:SHAPE]]]:X")
    base, x = name.rsplit(":", 1)
    if not X_RE.match(x):
        raise ValueError(f"'{name}': the x axis '{x}' is not a shape name such as W")
    return base, x, parse_name(base)


def figure_name(name):
    """The SVG file of the chart marker 'NAME:X'.

    'dynconv:::B=2 T=4096 D=2048:W' -> 'bench-dynconv-B2-T4096-D2048-W.svg'
    """
    parts = ["-".join(p.replace("=", "").replace(",", "+").split()) for p in name.split(":")]
    return "bench-" + "-".join(p for p in parts if p) + ".svg"


def chart_rows(rows, x, filters):
    """The rows a chart plots: those NAME selects that have X in their shape and a % of copy."""
    return [r for r in select(rows, *filters) if x in dict(r["_pairs"]) and num(r["pct_of_copy"]) is not None]


# Okabe and Ito's palette, which stays apart for the common kinds of colour blindness; yellow left out
# (too light on white). Point shapes tell the series apart a second way.
COLOURS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#999999"]
SHAPES = ["circle", "square", "triangle", "diamond", "down"]
DASH = {"fwd": None, "bwd": "7 4"}  # forward solid, backward dashed


def point(shape, cx, cy, colour, filled, tip=None, size=1.0):
    """One point marker of SHAPE centred on (cx, cy), SIZE times the usual; forward points filled, backward open."""
    r = 4.0 * size
    if shape == "circle":
        tag, where = "circle", f'cx="{cx:.1f}" cy="{cy:.1f}" r="{r:.1f}"'
    elif shape == "square":
        tag, where = "rect", f'x="{cx - r:.1f}" y="{cy - r:.1f}" width="{2 * r:.1f}" height="{2 * r:.1f}"'
    else:
        k = 1.3 * r
        corners = {"triangle": [(0, -k), (k, 0.8 * k), (-k, 0.8 * k)],
                   "down": [(0, k), (k, -0.8 * k), (-k, -0.8 * k)],
                   "diamond": [(0, -k), (k, 0), (0, k), (-k, 0)]}[shape]
        tag, where = "polygon", 'points="' + " ".join(f"{cx + dx:.1f},{cy + dy:.1f}" for dx, dy in corners) + '"'
    el = f'<{tag} {where} fill="{colour if filled else "white"}" stroke="{colour}" stroke-width="1.5"'
    return f"{el}><title>{escape(tip)}</title></{tag}>" if tip else el + "/>"


def chart_svg(rows, x, title, subtitle):
    """A line chart of % of copy (y) against the shape value X (x): one polyline per (rung, dtype, pass)."""
    xs = sorted({num(dict(r["_pairs"])[x]) for r in rows})
    log = all(v > 0 and v == 2 ** round(math.log2(v)) for v in xs)
    u = (lambda v: math.log2(v)) if log else (lambda v: v)
    top_data = max(num(r["pct_of_copy"]) for r in rows)
    ymax = max(110.0, math.ceil(top_data / 10.0) * 10.0)
    step = 10.0  # a grid line every 10%, or 20%, 40%, ... so that there are at most 8
    while ymax / step > 8:
        step *= 2

    width, left, right, top, height = 700, 64, 676, 58, 300
    bottom = top + height
    pad = 24  # between the y axis and the first x value, the last x value and the right edge
    lo, hi = u(xs[0]), u(xs[-1])

    def px(v):
        return (left + right) / 2 if hi == lo else left + pad + (u(v) - lo) / (hi - lo) * (right - left - 2 * pad)

    def py(v):
        return bottom - v / ymax * height

    series = one_or_list((r["rung"], r["dtype"], r["pass"]) for r in rows)
    looks = one_or_list((rung, dtype) for rung, dtype, _ in series)
    passes = one_or_list(p for _, _, p in series)
    # (colour, point shape, line width, point size) per (rung, dtype). The dtypes of one rung often coincide
    # (bf16 and f16 move the same bytes), so the first is drawn wider and larger and shows around the next.
    style = {}
    for i, (rung, dtype) in enumerate(looks):
        dtypes = [d for r, d in looks if r == rung]
        wider = len(dtypes) - 1 - dtypes.index(dtype)
        style[(rung, dtype)] = (COLOURS[i % len(COLOURS)], SHAPES[i % len(SHAPES)], 2 + 1.5 * wider, 1 + 0.4 * wider)

    per_row = 3
    legend_top = bottom + 58
    n_legend_rows = (1 if len(passes) > 1 else 0) + (len(looks) + per_row - 1) // per_row
    total = legend_top + 20 * n_legend_rows + 6

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{total}" '
           f'viewBox="0 0 {width} {total}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">',
           f"<title>{escape(title)}</title>",
           f'<rect width="{width}" height="{total}" fill="white"/>',
           f'<text x="{left}" y="22" font-size="15" font-weight="bold">{escape(title)}</text>',
           f'<text x="{left}" y="41" fill="#333">{escape(subtitle)}</text>']
    # grid, y ticks, y axis title
    v = 0.0
    while v <= ymax + 1e-9:
        y = py(v)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" stroke="#e4e4e4"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{v:.0f}%</text>')
        v += step
    mid = (top + bottom) / 2
    out.append(f'<text x="18" y="{mid:.1f}" text-anchor="middle" transform="rotate(-90 18 {mid:.1f})">'
               f"% of the copy rate</text>")
    # x ticks at every value of X, x axis title
    for xv in xs:
        xp = px(xv)
        out.append(f'<line x1="{xp:.1f}" y1="{top}" x2="{xp:.1f}" y2="{bottom}" stroke="#f0f0f0"/>')
        out.append(f'<line x1="{xp:.1f}" y1="{bottom}" x2="{xp:.1f}" y2="{bottom + 5}" stroke="#333"/>')
        out.append(f'<text x="{xp:.1f}" y="{bottom + 19}" text-anchor="middle">{xv:g}</text>')
    out.append(f'<text x="{(left + right) / 2:.1f}" y="{bottom + 40}" text-anchor="middle">'
               f"{escape(x)}{' (log2 scale)' if log else ''}</text>")
    out.append(f'<rect x="{left}" y="{top}" width="{right - left}" height="{height}" fill="none" stroke="#333"/>')
    # the copy rate and 80% of it, labelled at the left where the small-X points are low
    for level, label, colour, dash in ((100, "copy rate (100%)", "#444", "6 4"), (80, "80% of copy", "#888", "3 3")):
        y = py(level)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" stroke="{colour}" '
                   f'stroke-width="1.2" stroke-dasharray="{dash}"/>')
        out.append(f'<text x="{left + 6}" y="{y - 5:.1f}" fill="{colour}" font-size="11">{label}</text>')
    # lines first, then every point over them
    points = []
    for key in series:
        rung, dtype, pas = key
        colour, shape, line_width, size = style[(rung, dtype)]
        mine = sorted(((num(dict(r["_pairs"])[x]), num(r["pct_of_copy"])) for r in rows
                       if (r["rung"], r["dtype"], r["pass"]) == key))
        pts = " ".join(f"{px(a):.1f},{py(b):.1f}" for a, b in mine)
        dash = f' stroke-dasharray="{DASH[pas]}"' if DASH.get(pas) else ""
        out.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="{line_width:g}"{dash}/>')
        points += [point(shape, px(a), py(b), colour, pas != "bwd", f"{rung} {dtype} {pas} {x}={a:g}: {b:.1f}%", size)
                   for a, b in mine]
    out += points
    # legend: what solid and dashed mean, then one entry per (rung, dtype)
    y = legend_top
    if len(passes) > 1:
        xl = left
        for pas, words in (("fwd", "forward (filled points)"), ("bwd", "backward (open points)")):
            dash = f' stroke-dasharray="{DASH[pas]}"' if DASH.get(pas) else ""
            out.append(f'<line x1="{xl}" y1="{y}" x2="{xl + 36}" y2="{y}" stroke="#444" stroke-width="2"{dash}/>')
            out.append(point("circle", xl + 18, y, "#444", pas != "bwd"))
            out.append(f'<text x="{xl + 44}" y="{y + 4}">{words}</text>')
            xl += 220
        y += 20
    col = (right - left) / per_row
    for i, (rung, dtype) in enumerate(looks):
        colour, shape, line_width, size = style[(rung, dtype)]
        xl = left + (i % per_row) * col
        yl = y + (i // per_row) * 20
        out.append(f'<line x1="{xl:.1f}" y1="{yl}" x2="{xl + 36:.1f}" y2="{yl}" stroke="{colour}" '
                   f'stroke-width="{line_width:g}"/>')
        out.append(point(shape, xl + 18, yl, colour, True, size=size))
        out.append(f'<text x="{xl + 44:.1f}" y="{yl + 4}">{escape(rung)} {escape(dtype)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def render_chart(rows, name, x, filters, where):
    """(SVG text, the image's alt text, the line under the image) for the chart marker NAME:X."""
    shapes = one_or_list(tuple(p for p in r["_pairs"] if p[0] != x) for r in rows)
    common = [p for p in shapes[0] if all(p in s for s in shapes)]
    others = one_or_list(k for s in shapes for k, _ in s if (k, dict(s)[k]) not in common)
    if others:
        raise Failure(f"{where}: the rows of bench-chart:{name}:{x} differ in {', '.join(others)} as well as in {x}; "
                      f"give {', '.join(others)} one value in the shape filter")
    seen = {}
    for r in rows:
        if num(dict(r["_pairs"])[x]) is None:
            raise Failure(f"{r['_line']}: {x}={dict(r['_pairs'])[x]} is not a number, so it cannot go on an x axis")
        key = (r["rung"], r["dtype"], r["pass"], num(dict(r["_pairs"])[x]))
        if key in seen:
            raise Failure(f"{r['_line']}: a second point for {' '.join(key[:3])} at {x}={key[3]:g} in "
                          f"bench-chart:{name}:{x} (the first is {seen[key]})")
        seen[key] = r["_line"]
    algo, pas, _, _ = filters
    at = ", ".join(f"{k}={v}" for k, v in common)
    what = {"fwd": "forward", "bwd": "backward", None: "forward and backward"}[pas]
    title = f"{algo} {what}: % of the copy rate against {x}"
    gpus = ", ".join(one_or_list(r["gpu"] for r in rows))
    dates = ", ".join(one_or_list(r["date"] for r in rows))
    subtitle = f"{at + ', ' if at else ''}{gpus}, {dates}"
    passes = one_or_list(r["pass"] for r in rows)
    how = " (forward solid, backward dashed)" if len(passes) > 1 else ""
    alt = (f"{title}{' at ' + at if at else ''}, one line per rung, dtype{' and pass' if len(passes) > 1 else ''}"
           f"{how}; the grey dashed lines are the copy rate and 80% of it.")
    caption = measured(rows, f"{at + ' and ' if at else ''}the {x} on the x axis")
    return chart_svg(rows, x, title, subtitle), alt, caption


def read_ideas(results_dir):
    """{table: [(idea, before, after, filter, where)]} from RESULTS/ideas.csv ({} without one); before and after
    are (file name, rows)."""
    path = os.path.join(results_dir, IDEAS)
    if not os.path.exists(path):
        return {}
    tables = {}
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header != IDEAS_HEADER:
            raise Failure(f"{path}: header is {','.join(header or [])}, expected {','.join(IDEAS_HEADER)}")
        for lineno, cells in enumerate(reader, start=2):
            if not cells:
                continue
            where = f"{path}:{lineno}"
            if len(cells) != len(IDEAS_HEADER):
                raise Failure(f"{where}: {len(cells)} fields, expected {len(IDEAS_HEADER)}")
            table, idea, before, after, rows = cells
            filt = []
            for word in rows.split():
                m = PAIR_RE.match(word)
                if not m:
                    raise Failure(f"{where}: '{word}' in the rows filter is not NAME=VALUE[,VALUE...]")
                filt.append((m.group("k"), set(m.group("v").split(","))))
            tables.setdefault(table, []).append(
                (idea, ablation_rows(results_dir, before, where), ablation_rows(results_dir, after, where), filt,
                 where))
    return tables


def ablation_rows(results_dir, ref, where):
    """'FILE' or 'FILE@COMMIT' -> (FILE, its rows, those of COMMIT alone when given)."""
    name, _, commit = ref.partition("@")
    path = os.path.join(results_dir, name)
    if not name or not os.path.isfile(path):
        raise Failure(f"{where}: '{name}' is not a file of {results_dir}")
    rows = [r for r in read_csv(path) if not commit or r["commit"] == commit]
    if not rows:
        raise Failure(f"{where}: no row of {name} has the commit '{commit}'")
    return name, rows


def fits_filter(row, filt):
    have = dict(row["_pairs"])
    return all((row[k] if k in ROW_KEYS else have.get(k)) in values for k, values in filt)


def rounds(rows):
    """{row key: (first row, median ms)}: a file that timed a variant in several rounds has a row per round for
    one key, and the idea's time is their median (as the CSVs write it when there is one)."""
    found = {}
    for r in rows:
        found.setdefault(tuple(r[k] for k in KEY), []).append(r)
    out = {}
    for key, same in found.items():
        times = sorted(num(r["median_ms"]) for r in same if num(r["median_ms"]) is not None)
        if len(same) == 1 or not times:
            out[key] = (same[0], same[0]["median_ms"])
            continue
        mid = len(times) // 2
        median = times[mid] if len(times) % 2 else (times[mid - 1] + times[mid]) / 2
        decimals = max(len(r["median_ms"].partition(".")[2]) for r in same)
        out[key] = (same[0], f"{median:.{decimals}f}")
    return out


def render_ideas(entries):
    """The Markdown table of one ideas marker and the line under it (no surrounding blank lines)."""
    matched = []  # (idea, before row, after row, before ms, after ms)
    files = []
    for idea, (b_name, b_rows), (a_name, a_rows), filt, where in entries:
        before, after = rounds(b_rows), rounds(a_rows)
        found = [key for key in before if fits_filter(before[key][0], filt)]
        if not found:
            raise Failure(f"{where}: no row of {b_name} fits the rows filter")
        for key in found:
            if key not in after:
                raise Failure(f"{where}: {a_name} has no row for {' '.join(key)}")
            r, other = before[key][0], after[key][0]
            if (r["gpu"], r["date"]) != (other["gpu"], other["date"]):
                raise Failure(f"{where}: {b_name} ({r['gpu']}, {r['date']}) and {a_name} ({other['gpu']}, "
                              f"{other['date']}) are not one lease")
            matched.append((idea, r, other, before[key][1], after[key][1]))
        files += [b_name, a_name]
    rows = [m[1] for m in matched]
    _, common, varying = shape_split(rows)
    with_pass = len(one_or_list(r["pass"] for r in rows)) > 1
    head = ["idea"] + (["pass"] if with_pass else []) + (["shape"] if varying else [])
    n_text = len(head)
    head += ["without, ms", "with, ms", "speed-up"]
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join("---" if i < n_text else "--:" for i in range(len(head))) + "|"]
    for idea, b, a, b_ms, a_ms in matched:
        have = dict(b["_pairs"])
        cells = [idea] + ([b["pass"]] if with_pass else [])
        if varying:
            cells.append(" ".join(f"{k}={have[k]}" for k in varying if k in have))
        speed = num(b_ms) / num(a_ms) if num(b_ms) and num(a_ms) else None
        cells += [b_ms or "-", a_ms or "-", "-" if speed is None else f"{speed:.2f}x"]
        lines.append("| " + " | ".join(cells) + " |")
    gpus = ", ".join(one_or_list(r["gpu"] for r in rows))
    dates = ", ".join(one_or_list(r["date"] for r in rows))
    at = ", ".join(f"{k}={v}" for k, v in common) or "the shapes in the table"
    lines.append("")
    lines.append(f"Measured on {gpus} on {dates} at {at}; each idea timed without and with it in one lease "
                 f"({', '.join(one_or_list(files))}).")
    return lines


def splice(path, results, figures, stats):
    """Fill the markers of one chapter; charts go to stats["figures"] as {file name: (marker, svg)}."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines = text.split("\n")
    out, i, changed = [], 0, False
    while i < len(lines):
        line = lines[i]
        m = MARKER_RE.match(line)
        if not m:
            out.append(line)
            i += 1
            continue
        kind, name = m.group("kind"), m.group("name")
        if m.group("close"):
            raise Failure(f"{path}:{i + 1}: closing marker without an opening one")
        close = next((j for j in range(i + 1, len(lines)) if MARKER_RE.match(lines[j])), None)
        end = close is not None and MARKER_RE.match(lines[close])
        if not end or not end.group("close") or end.group("kind") != kind or end.group("name") != name:
            raise Failure(f"{path}:{i + 1}: <!-- {kind}:{name} --> is not followed by <!-- /{kind}:{name} -->")
        where = f"{path}:{i + 1}"
        old = lines[i + 1:close]
        if kind == "ideas":
            entries = stats["ideas"].get(name)
            if entries is None:
                raise Failure(f"{where}: ideas:{name} has no row in {IDEAS}")
            new = [""] + render_ideas(entries) + [""]
            stats["tables"] += 1
            changed |= new != old
            out += [line] + new + [lines[close]]
            i = close + 1
            continue
        try:
            if kind == "bench":
                x, filters = None, parse_name(name)
            else:
                _, x, filters = parse_chart_name(name)
        except ValueError as e:
            raise Failure(f"{where}: {e}") from None
        new = old
        if x is None:
            source = next((r for r in reversed(results) if select(r[3], *filters)), None)
        else:
            source = next((r for r in reversed(results) if chart_rows(r[3], x, filters)), None)
        if source is None:
            stats["missing"].append(f"{where}: no results for {kind}:{name}; left as it is")
        elif x is None:
            new = [""] + render(select(source[3], *filters), with_pass=filters[1] is None) + [""]
            stats["tables"] += 1
        else:
            svg, alt, caption = render_chart(chart_rows(source[3], x, filters), name, x, filters, where)
            fig = figure_name(name)
            other = stats["figures"].get(fig)
            if other and other[0] != name:
                raise Failure(f"{where}: bench-chart:{name} and bench-chart:{other[0]} both give {FIGURES}/{fig}")
            stats["figures"][fig] = (name, svg)
            link = os.path.relpath(os.path.join(figures, fig), os.path.dirname(path)).replace(os.sep, "/")
            new = ["", f"![{alt}]({link})", "", caption, ""]
            stats["charts"] += 1
        if source is not None:
            stats["sources"].add(source[2])
        changed |= new != old
        out += [line] + new + [lines[close]]
        i = close + 1
    if changed:
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(out))
        stats["written"].append(path)


def write_figures(figures, stats):
    """Write the charts' SVG files, each only when its bytes change (so a second run touches nothing)."""
    for fig, (_, svg) in sorted(stats["figures"].items()):
        path = os.path.join(figures, fig)
        data = svg.encode("utf-8")
        if os.path.exists(path):
            with open(path, "rb") as f:
                if f.read() == data:
                    continue
        os.makedirs(figures, exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        stats["written"].append(path)


def main(argv):
    if len(argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    results_dir, chapters_dir = argv[1], argv[2]
    try:
        results = read_results(results_dir)
        ideas = read_ideas(results_dir)
        chapters = sorted(os.path.join(root, f) for root, _, files in os.walk(chapters_dir)
                          for f in files if f.endswith(".md"))
        if not results:
            note(f"no <gpu>-<date>.csv in {results_dir}: the bench markers in {chapters_dir} are left untouched")
            return 0
        figures = os.path.join(chapters_dir, FIGURES)
        stats = {"tables": 0, "charts": 0, "figures": {}, "sources": set(), "missing": [], "written": [],
                 "ideas": ideas}
        for path in chapters:
            splice(path, results, figures, stats)
        write_figures(figures, stats)
    except (Failure, OSError) as e:
        note(str(e))
        return 1
    for msg in stats["missing"]:
        note(msg)
    print(f"bench_tables: {stats['tables']} table(s) and {stats['charts']} chart(s) from "
          f"{', '.join(sorted(stats['sources'])) or 'no file'}; {len(stats['written'])} file(s) changed" +
          (": " + ", ".join(stats["written"]) if stats["written"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
