"""python3 -m unittest discover -s scripts/bench -p 'test_*.py'"""
import json
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

import curve
from report import parse

HERE = Path(__file__).resolve().parent
SVG_NS = "{http://www.w3.org/2000/svg}"

# Shaped like `wrk -t1 -c16 -d10s --latency` output, as scripts/bench.sh appends it.
WRK = """Running 10s test @ http://127.0.0.1:40000/articles/x
  1 threads and 16 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   {p50}  120.00us   3.10ms   90.00%
    Req/Sec    27.81k     1.20k   29.90k    71.00%
  Latency Distribution
     50%  {p50}
     75%  700.00us
     90%    1.10ms
     99%    {p99}
  276771 requests in 10.00s, 60.12MB read
Requests/sec:  {rps}
Transfer/sec:      6.01MB
"""


class CurveTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        (self.dir / "meta.json").write_text(json.dumps({"header": "# Performance\n"}))
        self.seq = 0
        # sqlite: full grid at two sizes, deep offset pages slow; postgres: one point only.
        deep_offset = {10000: ("1.20ms", "12000.00"), 1000000: ("54.00ms", "290.70")}
        for size in (1000000, 10000):
            for kind in curve.KINDS:
                for depth in curve.DEPTHS:
                    p50, rps = ("540.00us", "27677.12")
                    if kind == "offset" and depth != "first":
                        p50, rps = deep_offset[size]
                    self.run_file("sqlite", f"curve: {kind} {depth} page @ {size}", p50, "2.58ms", rps)
        self.run_file("postgres", "curve: offset last page @ 1000000", "1.20s", "2.00s", "13.20")
        self.run_file("sqlite", "GET /health", "100.00us", "400.00us", "90000.00")
        self.rows = {}
        for f in sorted(self.dir.glob("*.txt")):
            name = f.read_text().splitlines()[0].removeprefix("# route: ")
            self.rows.setdefault(name, {})[f.stem.split("__", 1)[1]] = parse(f)

    def tearDown(self):
        self.tmp.cleanup()

    def run_file(self, backend, name, p50, p99, rps):
        self.seq += 1
        path = self.dir / f"{1700000000000000000 + self.seq}__{backend}.txt"
        path.write_text(f"# route: {name}\n" + WRK.format(p50=p50, p99=p99, rps=rps))

    def test_collect(self):
        points = curve.collect(self.rows)
        self.assertEqual(list(points), ["sqlite", "postgres"])
        self.assertEqual(len(points["sqlite"]), 6)
        self.assertEqual(points["sqlite"][("offset", "last")],
                         [(10000, 1.2, 12000.0), (1000000, 54.0, 290.7)])
        self.assertEqual(points["postgres"], {("offset", "last"): [(1000000, 1200.0, 13.2)]})

    def test_svg(self):
        points = curve.collect(self.rows)
        image = curve.svg(points)
        self.assertEqual(image, curve.svg(curve.collect(self.rows)))
        root = ET.fromstring(image)
        self.assertEqual(root.tag, SVG_NS + "svg")
        allowed = {SVG_NS + t for t in ("svg", "g", "line", "polyline", "circle", "text", "rect")}
        self.assertLessEqual({e.tag for e in root.iter()}, allowed)
        self.assertEqual(len(root.findall(f".//{SVG_NS}polyline")), 6 + 1)
        texts = [e.text for e in root.iter(SVG_NS + "text")]
        for label in ("SQLite", "PostgreSQL", curve.TITLE, "rows in the table", "p50 latency (ms)",
                      "10k", "1M", "0.1", "1000"):
            self.assertIn(label, texts)
        self.assertNotIn("nan", image)

    def test_table(self):
        lines = curve.table(curve.collect(self.rows)).splitlines()
        self.assertEqual(lines[0], "| Backend | Page | 10,000 rows | 1,000,000 rows |")
        self.assertEqual(len(lines), 2 + 12)
        self.assertIn("| SQLite | offset, first page | 0.54 ms (27,677/s) | 0.54 ms (27,677/s) |", lines)
        self.assertIn("| SQLite | offset, last page | 1.20 ms (12,000/s) | 54.0 ms (291/s) |", lines)
        self.assertIn("| PostgreSQL | offset, last page | – | 1,200 ms (13/s) |", lines)
        self.assertIn("| PostgreSQL | cursor, first page | – | – |", lines)

    def run_report(self, *extra):
        return subprocess.run([sys.executable, str(HERE / "report.py"), str(self.dir), *extra],
                              capture_output=True, text=True, check=True).stdout

    def test_report(self):
        svg_path = self.dir / "pagination-curve.svg"
        md = self.run_report("--svg", str(svg_path))
        main_table, section = md.split("## Offset vs cursor as the table grows")
        self.assertIn("| GET /health |", main_table)
        self.assertNotIn("curve:", main_table)
        self.assertIn("![Page latency by depth and table size](pagination-curve.svg)", section)
        self.assertIn("| SQLite | cursor, last page |", section)
        self.assertIn("Offset pages cost O(offset)", section)
        self.assertEqual(svg_path.read_text(), curve.svg(curve.collect(self.rows)))

    def test_report_without_svg_writes_nothing(self):
        before = sorted(self.dir.iterdir())
        self.assertIn("## Offset vs cursor", self.run_report())
        self.assertEqual(sorted(self.dir.iterdir()), before)


if __name__ == "__main__":
    unittest.main()
