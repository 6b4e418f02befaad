"""ci/upstream-standalone's pure parts: the TEST_ functions of a script as
upstream's run() lists them, the ceph-osd wrapper's reading of the OSD id
(cephperf/runtime/scripts/osd-by-id.sh, run with stand-in binaries), the
list file's checks, and the judgement of a candidate against stock."""
import os
import subprocess
import tempfile
import textwrap
import unittest
from pathlib import Path

from tests.helpers import REPO

from cephperf.common import StageError
from cephperf.standalone import (FAIL, KNOWN, PASS, UNJUDGED, exit_code, judge, load_list, mixed_note, select,
                                 test_functions)
from cephperf.standalone_report import NOT_RUN, markdown, script_seconds, verdicts

WRAPPER = REPO / "cephperf" / "runtime" / "scripts" / "osd-by-id.sh"

SCRIPT = textwrap.dedent("""\
    source $CEPH_ROOT/qa/standalone/ceph-helpers.sh
    function run() {
        local funcs=${@:-$(set | sed -n -e 's/^\\(TEST_[0-9a-z_]*\\) .*/\\1/p')}
    }
    function TEST_first() {
        TEST_second $dir
    }
    TEST_second() {
        :
    }
    function TEST_third_3 {
        :
    }
    function TEST_Uppercase() {
        :
    }
    # function TEST_commented_out() {
    function setup_osds() {
        :
    }
      function TEST_indented () {
        :
    }
    main name "$@"
    """)
EXPECTED = ["TEST_first", "TEST_second", "TEST_third_3", "TEST_indented"]

LIST = textwrap.dedent("""\
    [[script]]
    path = "osd/a.sh"
    test_seconds = 60
    covers = "replicated reads"

    [[known_stock_failure]]
    script = "osd/a.sh"
    test = "TEST_second"
    cause = "two expected cluster-log lines missing on stock"
    """)


class TestFunctionsTest(unittest.TestCase):
    def test_the_functions_upstreams_run_would_list(self):
        self.assertEqual(test_functions(SCRIPT), EXPECTED)

    def test_bash_lists_the_same_with_upstreams_own_pipeline(self):
        with tempfile.TemporaryDirectory() as tmp:
            body = SCRIPT.replace("source $CEPH_ROOT/qa/standalone/ceph-helpers.sh\n", "").replace('main name "$@"\n', "")
            Path(tmp, "s.sh").write_text(body)
            r = subprocess.run(["bash", "-c", "source ./s.sh; set | sed -n -e 's/^\\(TEST_[0-9a-z_]*\\) .*/\\1/p'"],
                               cwd=tmp, capture_output=True, text=True, check=True)
        self.assertEqual(sorted(r.stdout.split()), sorted(EXPECTED))


def wrapper(tmp: Path, rule: str, *args: str, libs: str = "") -> tuple[int, str, str]:
    """Run the wrapper with stand-ins for both builds; (exit, what ran, the call log)."""
    for build in ("stock", "candidate"):
        stand_in = tmp / f"{build}-osd"
        stand_in.write_text(f'#!/bin/sh\necho "{build} LIBS=$LD_LIBRARY_PATH ARGS=$*"\n')
        stand_in.chmod(0o755)
    calls = tmp / "calls.log"
    calls.unlink(missing_ok=True)
    env = {"PATH": os.environ["PATH"], "CEPH_PERF_OSD_RULE": rule, "CEPH_PERF_STOCK_OSD": str(tmp / "stock-osd"),
           "CEPH_PERF_CANDIDATE_OSD": str(tmp / "candidate-osd"), "CEPH_PERF_CANDIDATE_LIBS": libs,
           "CEPH_PERF_OSD_LOG": str(calls)}
    r = subprocess.run(["bash", str(WRAPPER), *args], env=env, capture_output=True, text=True, timeout=30)
    return r.returncode, r.stdout.strip() + r.stderr.strip(), calls.read_text().strip() if calls.exists() else ""


class WrapperTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = Path(self._tmp.name)
        self.addCleanup(self._tmp.cleanup)

    def test_mixed_runs_stock_for_even_ids_and_the_candidate_for_odd_ones(self):
        cases = [(["-i", "0"], "0", "stock"), (["-i", "3"], "3", "candidate"), (["-i=4"], "4", "stock"),
                 (["--id", "5"], "5", "candidate"), (["--id=6"], "6", "stock"), (["--user", "7"], "7", "candidate"),
                 (["--name", "osd.8"], "8", "stock"), (["-n", "osd.9"], "9", "candidate"),
                 (["--name=osd.11"], "11", "candidate"), (["-n=osd.12"], "12", "stock"),
                 # the last id given wins, as in Ceph's own parsing; nothing after -- is an option
                 (["-i", "1", "--id", "2"], "2", "stock"), (["-i", "1", "--", "-i", "2"], "1", "candidate"),
                 # a call naming no OSD runs the build of even ids
                 (["--version"], "none", "stock")]
        for args, osd, build in cases:
            with self.subTest(args=args):
                rc, ran, calls = wrapper(self.tmp, "mixed", *args, "--osd-data=x")
                self.assertEqual(rc, 0, ran)
                self.assertEqual(ran, f"{build} LIBS= ARGS={' '.join(args)} --osd-data=x")
                self.assertEqual(calls, f"{osd} {build} run")

    def test_mkfs_goes_by_the_id_too_and_is_noted(self):
        rc, ran, calls = wrapper(self.tmp, "mixed", "-i", "1", "--mkfs", "--key", "K", "--osd-uuid", "U")
        self.assertEqual((rc, calls), (0, "1 candidate mkfs"))
        self.assertTrue(ran.startswith("candidate "), ran)
        rc, ran, calls = wrapper(self.tmp, "mixed", "-i", "2", "--mkfs")
        self.assertEqual((rc, calls), (0, "2 stock mkfs"))

    def test_candidate_mode_runs_the_candidate_for_every_id_with_its_libraries(self):
        for osd in ("0", "1", "2"):
            rc, ran, calls = wrapper(self.tmp, "candidate", "-i", osd, libs="/opt/lib")
            self.assertEqual((rc, calls), (0, f"{osd} candidate run"))
            self.assertEqual(ran, f"candidate LIBS=/opt/lib ARGS=-i {osd}")

    def test_an_unknown_rule_is_refused(self):
        rc, ran, calls = wrapper(self.tmp, "", "-i", "1")
        self.assertEqual(rc, 2)
        self.assertIn("CEPH_PERF_OSD_RULE must be mixed or candidate", ran)


def result(text: str, seconds: float = 10) -> dict:
    return {"result": text, "seconds": seconds}


