"""bench/gate's CPU mode for real (the cpu variant): each round pins ceph-osd
to CPU 1 and the rest to CPU 0, says so in its record, and a round that
cannot pin fails the gate instead of running unpinned.

Needs root, 2 or more CPUs and the runtime root; about 2 minutes. Like
tests/root/test_gate.py it checks that nothing of the bench is left running,
so it needs the machine's bench to itself (ctest: RUN_SERIAL).
"""
import json
import os
import subprocess
import tempfile
import unittest
from pathlib import Path

from tests.helpers import REPO

from cephperf.leftovers import our_daemons, run_mounts

GATE = REPO / "bench" / "gate"


def poll_loops() -> list[str]:
    """Idle-polling loops (cephperf/runtime/poll_idle.py) still running anywhere on the machine."""
    r = subprocess.run(["pgrep", "-af", "cephperf.runtime.poll_idle"], capture_output=True, text=True)
    return r.stdout.splitlines()


class GateCpuTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="gate-cpu-test-")
        self.tmp = Path(self._tmp.name)
        self.addCleanup(self._tmp.cleanup)

    def gate(self, *args, cpus: str | None = None, timeout=1200):
        argv = [str(GATE), "--baseline", "debian", "--candidate", "debian", "--variant", "cpu", *map(str, args)]
        # taskset -c 0: the gate and every round it runs may use one CPU only
        return subprocess.run(["taskset", "-c", cpus, *argv] if cpus else argv, capture_output=True, text=True,
                              timeout=timeout)

    @unittest.skipIf(len(os.sched_getaffinity(0)) < 2, "pinning needs 2 CPUs")
    def test_two_pinned_pairs(self):
        """Two short pairs: every round pinned as planned, judged with the CPU rules (no verdict below 3 pairs)."""
        r = self.gate("--rounds", "2", "--seconds", "5", "--out", self.tmp / "out")
        self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr[-3000:])
        self.assertIn("CPU pinning: ceph-osd on 1, mon, mgr and clients on 0", r.stderr)
        rep = json.loads((self.tmp / "out" / "report.json").read_text())
        self.assertEqual(Path(rep["rules_file"]).name, "cpu.toml")
        self.assertEqual((rep["mode"], rep["environment"]["workload"]["warmup_seconds"]), ("native", 5))
        self.assertEqual([x["side"] for x in rep["records"]], ["baseline", "candidate", "candidate", "baseline"])
        for rec in rep["records"]:
            self.assertEqual(rec["cpu_placement"], {"pinned": True,
                                                    "allowed": {"osd.0": "1", "mon.a": "0", "client": "0"},
                                                    "osd_threads_last_ran_on": {"osd.0": "1"}})
            self.assertTrue(rec["io_mock"])
            self.assertGreater(rec["osd_cpu_us_per_op"], 0)
            # the core's speed, probed on the OSD's CPU on either side of the window
            self.assertEqual(set(rec["core_probe"]), {"before", "after"})
            self.assertGreater(rec["osd_cpu_loop_units_per_op"], 0)
            self.assertGreater(rec["osd_cpu_copy_units_per_op"], 0)
            # hand-offs between the OSD's threads
            self.assertGreater(rec["osd_context_switches_per_op"]["voluntary"], 0)
            # an idle-polling loop on each CPU, running whenever its CPU had nothing else to
            self.assertEqual(set(rec["poll_idle_cpu_percent"]), {"poll-idle.0", "poll-idle.1"})
            self.assertGreater(rec["poll_idle_cpu_percent"]["poll-idle.0"], 0)
        self.assertIn("CPU placement, baseline: osd.0 on CPU 1", (self.tmp / "out" / "report.md").read_text())
        self.assertIn("idle polling on CPU(s) 0-1", r.stderr)
        self.assertEqual(our_daemons(), [])
        self.assertEqual(poll_loops(), [], "an idle-polling loop outlived its round")
        self.assertEqual(run_mounts(), [])

    def test_a_round_that_cannot_pin_fails_the_gate(self):
        r = self.gate("--rounds", "1", "--seconds", "5", "--out", self.tmp / "out", cpus="0", timeout=600)
        self.assertEqual(r.returncode, 2, r.stdout[-3000:] + r.stderr[-3000:])
        last = r.stdout.strip().splitlines()[-1]
        self.assertTrue(last.startswith("gate: ERROR (could not run): round 1 (baseline): CPU pinning asked for "
                                        "but not applied"), last)
        self.assertIn("pinning needs at least 2", r.stdout)
        self.assertEqual(our_daemons(), [])


if __name__ == "__main__":
    unittest.main()
