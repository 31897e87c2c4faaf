#!/usr/bin/env python3
"""docs/cli.md's "From `ais` to `shale`" table: every `shale` cell names a command that exists
(`shale help PATH` exits 0 and is not just its parent's help), the table covers at least the ais paths
collected from AIStore's docs/cli/*.md, and every top-level command of `shale --help` appears in a row."""
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from harness import SHALE, SRC  # noqa: E402

MIN_AIS_ROWS = 197
SECTION = "## From `ais` to `shale`"


def table_rows():
    with open(os.path.join(SRC, "docs", "cli.md"), encoding="utf-8") as f:
        text = f.read()
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    body = text[start:end if end >= 0 else len(text)]
    rows = []
    for line in body.splitlines():
        if not line.startswith("| ") or line.startswith("| ais ") or line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3:
            raise AssertionError("row without 3 cells: %r" % line)
        rows.append(cells)
    return rows


def shale_path(cell):
    """`shale bucket ls ais://B` -> ['bucket', 'ls']; '—' -> None."""
    m = re.fullmatch(r"`shale ([^`]+)`", cell)
    if not m:
        return None
    words = [w for w in m.group(1).split() if re.fullmatch(r"[a-z][a-z0-9-]*", w)]
    return words


def help_of(words):
    r = subprocess.run([SHALE, "help"] + words, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=30)
    return r.returncode, r.stdout.decode(errors="replace")


class CliTableTest(unittest.TestCase):
    def test_rows_and_cells(self):
        rows = table_rows()
        ais_rows = [r for r in rows if r[0].startswith("`ais ")]
        self.assertGreaterEqual(len(ais_rows), MIN_AIS_ROWS, "table lost ais rows")
        for ais, shale, notes in rows:
            self.assertTrue(ais.startswith("`ais ") or ais == "—", ais)
            if shale == "—":
                self.assertTrue(notes, "%s: no shale command and no reason given" % ais)
            else:
                self.assertIsNotNone(shale_path(shale), "%s: bad shale cell %r" % (ais, shale))

    def test_every_shale_cell_exists(self):
        missing = []
        cache = {}
        for ais, shale, _ in table_rows():
            words = shale_path(shale)
            if not words:
                continue
            key = tuple(words)
            if key in cache:
                continue
            rc, out = help_of(words)
            ok = rc == 0
            if ok and len(words) > 1:
                # `shale help bucket nosuch` falls back to `shale help bucket`: not a real command
                prc, pout = help_of(words[:-1])
                ok = not (prc == 0 and pout == out)
            cache[key] = ok
            if not ok:
                missing.append("%s -> shale %s" % (ais, " ".join(words)))
        self.assertEqual(missing, [], "shale commands named in docs/cli.md that do not exist")

    def test_every_top_level_command_in_table(self):
        r = subprocess.run([SHALE, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
        self.assertEqual(r.returncode, 0)
        tops = set()
        for line in r.stdout.decode().splitlines():
            m = re.match(r"^  ([a-z][a-z0-9-]*)\s{2,}", line)
            if m:
                tops.add(m.group(1))
        self.assertGreater(len(tops), 10, "could not parse `shale --help`")
        used = set()
        for _, shale, _ in table_rows():
            words = shale_path(shale)
            if words:
                used.add(words[0])
        self.assertEqual(sorted(tops - used), [], "top-level commands missing from the table")


if __name__ == "__main__":
    unittest.main()
