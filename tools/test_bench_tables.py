#!/usr/bin/env python3
"""Self-test of tools/bench_tables.py: standard library only, well under a second.

    python3 -m unittest discover -s tools -p 'test_bench_tables.py'
    python3 tools/test_bench_tables.py
"""

import io
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_tables as bt  # noqa: E402

OLD = ("gpu,date,commit,algo,pass,rung,dtype,B,T,D,W,median_ms,bytes,gbps,copy_gbps,pct_of_copy,floor_ms,"
       "speedup_vs_cpu\n"
       "GPU X,2026-01-01,abc,dynconv,fwd,cpu,f32,8,4096,2048,4,86.2415,1610612736,18.7,2990.7,0.6,0.5385,1.0\n"
       "GPU X,2026-01-01,abc,dynconv,fwd,gpu_tiled,f32,8,4096,2048,4,0.5327,1610612736,3023.6,2990.7,101.1,"
       "0.5385,161.9\n")
# What `ladder bench` printed beside OLD, from values with more digits than the CSV keeps.
OLD_MD = ("Measured on GPU X on 2026-01-01 (commit abc); device-to-device copy 2991 GB/s in the same run.\n\n"
          "| algo | pass | rung | dtype | shape | median ms | GB/s | % of copy | floor ms | x cpu |\n"
          "|---|---|---|---|---|---:|---:|---:|---:|---:|\n"
          "| dynconv | fwd | cpu | f32 | B=8 T=4096 D=2048 W=4 | 86.241 | 19 | 1% | 0.539 | 1.0 |\n"
          "| dynconv | fwd | gpu_tiled | f32 | B=8 T=4096 D=2048 W=4 | 0.533 | 3024 | 101% | 0.539 | 161.9 |\n")
NEW_HEAD = ("gpu,date,commit,algo,pass,rung,dtype,shape,median_ms,bytes,flops,gbps,tflops,copy_gbps,gemm_tflops,"
            "pct_of_copy,pct_of_gemm,floor_ms,speedup_vs_cpu\n")
NEW = NEW_HEAD + (
    "GPU Y,2026-02-01,def,dynconv,fwd,cpu,f32,B=2 T=4096 D=2048 W=2,10.5,1,2,3.25,0.0123,3000.4,780.2,0.1,0.00015,"
    "0.0401,1.0\n"
    "GPU Y,2026-02-01,def,dynconv,fwd,gpu_tiled,f32,B=2 T=4096 D=2048 W=2,0.0466,1,2,2880.4,0.00456,3000.4,780.2,"
    "96.0,0.0061,0.0401,225.3\n"
    "GPU Y,2026-02-01,def,dynconv,fwd,gpu_tiled,f32,B=2 T=4096 D=2048 W=64,1.2345,1,2,2100.0,0.29,3000.4,780.2,"
    "70.0,0.04,0.8765,8.5\n"
    "GPU Y,2026-02-01,def,dynconv,bwd,gpu_tiled,f32,B=8 T=4096 D=2048 W=4,1.0,1,2,2774.4,0.81,3000.4,780.2,"
    "92.5,0.1,0.987,159.6\n")
# A run that measured the host's copy too: the cpu row's % of copy is of that.
HOST = NEW_HEAD.replace("speedup_vs_cpu\n", "speedup_vs_cpu,cpu_copy_gbps,cpu_threads\n") + (
    "GPU H,2026-04-01,aaa,dynconv,fwd,cpu,f32,B=8 T=4096 D=2048 W=4,20.0,1,2,80.0,0.01,3000.4,,53.3,,13.3,1.0,"
    "150.2,16\n"
    "GPU H,2026-04-01,aaa,dynconv,fwd,gpu_tiled,f32,B=8 T=4096 D=2048 W=4,0.55,1,2,2900.0,0.1,3000.4,,96.7,,0.53,"
    "36.4,150.2,16\n")
# A run that measured the host's multiply-add rate as well: a column no table prints.
HOST_FMA = HOST.replace("cpu_threads\n", "cpu_threads,cpu_gflops\n").replace(",150.2,16\n", ",150.2,16,402.51\n")
# A run without a GPU: no ceilings measured, so those cells are empty (never 0).
NO_GPU = NEW_HEAD + (
    "none,2026-03-01,fed,dynconv,fwd,cpu,f32,B=1 T=64 D=8 W=4,0.25,1,2,4.0,0.5,,,,,,1.0\n")



