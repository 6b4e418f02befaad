"""bench/history and results/gate/: the kept results load, a gate report.json
becomes one (the fixture is a report in bench/gate's format, its rounds made
up: 4 native and 4 counted pairs, judged by the gate's own code), the table
shows each release's own gate, and the figures README.md, patches/README.md
and docs/measurements.md give are backed by kept results."""
import copy
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

from cephperf.bench.history import FIGURE, load_results, release_number, unbacked_figures
from cephperf.bench.history_table import summary_markdown
from tests.helpers import REPO

HISTORY = REPO / "bench" / "history"
RESULTS = REPO / "results" / "gate"
FIXTURE = REPO / "tests" / "fast" / "fixtures" / "history" / "20261204T205600Z-4k-write-defaults-hdd" / "report.json"


def run(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(HISTORY), *map(str, args)], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ))


class KeptResultsTest(unittest.TestCase):
    def test_every_release_has_its_gate_figure_and_says_where_it_comes_from(self):
        results = load_results()
        numbers = {release_number(r["release"]) for r in results}
        self.assertLessEqual(set(range(3, 16)), numbers)
        # from +perf4 on, each release has its own gate's result; the release
        # debian/changelog is preparing (its top entry), and levers measured
        # toward the one after it, may have results before their release gate
        gated = {release_number(r["release"]) for r in results if r.get("role") == "release gate"}
        top = re.search(r"\+perf(\d+)\)", (REPO / "debian" / "changelog").read_text().splitlines()[0])
        in_preparation = {n for n in numbers if top and n >= int(top.group(1))}
        self.assertEqual(set(range(4, max(numbers) + 1)) - gated - in_preparation, set())
        for r in results:
            with self.subTest(file=r["_file"]):
                if release_number(r["release"]) <= 15:
                    self.assertEqual(r["layout"], "hdd")  # the only layout up to +perf15
                if r["reproduced"]:
                    self.assertTrue((REPO / r["report"]).is_file())
                else:
                    self.assertRegex(r["source"], r"^transcribed from (docs/measurements\.md|patches/README\.md) \(.+\)$")

    def test_a_bad_result_file_is_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copytree(RESULTS, Path(tmp) / "gate")
            victim = sorted((Path(tmp) / "gate" / "perf15").glob("*.json"))[0]
            res = json.loads(victim.read_text())
            del res["reproduced"]
            victim.write_text(json.dumps(res))
            r = run("--results", Path(tmp) / "gate")
            self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
            self.assertIn(f"{victim}: missing reproduced", r.stderr)
            self.assertNotIn("Traceback", r.stderr)
            victim.write_text("{")
            r = run("--results", Path(tmp) / "gate")
            self.assertEqual(r.returncode, 2)
            self.assertIn(f"{victim}: not JSON", r.stderr)


class ImportTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="history-")
        self.addCleanup(self._tmp.cleanup)
        self.tmp = Path(self._tmp.name)

    def test_a_report_becomes_a_result_and_a_row(self):
        r = run("--add", FIXTURE, "--release", "+perf16", "--release-gate", "--results", self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        kept = self.tmp / "perf16" / "2026-12-04-4k-write-defaults-hdd-vs-stock.json"
        self.assertIn(str(kept), r.stdout)
        self.assertEqual([p.name for p in self.tmp.rglob("*") if p.is_file()], [kept.name])  # no temporary left
        res, rep = json.loads(kept.read_text()), json.loads(FIXTURE.read_text())
        self.assertEqual((res["release"], res["layout"], res["mode"], res["role"], res["reproduced"]),
                         ("+perf16", "hdd", "both", "release gate", True))
        self.assertEqual(res["report"], str(FIXTURE.relative_to(REPO)))
        self.assertEqual(res["commit"], rep["environment"]["host"]["ceph_perf_commit"])
        self.assertEqual((res["baseline"]["label"], res["baseline"]["build_id"]),
                         ("stock", rep["records"][0]["versions"]["ceph-osd build ID"]))
        self.assertEqual(res["candidate"]["build_id"], "1616161616161616161616161616161616161616")
        rules = {x["metric"]: x for x in rep["judgement"]["rules"]}
        for m in res["metrics"]:
            self.assertEqual((m["ratio"], m["interval"], m["pairs"], m["verdict"]),
                             (rules[m["metric"]]["ratio"], rules[m["metric"]]["ci"], 4, "gain"))
        instr = next(m for m in res["metrics"] if m["metric"] == "osd_instructions_per_op")
        counted = {s: sorted(x["osd_instructions_per_op"] for x in rep["records"]
                             if x["side"] == s and x["mode"] == "callgrind") for s in ("baseline", "candidate")}
        self.assertEqual(instr["medians"], {s: (v[1] + v[2]) / 2 for s, v in counted.items()})
        # IOPS from the native rounds alone: under callgrind they are some 60 times lower
        iops = next(m for m in res["metrics"] if m["metric"] == "iops")
        native = {s: sorted(x["iops"] for x in rep["records"] if x["side"] == s and x["mode"] == "native")
                  for s in ("baseline", "candidate")}
        self.assertEqual(iops["medians"], {s: (v[1] + v[2]) / 2 for s, v in native.items()})
        self.assertIn("--counted-rounds 4", res["command"])
        # a second import of the same run never overwrites the first
        self.assertEqual(run("--add", FIXTURE, "--release", "+perf16", "--results", self.tmp).returncode, 0)
        self.assertTrue(kept.with_name(kept.stem + ".2.json").is_file())
        table = run("--results", self.tmp)
        self.assertEqual(table.returncode, 0, table.stderr)
        self.assertRegex(table.stdout, r"\+perf16\s+0\.6990 g\n")
        md = run("--results", self.tmp, "--release", "+perf16", "--markdown")
        self.assertIn("| hdd | 4k-write | stock |", md.stdout)
        self.assertIn("[1] report.json |", md.stdout)

    def test_a_smoke_runs_open_interval_is_kept_as_none(self):
        rep = json.loads(FIXTURE.read_text())
        for rule in rep["judgement"]["rules"]:
            rule.update(ci=[0.0, float("inf")], pairs=1, verdict="not judged: fewer than 3 pairs")
        (self.tmp / "smoke.json").write_text(json.dumps(rep))
        r = run("--add", self.tmp / "smoke.json", "--release", "+perf16", "--results", self.tmp / "out")
        self.assertEqual(r.returncode, 0, r.stderr)
        kept = next((self.tmp / "out").rglob("*.json"))

        def refuse(name):
            raise ValueError(f"{kept}: {name} is not JSON")
        res = json.loads(kept.read_text(), parse_constant=refuse)
        self.assertEqual({m["interval"] for m in res["metrics"]}, {None})

    def test_bad_inputs_are_named_and_nothing_is_written(self):
        bad = self.tmp / "in" / "bad.json"
        bad.parent.mkdir()
        for content, says in (("not json", "not a JSON report"), ('{"records": []}', "not a judged report")):
            bad.write_text(content)
            r = run("--add", bad, "--release", "+perf16", "--results", self.tmp / "out")
            self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
            self.assertIn(f"{bad}: {says}", r.stderr)
            self.assertNotIn("Traceback", r.stderr)
        # several reports: none is kept unless each reads
        r = run("--add", FIXTURE, bad, "--release", "+perf16", "--results", self.tmp / "out")
        self.assertEqual(r.returncode, 2)
        self.assertIn(f"{bad}: not a judged report", r.stderr)
        r = run("--add", FIXTURE, "--release", "perf16", "--results", self.tmp / "out")
        self.assertEqual(r.returncode, 2)
        self.assertIn("not a release name", r.stderr)
        self.assertFalse((self.tmp / "out").exists())


class TableTest(unittest.TestCase):
    def test_the_table_shows_each_releases_own_gate(self):
        r = run()
        self.assertEqual(r.returncode, 0, r.stderr)
        first = r.stdout.split("\n\n")[1]  # instructions/op against stock
        self.assertTrue(r.stdout.startswith("layout hdd: ceph-osd instructions/op, against stock"))
        rows = {line.split()[0]: line.split()[1] for line in first.splitlines()[2:]}
        # +perf14: its release gate (0.7231), not the gate of the tree's binary (0.7234) of the same day
        self.assertEqual({k: rows[k] for k in ("+perf15", "+perf14", "+perf7", "+perf3")},
                         {"+perf15": "0.7099", "+perf14": "0.7231", "+perf7": "0.8163", "+perf3": "0.9912"})
        md = run("--release", "+perf15", "--markdown")
        self.assertEqual(md.returncode, 0, md.stderr)
        self.assertIn("| hdd | 4k-write | stock | stock → +perf15 (build ID 9a8dd853f7a4…) | ceph-osd instructions/op "
                      "| 236,944 → 167,865 | 0.7099 [0.7044, 0.7154] | 5 | gain | 2026-12-02 |", md.stdout)
        self.assertEqual(run("--release", "+perf99").returncode, 2)

    def test_the_short_table_takes_each_row_from_its_own_result(self):
        results = load_results()
        text = summary_markdown(results, "+perf15")
        self.assertIn("| hdd | instructions/op | 0.7099 [0.7044, 0.7154] | 5 | gain | counted (transcribed) | [1] |", text)
        self.assertIn("| hdd | ceph-osd CPU µs/op | 0.5130 [0.4939, 0.5329] | 8 | gain | "
                      "native, cpu-upstream-io-mock (transcribed) | [2] |", text)
        self.assertIn("| hdd | replicated instructions/op (3 OSDs) | not measured | | | | |", text)
        self.assertNotIn("flash", text)
        # a three-OSD result and a flash one fill their own rows, not the one-OSD ones
        gate = next(r for r in results if r["release"] == "+perf15" and r.get("role") == "release gate")
        replicated = copy.deepcopy(gate)
        # a later day: preferred, were the rows not told apart by variant
        replicated.update(variant="three-osds", command="bench/gate --variant three-osds", date="2026-12-03")
        replicated["metrics"][0].update(ratio=0.6, interval=[0.59, 0.61], pairs=6)
        flash = copy.deepcopy(gate)
        flash.update(layout="flash", command="bench/gate --layout flash")
        text = summary_markdown([*results, replicated, flash], "+perf15")
        self.assertIn("| hdd | instructions/op | 0.7099 [0.7044, 0.7154] | 5 |", text)
        self.assertIn("| hdd | replicated instructions/op (3 OSDs) | 0.6000 [0.5900, 0.6100] | 6 | gain | "
                      "counted, three-osds (transcribed) | [2] |", text)
        self.assertIn("| flash | instructions/op | 0.7099 [0.7044, 0.7154] | 5 |", text)
        self.assertIn("[2] `bench/gate --variant three-osds`", text)
        self.assertLess(text.index("| hdd |"), text.index("| flash |"))  # bench/layouts.toml's order


class ReadmeTablesTest(unittest.TestCase):
    """A table README.md shows between `<!-- bench/history ARGS -->` and
    `<!-- end of bench/history's output -->` is that command's output now,
    from the kept results."""

    BLOCK = re.compile(r"<!-- bench/history (?P<args>[^>]*?) -->\n(?P<body>.*?)<!-- end of bench/history's output -->",
                       re.S)

    def test_readme_tables_are_the_commands_output(self):
        blocks = list(self.BLOCK.finditer((REPO / "README.md").read_text()))
        self.assertTrue(blocks, "README.md shows no bench/history table: its performance table is gone")
        for b in blocks:
            with self.subTest(args=b["args"]):
                r = run(*b["args"].split())
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(b["body"], r.stdout, f"README.md's table is not `bench/history {b['args']}`'s output")


class FiguresBackedTest(unittest.TestCase):
    """The rule: a figure is a number written with four decimals (0.7099).
    In README.md, each figure must be a ratio or an interval's bound of a
    kept result of the release named next to it: the nearest +perfN before
    it in its paragraph (the first after it, if none stands before).
    patches/README.md and docs/measurements.md by the same rule."""

    def test_readme_figures_are_kept_results(self):
        text = (REPO / "README.md").read_text()
        self.assertTrue(FIGURE.search(text), "README.md gives no figure: its performance paragraph is gone")
        self.assertEqual(unbacked_figures(text, load_results()), [])

    def test_patch_cards_figures_are_kept_results(self):
        """patches/README.md by README.md's rule: a card is one paragraph, and
        each effect names its release (+perfN, "toward +perfN" for a
        development build's) before its figures."""
        text = (REPO / "patches" / "README.md").read_text()
        self.assertTrue(FIGURE.search(text), "patches/README.md gives no figure: its effects are gone")
        self.assertEqual(unbacked_figures(text, load_results()), [])

    def test_the_rule_catches_a_figure_of_no_kept_result(self):
        results = load_results()
        text = "+perf15's gate: 0.7098 [0.7044, 0.7154].\n\n+perf14 gave 0.7099.\n\nNo release: 0.7231."
        self.assertEqual([(f, rel) for f, rel, _ in unbacked_figures(text, results)],
                         [("0.7098", "+perf15"), ("0.7099", "+perf14"), ("0.7231", None)])
        self.assertEqual(run("--check", REPO / "README.md").returncode, 0)

    def test_measurements_figures_are_kept_results(self):
        """docs/measurements.md by README.md's rule: each ratio names its
        release before it; a figure with no kept result (a per-function
        count, a time) is marked "not reproduced" and is no four-decimal ratio."""
        text = (REPO / "docs" / "measurements.md").read_text()
        self.assertTrue(FIGURE.search(text), "docs/measurements.md gives no figure: its investigations are gone")
        self.assertEqual(unbacked_figures(text, load_results()), [])


if __name__ == "__main__":
    unittest.main()
