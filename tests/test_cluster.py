"""bench/cluster up / exec / down, and recovery from a holder killed outright."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from tests.helpers import REPO

sys.path.insert(0, str(REPO / "ci" / "lib"))
from cephperf.common import cache_dir  # noqa: E402
from cephperf.leftovers import our_daemons, run_mounts  # noqa: E402

CLUSTER = REPO / "bench" / "cluster"
GATE = REPO / "bench" / "gate"
NAME = f"test-{os.getpid()}"
STATE = cache_dir() / "bench" / "clusters" / NAME  # bench/cluster's state directory for NAME


def cluster(*args, timeout=900):
    return subprocess.run([str(CLUSTER), *args], capture_output=True, text=True, timeout=timeout)


class ClusterTest(unittest.TestCase):
    def tearDown(self):
        cluster("down", "--name", NAME)

    def test_up_exec_down(self):
        r = cluster("up", "--name", NAME, "--packages", "debian")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = cluster("exec", "--name", NAME, "--", "ceph", "osd", "stat")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("1 osds: 1 up", r.stdout)
        self.assertEqual(cluster("up", "--name", NAME).returncode, 2, "a second up must refuse")
        r = cluster("down", "--name", NAME)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(cluster("status", "--name", NAME).returncode, 1)
        self.assertEqual(our_daemons(), [])
        self.assertEqual(run_mounts(), [])

    def test_up_recovers_after_the_holder_was_killed(self):
        self.assertEqual(cluster("up", "--name", NAME).returncode, 0)
        pid = int((STATE / "holder.pid").read_text())
        os.kill(pid, signal.SIGKILL)  # a crash: no cleanup code runs in the holder
        r = cluster("up", "--name", NAME)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("clearing what an earlier run", r.stderr)
        self.assertEqual(cluster("exec", "--name", NAME, "--", "ceph", "health").returncode, 0)

    def test_gate_measures_an_existing_cluster_and_removes_its_objects(self):
        # #4 item 5: `bench/gate --cluster` brings nothing up; here the
        # existing cluster is one of bench/cluster's (auth none: any keyring)
        self.assertEqual(cluster("up", "--name", NAME).returncode, 0)
        node = STATE / "node"
        with tempfile.TemporaryDirectory() as out:
            r = subprocess.run([str(GATE), "--cluster", str(node / "ceph.conf"), "--keyring", str(node / "mon.keyring"),
                                "--pool", "bench", "--rounds", "1", "--seconds", "5", "--out", out],
                               capture_output=True, text=True, timeout=600)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("gate: MEASURED 1 round(s)", r.stdout)
            records = json.loads((Path(out) / "report.json").read_text())["records"]
            self.assertEqual(len(records), 1)
            self.assertGreater(records[0]["iops"], 0)
        r = cluster("exec", "--name", NAME, "--", "rados", "-p", "bench", "ls")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout.split(), [], "the gate left its objects in the pool")
        r = cluster("exec", "--name", NAME, "--", "ceph", "osd", "stat")
        self.assertIn("1 osds: 1 up", r.stdout, "the existing cluster must still be up")


if __name__ == "__main__":
    unittest.main()
