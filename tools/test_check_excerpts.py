#!/usr/bin/env python3
"""Self-test of tools/check_excerpts.py: standard library only, well under a second.

    python3 -m unittest discover -s tools -p 'test_check_excerpts.py'
"""

import io
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_excerpts as ce  # noqa: E402

SOURCE = "int f(int x) {\n    if (x > 0) {\n        return x;\n    }\n    return -x;\n}\n"


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


class CheckExcerptsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        os.makedirs(os.path.join(self.tmp.name, "src"))
        write(os.path.join(self.tmp.name, "src", "f.c"), SOURCE)
        self.cwd = os.getcwd()
        os.chdir(self.tmp.name)

    def tearDown(self):
        os.chdir(self.cwd)
        self.tmp.cleanup()

    def chapter(self, text):
        write("ch.md", text)
        return "ch.md"

    def test_a_true_excerpt_dedented(self):
        path = self.chapter("Text.\n\n`src/f.c`, lines 2-4:\n\n```cpp\nif (x > 0) {\n    return x;\n}\n```\n")
        self.assertEqual(ce.check(path), (1, []))

    def test_a_changed_line(self):
        path = self.chapter("`src/f.c`, lines 2-4:\n\n```cpp\nif (x >= 0) {\n    return x;\n}\n```\n")
        n, bad = ce.check(path)
        self.assertEqual(n, 1)
        self.assertIn("line 1 of the excerpt differs from src/f.c:2", bad[0])

    def test_a_moved_range(self):
        path = self.chapter("`src/f.c`, lines 3-5:\n\n```cpp\nif (x > 0) {\n    return x;\n}\n```\n")
        self.assertEqual(len(ce.check(path)[1]), 1)

    def test_missing_file_range_and_block(self):
        path = self.chapter("`src/g.c`, lines 1-2:\n\n```\nx\n```\n`src/f.c`, lines 5-99:\n\n```\nx\n```\n"
                            "`src/f.c`, lines 1-1:\n\nno block\n")
        n, bad = ce.check(path)
        self.assertEqual(n, 3)
        self.assertIn("no such file", bad[0])
        self.assertIn("the file has", bad[1])
        self.assertIn("no code block follows", bad[2])

    def test_fix_renumbers_a_moved_excerpt_only(self):
        path = self.chapter("`src/f.c`, lines 1-3:\n\n```cpp\nif (x > 0) {\n    return x;\n}\n```\n"
                            "`src/f.c`, lines 5-5:\n\n```cpp\nreturn +x;\n```\n")
        with redirect_stdout(io.StringIO()):
            n, bad = ce.check(path, fix=True)
        self.assertEqual(n, 2)
        self.assertEqual(len(bad), 1)  # the changed line is not "moved": a person refreshes it
        with open(path, encoding="utf-8") as f:
            self.assertIn("`src/f.c`, lines 2-4:", f.read())
        self.assertEqual(len(ce.check(path)[1]), 1)

    def test_main(self):
        good = self.chapter("`src/f.c`, lines 6-6:\n\n```\n}\n```\n")
        out = io.StringIO()
        with redirect_stdout(out), redirect_stderr(io.StringIO()):
            self.assertEqual(ce.main(["check_excerpts.py", good]), 0)
            self.assertEqual(ce.main(["check_excerpts.py"]), 2)
        self.assertIn("ok, 1 excerpt(s)", out.getvalue())


if __name__ == "__main__":
    unittest.main()
