"""bench/logging-cost with a stand-in gate: one counted run per subsystem that
gathers at its default level, its conf on the candidate side, a summary that
orders the subsystems by their share, and resuming."""
import json
import os
import subprocess
import tempfile
import unittest
from pathlib import Path

from tests.helpers import REPO

STAND_IN = Path(__file__).resolve().parent / "standins" / "gate.py"
SHOW_CONFIG = "debug_osd = 1/5\ndebug_ms = 0/0\ndebug_rocksdb = 4/5\ndebug_asok = 1/5\nosd_op_num_shards = 0\n"
# What the stand-in gate's candidate does with each subsystem's logs at 0/0:
# osd's cost 1% of the instructions per op, rocksdb's 3%, all of them 5%.
EFFECTS = {"debug_osd = 0/0": {"osd_instructions_per_op": 0.99},
           "debug_rocksdb = 0/0": {"osd_instructions_per_op": 0.97},
           "debug_* = 0/0": {"osd_instructions_per_op": 0.95}}
# As the gate judges the stand-in's 4 pairs (tests/fast/test_acceptance.py
# works them out): the ratio times e^-0.0038977 = 0.996110 to
# e^0.0038977 = 1.003905, so osd 0.99 [0.986149, 0.993866] and rocksdb
# 0.97 [0.966227, 0.973788], both below 1: gains, shares 1.0% and 3.0%;
# and all 0.95 [0.946304, 0.953710].


class LoggingCostTest(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = Path(tmp.name)
        (self.tmp / "show-config").write_text(SHOW_CONFIG)
        self.log = self.tmp / "calls"

    def run_it(self, *extra) -> subprocess.CompletedProcess:
        env = dict(os.environ, STAND_IN_LOG=str(self.log), STAND_IN_MODE="honest",
                   STAND_IN_EFFECTS=json.dumps(EFFECTS))
        return subprocess.run([str(REPO / "bench" / "logging-cost"), "--gate", str(STAND_IN), "--defaults",
                               str(self.tmp / "show-config"), "--out", str(self.tmp / "out"), *extra],
                              env=env, capture_output=True, text=True, timeout=120)

    def test_one_run_per_gathering_subsystem_with_its_conf(self):
        r = self.run_it("--subsystems", "osd,ms,rocksdb")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(self.log.read_text().split(), ["osd", "rocksdb"])  # ms gathers nothing
        self.assertEqual((self.tmp / "out" / "rocksdb.conf").read_text(), "[global]\ndebug_rocksdb = 0/0\n")
        md = (self.tmp / "out" / "summary.md").read_text()
        rows = [line for line in md.splitlines() if line.startswith(("| osd ", "| rocksdb "))]
        # the largest share first, though osd ran first
        self.assertEqual(rows, ["| rocksdb | 4/5 | 0.9700 [0.9662, 0.9738] | 3.0% | gain |",
                                "| osd | 1/5 | 0.9900 [0.9861, 0.9939] | 1.0% | gain |"])
        # resuming: nothing runs again
        self.assertEqual(self.run_it("--subsystems", "osd,ms,rocksdb").returncode, 0)
        self.assertEqual(self.log.read_text().split(), ["osd", "rocksdb"])

    def test_all_by_name_is_the_every_subsystem_run_alone(self):
        r = self.run_it("--subsystems", "all")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(self.log.read_text().split(), ["all"])
        # the node expands the wildcard to every subsystem its ceph knows (cephperf/runtime/cluster.py)
        self.assertEqual((self.tmp / "out" / "all.conf").read_text(), "[global]\ndebug_* = 0/0\n")
        self.assertIn("| all | - | 0.9500 [0.9463, 0.9537] | 5.0% | gain |",
                      (self.tmp / "out" / "summary.md").read_text())

    def test_an_unknown_subsystem_is_named(self):
        r = self.run_it("--subsystems", "osd,nosuch")
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("debug_nosuch: no such option", r.stderr)


if __name__ == "__main__":
    unittest.main()
