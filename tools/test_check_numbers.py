#!/usr/bin/env python3
"""Self-test of tools/check_numbers.py: standard library only, well under a second.

    python3 -m unittest discover -s tools -p 'test_check_numbers.py'
    python3 tools/test_check_numbers.py
"""

import io
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_numbers as cn  # noqa: E402

RESULTS = {
    "gpu-2026-01-01.csv": "gpu,date,median_ms,pct_of_copy\nX,2026-01-01,0.5234,96.0\n",
    "gpu-2026-01-01.md": "| rung | median ms | % of copy |\n|---|--:|--:|\n| tiled | 0.523 | 96% |\n",
    "gpu-2026-01-01-notes-topic.md": "The walk took 1,380 ms of 13 us and went from 4.562 to 3.256 ms, 80% of copy;\n"
                                     "W = 64 at 7.5 and 0.25 GB/s.\n",
    "chart.svg": "<svg><text>7.77 ms</text></svg>\n",
}


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


class CheckNumbersTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.results = os.path.join(self.tmp.name, "results")
        os.makedirs(self.results)
        for name, text in RESULTS.items():
            write(os.path.join(self.results, name), text)
        self.record = cn.recorded(self.results)

    def tearDown(self):
        self.tmp.cleanup()

    def chapter(self, text, name="ch.md"):
        path = os.path.join(self.tmp.name, name)
        write(path, text)
        return path

    def run_main(self, *args):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = cn.main(["check_numbers.py", *args])
        return code, out.getvalue(), err.getvalue()

    def test_figures_with_units(self):
        path = self.chapter("It took 0.523 ms, 96% of copy, at 2991 GB/s and 780 TFLOP/s, 1.6 GHz, 13 µs, 5 us.\n")
        found = [(fig, digits) for _, fig, digits, _, _ in cn.figures(path)]
        self.assertEqual(found, [("0.523 ms", "0.523"), ("96%", "96"), ("2991 GB/s", "2991"),
                                 ("780 TFLOP/s", "780"), ("1.6 GHz", "1.6"), ("13 µs", "13"), ("5 us", "5")])

    def test_not_figures(self):
        # no unit, a unit that is part of a word, exponents, names and counts
        path = self.chapter("W = 64, 1e-5, 2^-9, 8 msgs, 16 usable, sm_90, 0.81 GB, 4 bytes, commit 1ad4a6b\n")
        self.assertEqual(cn.figures(path), [])

    def test_chained_numbers_share_the_unit(self):
        path = self.chapter("from 0.152 to 0.127 ms, (2.675 and 1.631 ms), 97 → 149 TFLOP/s, 3 against 4 ms\n")
        digits = [d for _, _, d, _, _ in cn.figures(path)]
        self.assertEqual(sorted(digits), sorted(["0.152", "0.127", "2.675", "1.631", "97", "149", "3", "4"]))

    def test_figure_over_a_line_break(self):
        path = self.chapter("first line\nit took 0.527\nms in all\n")
        self.assertEqual([(n, d) for n, _, d, _, _ in cn.figures(path)], [(2, "0.527")])

    def test_spliced_blocks_are_skipped(self):
        text = ("<!-- bench:dynconv:fwd -->\n| 0.111 ms | 12% |\n<!-- /bench:dynconv:fwd -->\n"
                "<!-- bench-chart:dynconv:::B=2:W -->\n0.222 ms\n<!-- /bench-chart:dynconv:::B=2:W -->\n"
                "<!-- ideas:flash-hopper -->\n| 0.444 ms | 1.50x |\n<!-- /ideas:flash-hopper -->\n"
                "after: 0.333 ms\n")
        path = self.chapter(text)
        self.assertEqual([(n, d) for n, _, d, _, _ in cn.figures(path)], [(10, "0.333")])

    def test_traced_with_its_unit_or_in_a_table(self):
        path = self.chapter("4.562 ms\n3.256 ms\n80%\n13 µs\n0.25 GB/s\n7.5 ms\n80 ms\n4.562%\n96.0%\n")
        n, bad = cn.check(path, self.record)
        self.assertEqual(n, 9)
        # 7.5 has no unit in the notes and is in no table; 80 is recorded as a %, not as ms; 4.562 as ms, not %;
        # 96.0 is a CSV cell (its column names the unit)
        self.assertEqual([b.split(":")[1] for b in bad], ["6", "7", "8"])

    def test_traced_only_as_written(self):
        path = self.chapter("0.523 ms\n96%\n1,380 ms\n3.256 ms\n0.52 ms\n0.5234 ms\n7.77 ms\n4.562 ms\n")
        n, bad = cn.check(path, self.record)
        self.assertEqual(n, 8)
        # 0.52 is not written anywhere; 0.5234 is in the CSV; an SVG is not read
        self.assertEqual([b.split(":")[1] for b in bad], ["5", "7"])
        self.assertIn("'0.52 ms'", bad[0])
        self.assertIn("'7.77 ms'", bad[1])

    def test_main_reports_per_file_and_fails(self):
        good = self.chapter("0.523 ms\n", "good.md")
        bad = self.chapter("9.99 ms\n", "bad.md")
        code, out, _ = self.run_main(self.results, good, bad)
        self.assertEqual(code, 1)
        self.assertIn("good.md: ok, 1 figure(s) traced", out)
        self.assertIn("bad.md: FAIL, 1 of 1 figure(s) untraced", out)
        self.assertIn("bad.md:1: '9.99 ms'", out)

    def test_pending_file_reports_without_failing(self):
        good = self.chapter("0.523 ms\n", "good.md")
        bad = self.chapter("9.99 ms\n", "bad.md")
        code, out, _ = self.run_main("--pending", bad, self.results, good, bad)
        self.assertEqual(code, 0)
        self.assertIn("bad.md: pending", out)
        self.assertIn("bad.md:1: '9.99 ms'", out)

    def test_usage(self):
        code, _, err = self.run_main(self.results)
        self.assertEqual(code, 2)
        code, _, err = self.run_main(self.results, os.path.join(self.tmp.name, "missing.md"))
        self.assertEqual(code, 2)
        self.assertIn("no such file", err)


if __name__ == "__main__":
    unittest.main()