class JudgeTest(unittest.TestCase):
    def test_a_test_stock_passes_must_pass(self):
        self.assertEqual(judge(result("passed"), result("passed"), None), PASS)
        self.assertEqual(judge(result("passed"), result("failed (exit 1)"), None), FAIL)
        self.assertEqual(judge(result("passed"), result("timeout (stopped after 60 s)"), None), FAIL)
        self.assertEqual(judge(result("passed"), result(NOT_RUN), None), FAIL)

    def test_a_known_stock_failure_is_never_a_pass(self):
        for other in (result("passed"), result("failed (exit 1)"), None):
            self.assertEqual(judge(result("failed (exit 1)"), other, "a cause"), KNOWN)
        self.assertEqual(exit_code([PASS, KNOWN, KNOWN], stock_only=False), 0)

    def test_a_stock_failure_not_listed_is_not_judged(self):
        self.assertEqual(judge(result("failed (exit 1)"), result("passed"), None), UNJUDGED)
        self.assertEqual(exit_code([PASS, UNJUDGED], stock_only=False), 2)
        self.assertEqual(exit_code([PASS, UNJUDGED], stock_only=True), 1)
        self.assertEqual(exit_code([FAIL, UNJUDGED], stock_only=False), 1)

    def test_the_report_rows(self):
        tests = [{"id": f"osd/a/{t}", "script": "osd/a.sh", "test": t, "limit_seconds": 60}
                 for t in ("TEST_first", "TEST_second", "TEST_third")]
        results = {"stock": {"osd/a/TEST_first": result("passed", 100), "osd/a/TEST_second": result("failed (exit 1)", 50),
                             "osd/a/TEST_third": result("passed", 30)},
                   "mixed": {"osd/a/TEST_first": {**result("passed", 110),
                                                  "osd_calls": {"stock": {"run": ["0", "2"]}, "candidate": {"run": ["1"]}}},
                             "osd/a/TEST_third": result("failed (exit 1)", 20)}}
        rows = verdicts(tests, results, ["mixed"], {("osd/a.sh", "TEST_second"): "two lines missing"})
        self.assertEqual([r["verdicts"] for r in rows],
                         [{"stock": PASS, "mixed": PASS}, {"stock": KNOWN, "mixed": KNOWN}, {"stock": PASS, "mixed": FAIL}])
        self.assertEqual(rows[1]["results"]["mixed"]["result"], NOT_RUN)
        self.assertIn("mixed: stock: osd 0, 2; candidate: osd 1", rows[0]["notes"])
        self.assertEqual(script_seconds(rows), {"osd/a.sh": {"stock": 180, "mixed": 130}})
        text = markdown({"verdict": "fail", "modes": ["stock", "mixed"], "tree": "T", "list": "L", "wall_seconds": 1,
                         "versions": {}, "candidate": None, "script_seconds": script_seconds(rows), "tests": rows})
        self.assertIn("| osd/a/TEST_third | passed, 30 s | **FAIL**: failed (exit 1), 20 s | fail |", text)
        self.assertIn("- osd/a/TEST_second: two lines missing", text)

    def test_a_candidate_run_that_started_no_candidate_osd_is_noted(self):
        tests = [{"id": "osd/a/TEST_first", "script": "osd/a.sh", "test": "TEST_first", "limit_seconds": 60}]
        results = {"stock": {"osd/a/TEST_first": result("passed")},
                   "candidate": {"osd/a/TEST_first": {**result("passed"), "osd_calls": {}}}}
        (row,) = verdicts(tests, results, ["candidate"], {})
        self.assertIn("candidate: no OSD started through the wrapper (the test ran stock's or none)", row["notes"])

    def test_mixed_notes_say_when_no_mixed_cluster_ran(self):
        self.assertEqual(mixed_note({"stock": {"run": ["0"]}}), "stock: osd 0; candidate: osd none (not a mixed cluster)")
        self.assertEqual(mixed_note({}), "no OSD started through the wrapper")


class ListTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = Path(self._tmp.name)
        self.addCleanup(self._tmp.cleanup)
        (self.tmp / "qa" / "osd").mkdir(parents=True)
        (self.tmp / "qa" / "osd" / "a.sh").write_text(SCRIPT)
        self.path = self.tmp / "list.toml"

    def load(self, text: str) -> dict:
        self.path.write_text(text)
        return load_list(self.path)

    def test_the_release_list_loads(self):
        data = load_list(REPO / "cmake" / "upstream-standalone.toml")
        self.assertGreaterEqual(len(data["script"]), 4)

    def test_selection_and_bounds(self):
        tests = select(self.load(LIST), self.path, self.tmp / "qa", [], None)
        self.assertEqual([t["test"] for t in tests], EXPECTED)
        self.assertEqual(tests[0], {"id": "osd/a/TEST_first", "script": "osd/a.sh", "test": "TEST_first",
                                    "limit_seconds": 60})
        self.assertEqual([t["test"] for t in select(self.load(LIST), self.path, self.tmp / "qa", ["osd/a.sh"],
                                                    "TEST_t*:TEST_first")], ["TEST_first", "TEST_third_3"])

    def test_faults_name_the_file_on_one_line(self):
        faults = [LIST.replace("test_seconds = 60", "test_seconds = 0"), LIST.replace('cause = "two expected cluster-log lines missing on stock"', 'cause = "?"'),
                  LIST.replace('test = "TEST_second"', 'test = "TEST_nowhere"'), LIST + "[other]\n",
                  LIST.replace('path = "osd/a.sh"', 'path = "../a.sh"')]
        for text in faults:
            with self.subTest(text=text), self.assertRaises(StageError) as e:
                select(self.load(text), self.path, self.tmp / "qa", [], None)
            self.assertTrue(str(e.exception).startswith(f"{self.path}: "), str(e.exception))
            self.assertEqual(e.exception.code, 2)
            self.assertNotIn("\n", str(e.exception))


if __name__ == "__main__":
    unittest.main()
