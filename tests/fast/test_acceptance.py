"""bench/acceptance with a stand-in gate: verdicts checked against expectations, and resuming."""
import json
import os
import subprocess
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from tests.helpers import REPO

ACCEPTANCE = REPO / "bench" / "acceptance"

# Stands in for bench/gate (see its docstring): made-up rounds, the gate's own judging.
STAND_IN = Path(__file__).resolve().parent / "standins" / "gate.py"
# What the stand-in's rounds make of the conf lines below: the regression
# (on the candidate side) costs IOPS, CPU and instructions; the small one (on
# the baseline side) makes the baseline do 2% fewer instructions per op.
EFFECTS = {"debug_osd = 20/20": {"iops": 0.8, "osd_cpu_us_per_op": 1.25, "osd_instructions_per_op": 1.02},
           "osd_enable_op_tracker = false": {"osd_instructions_per_op": 0.98}}
# The stand-in's rounds, as the gate judges them (4 pairs, hand-computed):
#   each pair's log ratio is ln(factor) + OWN = ln(factor) + (0.001, -0.002, 0.003, -0.002):
#   mean ln(factor); sample SD sqrt(18e-6 / 3) = 0.0024495; se 0.0012247;
#   95% half-width t(0.975, 3) * se = 3.182446 * 0.0012247 = 0.0038977, a factor of
#   e^-0.0038977 = 0.996110 to e^0.0038977 = 1.003905 around the ratio, so
#   IOPS 0.8 [0.796888, 0.803124], CPU/op 1.25 [1.245137, 1.254882],
#   instructions/op 1.02 [1.016032, 1.023983] (acceptance rounds them to 4 places)
#   and the A/A runs 1.0 [0.996110, 1.003905].
#   Widest counted round from its side's median: the baseline's rounds are
#   e^(0.004, -0.004, 0, 0): median 1, widest e^0.004 - 1 = 0.40%; the
#   candidate's e^(0.005, -0.006, 0.003, -0.002) times the factor: median
#   (e^-0.002 + e^0.003) / 2 = 1.0005033, widest 1 - e^-0.006 / 1.0005033 = 0.65%.
# bench/acceptance refuses to start beside a running bench, and counts a bench
# process it finds after a run as left behind. In a PID namespace of its own,
# with a /proc that shows only that namespace, it sees only what a test starts
# there: another gate or cluster on this machine neither stops nor fails these tests.
PRIVATE_PIDS = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child",
                *([] if os.geteuid() == 0 else ["--map-root-user"])]
# A process the leftover check takes for the bench's rados: argv[0] "rados"
# and "ceph-perf" in its arguments. It sleeps until its namespace ends.
SQUATTER = 'bash -c \'exec -a rados python3 -c "import time; time.sleep(600)" ceph-perf\''


class AcceptanceTest(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp())
        self.addCleanup(subprocess.run, ["rm", "-rf", str(self.tmp)])
        self.gate = STAND_IN
        self.log = self.tmp / "calls"
        self.out = self.tmp / "out"
        self.regress = self.tmp / "regress.conf"
        self.regress.write_text("[osd]\ndebug_osd = 20/20\n")

    def env(self, mode: str, interrupt_at: int = 0) -> dict:
        return dict(os.environ, STAND_IN_LOG=str(self.log), STAND_IN_MODE=mode,
                    STAND_IN_INTERRUPT_AT=str(interrupt_at), STAND_IN_EFFECTS=json.dumps(EFFECTS))

    def acceptance(self, mode="honest", interrupt_at=0, *extra, beside: str = ""):
        """bench/acceptance in a PID namespace of its own, with `beside` (a
        shell command) started there first and running once it has exec'd."""
        cmd = [str(ACCEPTANCE), "--runs", "2", "--gate", str(self.gate), "--out", str(self.out),
               "--regress-conf", str(self.regress), *map(str, extra)]
        if beside:
            cmd = ["bash", "-c", f'{beside} & until grep -qa "^rados" /proc/$!/cmdline; do sleep 0.05; done; '
                   'exec "$@"', "bash", *cmd]
        return subprocess.run([*PRIVATE_PIDS, *cmd], env=self.env(mode, interrupt_at), capture_output=True,
                              text=True, timeout=120)

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
        # the gate's ratios and intervals (see EFFECTS), the wider side's spread, nothing left behind
        self.assertIn("| ab-1 | 1 | 1 | 0.0 | 0.8 [0.7969, 0.8031] | 1.25 [1.2451, 1.2549] | 1.02 [1.016, 1.024] "
                      "| 0.65% | nothing |", md)
        self.assertIn("| aa-2 | 0 | 0 | 0.0 | 1.0 [0.9961, 1.0039] | 1.0 [0.9961, 1.0039] | 1.0 [0.9961, 1.0039] "
                      "| 0.65% | nothing |", md)
        self.assertIn("within 1% of its side's median: 2 of 2 (widest 0.65%)", md)

    def test_a_small_known_regression_and_the_rates(self):
        small = self.tmp / "small.conf"
        small.write_text("[osd]\nosd_enable_op_tracker = false\n")
        r = self.acceptance("honest", 0, "--small-conf", small, "--mode", "both", "--regress-runs", "1")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(self.calls(), ["aa-1", "small-1", "ab-1", "aa-2", "small-2"])
        md = (self.out / "summary.md").read_text()
        self.assertIn("| A/A (must pass) | 2 | 2 of 2 |", md)
        self.assertIn("| A/B, --small-conf (must fail) | 2 | 2 of 2 |", md)
        # on the baseline side, 0.98 of its instructions: the candidate's ratio 1 / 0.98, the IOPS untouched
        small = next(x for x in self.summary()["runs"] if x["name"] == "small-1")["ratios"]
        self.assertEqual((small["osd_instructions_per_op"]["ratio"], small["osd_instructions_per_op"]["ci"]),
                         (1.0204, [1.0164, 1.0244]))
        self.assertAlmostEqual(small["osd_instructions_per_op"]["spread"], 0.006482, places=6)
        self.assertEqual(small["iops"]["ci"], [0.9961, 1.0039])
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
        r = self.acceptance("honest", beside=SQUATTER)
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
        from cephperf.stages import acceptance
        self.out.mkdir()
        batch = [("aa-1", 0, []), ("ab-1", 1, ["--candidate-conf", str(self.regress)])]
        # every run over the limit: the A/A run fails acceptance, the debug-20 one does not. In
        # this process the leftover check would see the machine's other benches: not this test's.
        with mock.patch.dict(os.environ, self.env("honest")), \
                mock.patch.object(acceptance, "TIME_LIMIT_SECONDS", -1), \
                mock.patch.object(acceptance, "leftovers", return_value=[]):
            runs = {r["name"]: r for r in acceptance.run_batch(self.gate, batch, self.out)}
        self.assertEqual((runs["aa-1"]["exit"], runs["ab-1"]["exit"]), (0, 1))
        self.assertFalse(runs["aa-1"]["ok"])
        self.assertTrue(runs["ab-1"]["ok"])

    def test_fresh_starts_over(self):
        self.assertEqual(self.acceptance("honest").returncode, 0)
        r = self.acceptance("honest", 0, "--fresh")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(self.calls(), ["aa-1", "ab-1", "aa-2", "ab-2"] * 2)


if __name__ == "__main__":
    unittest.main()
