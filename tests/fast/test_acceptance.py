"""bench/acceptance with a stand-in gate: verdicts checked against expectations, and resuming."""
import json
import os
import subprocess
import tempfile
import unittest
from pathlib import Path

from tests.helpers import REPO

from cephperf.leftovers import our_daemons

ACCEPTANCE = REPO / "bench" / "acceptance"

# Stands in for bench/gate (see its docstring).
STAND_IN = Path(__file__).resolve().parent / "standins" / "gate.py"


class AcceptanceTest(unittest.TestCase):
    def setUp(self):
        if our_daemons(anywhere=True):
            # acceptance refuses to start then (tested below), and rightly so
            self.skipTest("a bench run is in progress on this machine")
        self.tmp = Path(tempfile.mkdtemp())
        self.addCleanup(subprocess.run, ["rm", "-rf", str(self.tmp)])
        self.gate = STAND_IN
        self.log = self.tmp / "calls"
        self.out = self.tmp / "out"

    def acceptance(self, mode="honest", interrupt_at=0, *extra):
        env = dict(os.environ, STAND_IN_LOG=str(self.log), STAND_IN_MODE=mode,
                   STAND_IN_INTERRUPT_AT=str(interrupt_at))
        return subprocess.run([str(ACCEPTANCE), "--runs", "2", "--gate", str(self.gate), "--out", str(self.out),
                               *extra], env=env, capture_output=True, text=True, timeout=120)

    def summary(self):
        return json.loads((self.out / "summary.json").read_text())

    def calls(self):
        return self.log.read_text().split() if self.log.exists() else []

    def test_expected_verdicts_pass(self):
        r = self.acceptance("honest")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(self.calls(), ["aa-1", "ab-1", "aa-2", "ab-2"])
        md = (self.out / "summary.md").read_text()
        self.assertIn("4 of 4 runs as expected", md)
        self.assertIn("| ab-1 | 1 | 1 |", md)
        self.assertIn("0.8 [0.75, 0.85]", md)
        # the widest of the two sides' spreads, and the A/A runs' steadiness
        self.assertIn("| 1.02 [1.015, 1.025] | 0.70% |", md)
        self.assertIn("within 1% of its side's median: 2 of 2 (widest 0.70%)", md)

    def test_a_small_known_regression_and_the_rates(self):
        small = self.tmp / "small.conf"
        small.write_text("[osd]\nosd_enable_op_tracker = false\n")
        r = self.acceptance("honest", 0, "--small-conf", small, "--mode", "both", "--regress-runs", "1")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(self.calls(), ["aa-1", "small-1", "ab-1", "aa-2", "small-2"])
        md = (self.out / "summary.md").read_text()
        self.assertIn("| A/A (must pass) | 2 | 2 of 2 |", md)
        self.assertIn("| A/B, --small-conf (must fail) | 2 | 2 of 2 |", md)
        self.assertEqual(self.summary()["plan"]["mode"], "both")

    def test_a_gate_blind_to_the_regression_fails_acceptance(self):
        r = self.acceptance("blind")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        runs = {x["name"]: x for x in self.summary()["runs"]}
        self.assertTrue(runs["aa-1"]["ok"] and runs["aa-2"]["ok"])
        self.assertFalse(runs["ab-1"]["ok"] or runs["ab-2"]["ok"])
        self.assertIn("2 of 4 runs as expected", (self.out / "summary.md").read_text())

    def test_an_interrupted_acceptance_resumes_at_its_first_missing_run(self):
        r = self.acceptance("honest", 3)
        self.assertEqual(r.returncode, 130, r.stdout + r.stderr)
        self.assertEqual([x["name"] for x in self.summary()["runs"]], ["aa-1", "ab-1"])
        r = self.acceptance("honest")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("resuming: 2 run(s) already done", r.stderr)
        # aa-2 was interrupted part-way, so it runs again whole; aa-1 and ab-1 do not
        self.assertEqual(self.calls(), ["aa-1", "ab-1", "aa-2", "aa-2", "ab-2"])
        self.assertIn("4 of 4 runs as expected", (self.out / "summary.md").read_text())

    def test_refuses_to_start_beside_a_running_bench(self):
        # a process the leftover check takes for the bench's rados: argv[0]
        # "rados" and "ceph-perf" in its arguments; it blocks on its stdin
        squatter = subprocess.Popen(["bash", "-c", 'exec -a rados python3 -c "import sys; sys.stdin.read()" ceph-perf'],
                                    stdin=subprocess.PIPE)
        self.addCleanup(squatter.wait, 30)
        self.addCleanup(squatter.kill)
        self.addCleanup(squatter.stdin.close)
        r = self.acceptance("honest")
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("bench processes are already running", r.stderr)
        self.assertIn("bench/cluster down", r.stderr)
        self.assertEqual(self.calls(), [])
        self.assertFalse((self.out / "summary.json").exists())

    def test_two_lanes_run_counted_gates_side_by_side(self):
        r = self.acceptance("honest", 0, "--lanes", "2", "--mode", "counted")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(sorted(self.calls()), ["aa-1", "aa-2", "ab-1", "ab-2"])
        runs = self.summary()["runs"]
        self.assertEqual([x["name"] for x in runs], ["aa-1", "ab-1", "aa-2", "ab-2"])
        self.assertEqual({x["side_by_side"] for x in runs}, {2})
        # each gate's output in its own log, not interleaved on the console
        self.assertTrue(all((self.out / f"{x['name']}.log").exists() for x in runs))

    def test_lanes_refused_for_wall_clock_rounds(self):
        r = self.acceptance("honest", 0, "--lanes", "2", "--mode", "both")
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("--lanes 2 is for --mode counted only", r.stderr)
        self.assertEqual(self.calls(), [])

    def test_time_limit_holds_the_default_gate_not_the_debug_20_candidate(self):
        from unittest import mock
        from cephperf.stages import acceptance
        self.out.mkdir()
        env = dict(os.environ, STAND_IN_LOG=str(self.log), STAND_IN_MODE="honest")
        batch = [("aa-1", 0, []), ("ab-1", 1, ["--candidate-conf", "x.conf"])]
        # every run over the limit: the A/A run fails acceptance, the debug-20 one does not
        with mock.patch.dict(os.environ, env), mock.patch.object(acceptance, "TIME_LIMIT_SECONDS", -1):
            runs = {r["name"]: r for r in acceptance.run_batch(self.gate, batch, self.out)}
        self.assertFalse(runs["aa-1"]["ok"])
        self.assertTrue(runs["ab-1"]["ok"])

    def test_fresh_starts_over(self):
        self.assertEqual(self.acceptance("honest").returncode, 0)
        r = self.acceptance("honest", 0, "--fresh")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(self.calls(), ["aa-1", "ab-1", "aa-2", "ab-2"] * 2)


if __name__ == "__main__":
    unittest.main()