def chart_row(pas, rung, dtype, w, pct, date="2026-05-01", shape="B=2 T=64 D=8"):
    """One row of a W sweep; pct '' is a run that measured no copy ceiling."""
    copy = "3000.0" if pct != "" else ""
    return f"GPU Z,{date},c0ffee,dynconv,{pas},{rung},{dtype},{shape} W={w},0.5,1,2,9.0,0.1,{copy},,{pct},,,1.0\n"


# A tiny W sweep: two rungs forward, one backward, and a cpu row with no % of copy.
SWEEP = NEW_HEAD + "".join(
    [chart_row("fwd", "gpu_tiled", "f32", w, p) for w, p in ((2, "60.0"), (4, "95.5"), (8, "101.2"))] +
    [chart_row("fwd", "gpu_tensorcore", "bf16", w, p) for w, p in ((2, "50.0"), (4, "70.0"), (8, "80.0"))] +
    [chart_row("bwd", "gpu_tiled", "f32", w, p) for w, p in ((2, "40.0"), (8, "30.0"))] +
    [chart_row("fwd", "cpu", "f32", 2, "")])
CHART = "dynconv:::B=2 T=64 D=8:W"
CHART_SVG = "bench-dynconv-B2-T64-D8-W.svg"


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def variant_row(commit, pas, causal, ms, date="2026-06-01"):
    """One row of a variants CSV: the variant names itself in the commit column."""
    return (f"GPU V,{date},{commit},flash,{pas},gpu_tensorcore,bf16,B=4 S=4096 D=128 causal={causal},{ms},1,2,3.0,"
            "4.0,3000.0,780.0,0.1,0.5,0.3,\n")


# Two variants timed in one lease, and a third file from another day.
VARIANTS = NEW_HEAD + "".join(variant_row(c, p, k, ms) for c, p, k, ms in (
    ("old", "fwd", 0, "2.0000"), ("old", "fwd", 1, "1.2000"), ("old", "bwd", 0, "5.0000"),
    ("new", "fwd", 0, "1.0000"), ("new", "fwd", 1, "0.8000"), ("new", "bwd", 0, "5.0000"),
    ("new", "fwd", 1, "0.7000")))  # a second round of one row: the median of the two, 0.7500
LATER = NEW_HEAD + variant_row("newer", "fwd", 0, "0.5000", date="2026-06-02") + variant_row(
    "newer", "fwd", 1, "0.4000", date="2026-06-02")
IDEAS_HEAD = "table,idea,before,after,rows\n"


class BenchTablesTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.results = os.path.join(self.tmp.name, "results")
        self.chapters = os.path.join(self.tmp.name, "chapters")
        os.makedirs(self.results)
        os.makedirs(self.chapters)

    def tearDown(self):
        self.tmp.cleanup()

    def run_tool(self):
        err, out = io.StringIO(), io.StringIO()
        with redirect_stderr(err), redirect_stdout(out):
            code = bt.main(["bench_tables.py", self.results, self.chapters])
        return code, err.getvalue()

    def splice(self, marker):
        """The table the tool splices between the markers of NAME = marker."""
        path = os.path.join(self.chapters, "c.md")
        write(path, f"before\n<!-- bench:{marker} -->\n<!-- /bench:{marker} -->\nafter\n")
        code, err = self.run_tool()
        self.assertEqual(code, 0, err)
        return read(path)

    def test_old_header_becomes_a_shape_and_copies_the_markdown_cells(self):
        write(os.path.join(self.results, "gpux-2026-01-01.csv"), OLD)
        write(os.path.join(self.results, "gpux-2026-01-01.md"), OLD_MD)
        rows = bt.read_results(self.results)[0][3]
        self.assertEqual(rows[0]["shape"], "B=8 T=4096 D=2048 W=4")
        self.assertEqual(rows[0]["flops"], "")
        self.assertEqual(rows[0]["gemm_tflops"], "")
        text = self.splice("dynconv:fwd:cpu,gpu_tiled")
        # 86.2415 in the CSV would round to 86.242: the Markdown's 86.241 wins, as does its 0.539
        self.assertIn("| cpu | f32 | 86.241 | 19 | 1% | 0.539 | 1.0 |", text)
        self.assertIn("| gpu_tiled | f32 | 0.533 | 3024 | 101% | 0.539 | 161.9 |", text)
        self.assertIn("| rung | dtype | median ms | GB/s | % of copy | floor ms | x cpu |", text)
        self.assertNotIn("TFLOP/s", text)  # no row has it
        self.assertIn("at B=8, T=4096, D=2048, W=4 (gpux-2026-01-01.csv); copy bandwidth 2991 GB/s", text)

    def test_markdown_that_disagrees_with_its_csv_is_an_error(self):
        write(os.path.join(self.results, "gpux-2026-01-01.csv"), OLD)
        write(os.path.join(self.results, "gpux-2026-01-01.md"), OLD_MD.replace("86.241", "87.241"))
        with self.assertRaises(bt.Failure) as e:
            bt.read_results(self.results)
        self.assertIn("median ms", str(e.exception))

    def test_old_header_without_markdown_formats_the_csv(self):
        write(os.path.join(self.results, "gpux-2026-01-01.csv"), OLD)
        text = self.splice("dynconv:fwd:gpu_tiled")
        self.assertIn("| gpu_tiled | f32 | 0.533 | 3024 | 101% | 0.538 | 161.9 |", text)

    def test_new_header_formats(self):
        write(os.path.join(self.results, "gpuy-2026-02-01.csv"), NEW)
        text = self.splice("dynconv:bwd:gpu_tiled")
        self.assertIn("| rung | dtype | median ms | GB/s | TFLOP/s | % of copy | % of GEMM | floor ms | x cpu |",
                      text)
        # 92.5 prints as 92%: an exact tie rounds to even, as C's printf("%.0f") does
        self.assertIn("| gpu_tiled | f32 | 1.000 | 2774 | 0.81 | 92% | 0.1% | 0.987 | 159.6 |", text)
        self.assertIn("copy bandwidth 3000 GB/s measured in the same run; bf16 GEMM 780 TFLOP/s", text)

    def test_host_copy_ceiling_is_named_for_cpu_rows(self):
        write(os.path.join(self.results, "gpuh-2026-04-01.csv"), HOST)
        text = self.splice("dynconv:fwd:cpu")
        self.assertIn("| cpu | f32 | 20.000 | 80 | 0.01 | 53% | 13.300 | 1.0 |", text)
        self.assertIn("copy bandwidth 3000 GB/s measured in the same run; host copy 150 GB/s at 16 threads in the "
                      "same run, the cpu rung's % of copy.", text)
        self.assertNotIn("host copy", self.splice("dynconv:fwd:gpu_tiled"))

    def test_host_multiply_add_rate_is_read_and_printed_nowhere(self):
        write(os.path.join(self.results, "gpuh-2026-04-01.csv"), HOST_FMA)
        text = self.splice("dynconv:fwd:cpu")
        self.assertIn("| cpu | f32 | 20.000 | 80 | 0.01 | 53% | 13.300 | 1.0 |", text)
        self.assertNotIn("402", text)
        self.assertEqual([r["cpu_gflops"] for r in bt.read_csv(os.path.join(self.results, "gpuh-2026-04-01.csv"))],
                         ["402.51", "402.51"])

    def test_empty_cells_print_as_dash_and_empty_columns_are_left_out(self):
        write(os.path.join(self.results, "none-2026-03-01.csv"), NO_GPU)
        text = self.splice("dynconv:fwd")
        self.assertIn("| rung | dtype | median ms | GB/s | TFLOP/s | x cpu |", text)
        self.assertIn("| cpu | f32 | 0.250 | 4 | 0.50 | 1.0 |", text)
        self.assertIn("copy bandwidth not measured.", text)
        self.assertEqual(bt.fmt("", 3), "-")
        self.assertEqual(bt.fmt("n/a", 1, "%"), "-")
        self.assertEqual(bt.fmt("0", 1, "%"), "0.0%")  # a 0 is a number, an empty cell is not

    def test_dash_in_one_row_of_a_shown_column(self):
        text_rows = NEW_HEAD + (
            "G,2026-04-01,c,dynconv,fwd,cpu,f32,B=1 T=8 D=8 W=4,9.0,1,2,1.0,0.1,,,,,,1.0\n"
            "G,2026-04-01,c,dynconv,fwd,gpu_naive,f32,B=1 T=8 D=8 W=4,0.1,1,2,90.0,0.2,100.0,,90.0,,0.09,90.0\n")
        write(os.path.join(self.results, "g-2026-04-01.csv"), text_rows)
        text = self.splice("dynconv:fwd")
        self.assertIn("| cpu | f32 | 9.000 | 1 | 0.10 | - | - | 1.0 |", text)
        self.assertIn("| gpu_naive | f32 | 0.100 | 90 | 0.20 | 90% | 0.090 | 90.0 |", text)

    def test_shape_filter_and_shape_column(self):
        write(os.path.join(self.results, "gpuy-2026-02-01.csv"), NEW)
        one = self.splice("dynconv:fwd:gpu_tiled:B=2 T=4096 D=2048 W=64")
        self.assertIn("| gpu_tiled | f32 | 1.234 | 2100 |", one)
        self.assertNotIn("| shape |", one)
        self.assertIn("at B=2, T=4096, D=2048, W=64 (gpuy-2026-02-01.csv)", one)

        sweep = self.splice("dynconv:fwd:gpu_tiled:B=2 T=4096")
        self.assertIn("| rung | dtype | shape | median ms |", sweep)
        self.assertIn("| gpu_tiled | f32 | W=2 | 0.047 |", sweep)
        self.assertIn("| gpu_tiled | f32 | W=64 | 1.234 |", sweep)
        self.assertIn("at B=2, T=4096, D=2048 and the W in each row", sweep)

        alternatives = self.splice("dynconv:fwd:gpu_tiled,cpu:W=2,64")
        lines = [l for l in alternatives.split("\n") if l.startswith("| gpu_tiled") or l.startswith("| cpu")]
        self.assertEqual([l.split(" | ")[0:3] for l in lines],
                         [["| gpu_tiled", "f32", "W=2"], ["| gpu_tiled", "f32", "W=64"], ["| cpu", "f32", "W=2"]])

        both = self.splice("dynconv:::B=2 T=4096 D=2048 W=2")
        self.assertIn("| pass | rung | dtype | median ms |", both)
        self.assertIn("| fwd | cpu | f32 | 10.500 |", both)

    def test_no_match_leaves_the_marker_alone(self):
        write(os.path.join(self.results, "gpuy-2026-02-01.csv"), NEW)
        path = os.path.join(self.chapters, "c.md")
        write(path, "<!-- bench:dynconv:fwd:gpu_tiled:W=3 -->\nkept\n<!-- /bench:dynconv:fwd:gpu_tiled:W=3 -->\n")
        code, err = self.run_tool()
        self.assertEqual(code, 0)
        self.assertIn("no results for bench:dynconv:fwd:gpu_tiled:W=3", err)
        self.assertIn("kept", read(path))

    def test_newest_file_with_rows_wins_and_splicing_twice_changes_nothing(self):
        write(os.path.join(self.results, "gpux-2026-01-01.csv"), OLD)
        write(os.path.join(self.results, "gpuy-2026-02-01.csv"), NEW)
        path = os.path.join(self.chapters, "c.md")
        write(path, "<!-- bench:dynconv:fwd:cpu -->\n<!-- /bench:dynconv:fwd:cpu -->\n"
                    "<!-- bench:dynconv:fwd:cpu:W=4 -->\n<!-- /bench:dynconv:fwd:cpu:W=4 -->\n")
        self.assertEqual(self.run_tool()[0], 0)
        first = read(path)
        self.assertIn("| cpu | f32 | 10.500 |", first)  # 2026-02-01 is newer
        self.assertIn("| cpu | f32 | 86.242 |", first)  # only 2026-01-01 has W=4 (no Markdown here)
        self.assertEqual(self.run_tool()[0], 0)
        self.assertEqual(read(path), first)

    def chart(self, marker=CHART, figure=CHART_SVG):
        """(chapter text, SVG text) after splicing the chart marker bench-chart:MARKER."""
        path = os.path.join(self.chapters, "c.md")
        write(path, f"before\n<!-- bench-chart:{marker} -->\n<!-- /bench-chart:{marker} -->\nafter\n")
        code, err = self.run_tool()
        self.assertEqual(code, 0, err)
        return read(path), read(os.path.join(self.chapters, "figures", figure))

    def test_chart_marker_names(self):
        self.assertEqual(bt.parse_chart_name("dynconv:::B=2 T=4096 D=2048:W"),
                         ("dynconv:::B=2 T=4096 D=2048", "W", ("dynconv", None, None, [("B", {"2"}), ("T", {"4096"}),
                                                                                       ("D", {"2048"})])))
        self.assertEqual(bt.parse_chart_name("dynconv:fwd:W"), ("dynconv:fwd", "W", ("dynconv", "fwd", None, None)))
        self.assertRaises(ValueError, bt.parse_chart_name, "dynconv")  # no x axis
        self.assertRaises(ValueError, bt.parse_chart_name, "dynconv:fwd:cpu:W=2")  # x is a shape name, not a filter
        self.assertRaises(ValueError, bt.parse_chart_name, "dynconv:sideways:W")
        self.assertEqual(bt.figure_name("dynconv:::B=2 T=4096 D=2048:W"), "bench-dynconv-B2-T4096-D2048-W.svg")
        self.assertEqual(bt.figure_name("dynconv:bwd:gpu_tiled,gpu_tensorcore:W=2,4 B=8:W"),
                         "bench-dynconv-bwd-gpu_tiled+gpu_tensorcore-W2+4-B8-W.svg")

    def test_chart_svg_and_the_lines_between_its_markers(self):
        write(os.path.join(self.results, "gpuz-2026-05-01.csv"), SWEEP)
        text, svg = self.chart()
        self.assertIn(f"<!-- bench-chart:{CHART} -->\n\n![dynconv forward and backward: % of the copy rate against W "
                      f"at B=2, T=64, D=8", text)
        self.assertIn(f"](figures/{CHART_SVG})\n\nMeasured on GPU Z on 2026-05-01 at B=2, T=64, D=8 and the W on the "
                      f"x axis (gpuz-2026-05-01.csv); copy bandwidth 3000 GB/s measured in the same run.\n\n"
                      f"<!-- /bench-chart:{CHART} -->\nafter\n", text)
        self.assertTrue(svg.startswith('<svg xmlns="http://www.w3.org/2000/svg" width="700" '))
        self.assertTrue(svg.endswith("</svg>\n"))
        # one line per (rung, dtype, pass), the backward dashed; 3 + 3 + 2 points
        lines = [l for l in svg.split("\n") if l.startswith("<polyline")]
        self.assertEqual(len(lines), 3)
        self.assertEqual([l.count(",") for l in lines], [3, 3, 2])
        self.assertEqual(["stroke-dasharray" in l for l in lines], [False, False, True])
        self.assertEqual(svg.count("<title>gpu_tiled f32 fwd W="), 3)
        self.assertIn("<title>gpu_tiled f32 bwd W=8: 30.0%</title>", svg)
        # y from 0 to 110% (the data stay under it), the copy rate and 80% dashed and labelled
        self.assertIn(">0%</text>", svg)
        self.assertIn(">100%</text>", svg)
        self.assertNotIn(">120%</text>", svg)
        self.assertIn(">copy rate (100%)</text>", svg)
        self.assertIn(">80% of copy</text>", svg)
        # x ticks at the W values, equally spaced on a log2 axis
        for w in ("2", "4", "8"):
            self.assertIn(f'text-anchor="middle">{w}</text>', svg)
        self.assertIn(">W (log2 scale)</text>", svg)
        xs = [float(l.split('x="')[1].split('"')[0]) for l in svg.split("\n")
              if l.endswith(("middle\">2</text>", "middle\">4</text>", "middle\">8</text>"))]
        self.assertEqual(len(xs), 3)
        self.assertAlmostEqual(xs[1] - xs[0], xs[2] - xs[1], places=1)
        # the legend: what solid and dashed mean, and each rung with its dtype
        self.assertIn(">forward (filled points)</text>", svg)
        self.assertIn(">backward (open points)</text>", svg)
        self.assertIn(">gpu_tiled f32</text>", svg)
        self.assertIn(">gpu_tensorcore bf16</text>", svg)

    def test_chart_skips_rows_without_a_percentage_of_copy(self):
        write(os.path.join(self.results, "gpuz-2026-05-01.csv"), SWEEP)
        _, svg = self.chart()
        self.assertNotIn("cpu", svg)  # its only row has an empty pct_of_copy
        # a newer run without a GPU leaves the chart on the older run that has the numbers
        write(os.path.join(self.results, "none-2026-06-01.csv"),
              NEW_HEAD + chart_row("fwd", "gpu_tiled", "f32", 2, "", date="2026-06-01"))
        text, _ = self.chart()
        self.assertIn("on 2026-05-01", text)
        # with no percentage anywhere, the markers are left as they are
        os.remove(os.path.join(self.results, "gpuz-2026-05-01.csv"))
        path = os.path.join(self.chapters, "c.md")
        write(path, f"<!-- bench-chart:{CHART} -->\nkept\n<!-- /bench-chart:{CHART} -->\n")
        code, err = self.run_tool()
        self.assertEqual(code, 0)
        self.assertIn(f"no results for bench-chart:{CHART}", err)
        self.assertIn("kept", read(path))

    def test_chart_y_axis_grows_past_110_and_linear_x(self):
        rows = NEW_HEAD + "".join(chart_row("fwd", "gpu_tiled", "f32", w, p) for w, p in ((1, "90"), (3, "131")))
        write(os.path.join(self.results, "gpuz-2026-05-01.csv"), rows)
        _, svg = self.chart()
        self.assertIn(">140%</text>", svg)  # ceil(131 / 10) * 10 = 140, a grid line every 20%
        self.assertIn(">W</text>", svg)  # 3 is not a power of two: a linear axis

    def test_chart_is_idempotent(self):
        write(os.path.join(self.results, "gpuz-2026-05-01.csv"), SWEEP)
        text, svg = self.chart()
        figure = os.path.join(self.chapters, "figures", CHART_SVG)
        before = os.stat(figure).st_mtime_ns
        out = io.StringIO()
        with redirect_stdout(out), redirect_stderr(io.StringIO()):
            self.assertEqual(bt.main(["bench_tables.py", self.results, self.chapters]), 0)
        self.assertIn("0 file(s) changed", out.getvalue())
        self.assertEqual(read(os.path.join(self.chapters, "c.md")), text)
        self.assertEqual(read(figure), svg)
        self.assertEqual(os.stat(figure).st_mtime_ns, before)  # not even rewritten
        # the same rows give the same bytes, whatever else happened in between
        rows = bt.chart_rows(bt.read_results(self.results)[0][3], "W", bt.parse_name("dynconv:::B=2 T=64 D=8"))
        self.assertEqual(bt.chart_svg(rows, "W", "t", "s"), bt.chart_svg(rows, "W", "t", "s"))

    def test_chart_errors(self):
        write(os.path.join(self.results, "gpuz-2026-05-01.csv"),
              SWEEP + chart_row("fwd", "gpu_tiled", "f32", 2, "50.0", shape="B=4 T=64 D=8"))
        path = os.path.join(self.chapters, "c.md")
        # B varies as well as W: the filter must fix it
        write(path, "<!-- bench-chart:dynconv:fwd:W -->\n<!-- /bench-chart:dynconv:fwd:W -->\n")
        code, err = self.run_tool()
        self.assertEqual(code, 1)
        self.assertIn("differ in B as well as in W", err)
        # two rows for one point
        write(path, f"<!-- bench-chart:{CHART} -->\n<!-- /bench-chart:{CHART} -->\n")
        write(os.path.join(self.results, "gpuz-2026-05-01.csv"), SWEEP + chart_row("bwd", "gpu_tiled", "f32", 8, "31.0"))
        code, err = self.run_tool()
        self.assertEqual(code, 1)
        self.assertIn("a second point for gpu_tiled f32 bwd at W=8", err)
        write(os.path.join(self.results, "gpuz-2026-05-01.csv"), SWEEP)
        # a chart's opening marker closed as a table's
        write(path, f"<!-- bench-chart:{CHART} -->\n<!-- /bench:{CHART} -->\n")
        code, err = self.run_tool()
        self.assertEqual(code, 1)
        self.assertIn("is not followed by", err)
        # two markers that would share one file
        write(path, "<!-- bench-chart:dynconv:::B=2 T=64 D=8:W -->\n<!-- /bench-chart:dynconv:::B=2 T=64 D=8:W -->\n"
                    "<!-- bench-chart:dynconv:::B=2  T=64 D=8:W -->\n<!-- /bench-chart:dynconv:::B=2  T=64 D=8:W -->\n")
        code, err = self.run_tool()
        self.assertEqual(code, 1, err)
        self.assertIn(f"both give figures/{CHART_SVG}", err)

    def test_bad_input(self):
        self.assertRaises(ValueError, bt.parse_name, "dynconv:sideways")
        self.assertRaises(ValueError, bt.parse_name, "dynconv:fwd:a,,b")
        self.assertRaises(ValueError, bt.parse_name, "dynconv:fwd:cpu:W")
        self.assertRaises(ValueError, bt.parse_name, "dynconv:fwd:cpu:W=4:more")
        self.assertEqual(bt.parse_name("dynconv:fwd:cpu:W=2,4 B=8"),
                         ("dynconv", "fwd", ["cpu"], [("W", {"2", "4"}), ("B", {"8"})]))
        write(os.path.join(self.results, "g-2026-01-01.csv"), "gpu,date\nx,y\n")
        with self.assertRaises(bt.Failure):
            bt.read_results(self.results)
        write(os.path.join(self.results, "g-2026-01-01.csv"), NEW_HEAD + "a,b\n")
        with self.assertRaises(bt.Failure) as e:
            bt.read_results(self.results)
        self.assertIn(":2: 2 fields", str(e.exception))
        write(os.path.join(self.results, "g-2026-01-01.csv"), NO_GPU.replace("B=1 T=64", "B=1,T=64"))
        with self.assertRaises(bt.Failure):
            bt.read_results(self.results)
        os.remove(os.path.join(self.results, "g-2026-01-01.csv"))
        write(os.path.join(self.chapters, "c.md"), "<!-- bench:dynconv -->\n")
        write(os.path.join(self.results, "gpuy-2026-02-01.csv"), NEW)
        self.assertEqual(self.run_tool()[0], 1)


    def splice_ideas(self, table, ideas):
        write(os.path.join(self.results, "ideas.csv"), IDEAS_HEAD + ideas)
        path = os.path.join(self.chapters, "c.md")
        write(path, f"before\n<!-- ideas:{table} -->\nstale\n<!-- /ideas:{table} -->\nafter\n")
        code, err = self.run_tool()
        return code, err, read(path)

    def test_ideas_table_sets_each_idea_against_the_run_without_it(self):
        write(os.path.join(self.results, "gpuv-2026-06-01.csv"), VARIANTS)
        code, err, text = self.splice_ideas(
            "t", "t,the new loop,gpuv-2026-06-01.csv@old,gpuv-2026-06-01.csv@new,pass=fwd\n")
        self.assertEqual(code, 0, err)
        self.assertIn("| idea | shape | without, ms | with, ms | speed-up |", text)
        self.assertIn("| the new loop | causal=0 | 2.0000 | 1.0000 | 2.00x |", text)
        self.assertIn("| the new loop | causal=1 | 1.2000 | 0.7500 | 1.60x |", text)
        self.assertNotIn("stale", text)
        self.assertNotIn("5.0000", text)  # the backward rows do not fit the filter
        self.assertIn("Measured on GPU V on 2026-06-01 at B=4, S=4096, D=128; each idea timed without and with it "
                      "in one lease (gpuv-2026-06-01.csv).", text)
        # the variants file is not a <gpu>-<date> run of its own for the bench markers, and ideas.csv is no run
        self.assertNotIn("ideas.csv: ignored", err)

    def test_ideas_from_two_leases_are_refused(self):
        write(os.path.join(self.results, "gpuv-2026-06-01.csv"), VARIANTS)
        write(os.path.join(self.results, "later.csv"), LATER)
        code, err, text = self.splice_ideas("t", "t,later,gpuv-2026-06-01.csv@new,later.csv,pass=fwd\n")
        self.assertEqual(code, 1)
        self.assertIn("are not one lease", err)
        self.assertIn("stale", text)

    def test_an_idea_must_match_rows(self):
        write(os.path.join(self.results, "gpuv-2026-06-01.csv"), VARIANTS)
        for ideas, why in (("t,x,gpuv-2026-06-01.csv@old,gpuv-2026-06-01.csv@new,pass=fwd causal=7\n", "fits"),
                           ("t,x,gpuv-2026-06-01.csv@gone,gpuv-2026-06-01.csv@new,pass=fwd\n", "commit 'gone'"),
                           ("t,x,missing.csv,gpuv-2026-06-01.csv@new,\n", "is not a file"),
                           ("t,x,gpuv-2026-06-01.csv@old,gpuv-2026-06-01.csv@new,pass\n", "NAME=VALUE")):
            code, err, _ = self.splice_ideas("t", ideas)
            self.assertEqual(code, 1, ideas)
            self.assertIn(why, err)
        code, err, _ = self.splice_ideas("other", "t,x,gpuv-2026-06-01.csv@old,gpuv-2026-06-01.csv@new,\n")
        self.assertEqual(code, 1)
        self.assertIn("ideas:other has no row in ideas.csv", err)


if __name__ == "__main__":
    unittest.main()
