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
# A run without a GPU: no ceilings measured, so those cells are empty (never 0).
NO_GPU = NEW_HEAD + (
    "none,2026-03-01,fed,dynconv,fwd,cpu,f32,B=1 T=64 D=8 W=4,0.25,1,2,4.0,0.5,,,,,,1.0\n")


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


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
        self.assertIn("at B=8, T=4096, D=2048, W=4 (commit abc); copy bandwidth 2991 GB/s", text)

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
        self.assertIn("at B=2, T=4096, D=2048, W=64 (commit def)", one)

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


if __name__ == "__main__":
    unittest.main()
