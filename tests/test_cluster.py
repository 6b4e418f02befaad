"""bench/cluster up / exec / down, and recovery from a holder killed outright."""
import os
import signal
import subprocess
import sys
import unittest

from tests.helpers import REPO

sys.path.insert(0, str(REPO / "ci" / "lib"))
from cephperf.common import cache_dir  # noqa: E402
from cephperf.leftovers import our_daemons, run_mounts  # noqa: E402

CLUSTER = REPO / "bench" / "cluster"
NAME = f"test-{os.getpid()}"


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
        state = cache_dir() / "bench" / "clusters"
        pid = int((state / NAME / "holder.pid").read_text())
        os.kill(pid, signal.SIGKILL)  # a crash: no cleanup code runs in the holder
        r = cluster("up", "--name", NAME)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("clearing what an earlier run", r.stderr)
        self.assertEqual(cluster("exec", "--name", NAME, "--", "ceph", "health").returncode, 0)


if __name__ == "__main__":
    unittest.main()
