"""bench/cluster up / exec / down, and recovery from a holder killed outright."""
import hashlib
import json
import os
import signal
import subprocess
import tempfile
import unittest
from pathlib import Path

from tests.helpers import REPO, scratch_dir

from cephperf.paths import cluster_state
from cephperf.leftovers import our_daemons, run_mounts

CLUSTER = REPO / "bench" / "cluster"
GATE = REPO / "bench" / "gate"
NAME = f"test-{os.getpid()}"
STATE = cluster_state(NAME)  # bench/cluster's state directory for NAME


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
            # read through `ceph tell` on every OSD (no mgr here: no osd df)
            self.assertGreater(records[0]["diagnostics"]["bluestore"]["txc_count"], 0)
        r = cluster("exec", "--name", NAME, "--", "rados", "-p", "bench", "ls")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout.split(), [], "the gate left its objects in the pool")
        r = cluster("exec", "--name", NAME, "--", "ceph", "osd", "stat")
        self.assertIn("1 osds: 1 up", r.stdout, "the existing cluster must still be up")

    def test_diagnose_an_existing_cluster_names_raised_debug_levels(self):
        self.assertEqual(cluster("up", "--name", NAME).returncode, 0)
        node = STATE / "node"
        args = [str(REPO / "bench" / "diagnose"), "--cluster", str(node / "ceph.conf"), "--keyring",
                str(node / "mon.keyring"), "--pool", "bench", "--seconds", "5"]
        r = subprocess.run(args, capture_output=True, text=True, timeout=600)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("no finding", r.stdout)
        r = cluster("exec", "--name", NAME, "--", "ceph", "tell", "osd.0", "config", "set", "debug_osd", "20/20")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = subprocess.run(args, capture_output=True, text=True, timeout=600)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("debug levels above the defaults: debug_osd (osd.0) 20/20 (default 1/5)", r.stdout)

    def test_rbd_image_create_write_read_remove(self):
        # #19: the OSD must load its object classes (cls_rbd) for rbd to work
        self.assertEqual(cluster("up", "--name", NAME).returncode, 0)
        data = os.urandom(4 << 20)
        src, dst = scratch_dir() / f"rbd-in-{NAME}", scratch_dir() / f"rbd-out-{NAME}"
        src.write_bytes(data)  # the cache is visible in the root at the same path
        try:
            for argv in (["ceph", "osd", "pool", "create", "rbd", "8", "8", "replicated"],
                         ["ceph", "osd", "pool", "set", "rbd", "size", "1", "--yes-i-really-mean-it"],
                         ["rbd", "pool", "init", "rbd"]):
                r = cluster("exec", "--name", NAME, "--", *argv, timeout=300)
                self.assertEqual(r.returncode, 0, f"{argv}: {r.stdout}{r.stderr}")
            # import creates the image and writes the 4 MiB into it
            r = cluster("exec", "--name", NAME, "--", "rbd", "import", str(src), "rbd/ceph-perf-test", timeout=300)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            r = cluster("exec", "--name", NAME, "--", "rbd", "info", "--format", "json", "rbd/ceph-perf-test")
            self.assertEqual(json.loads(r.stdout)["size"], 4 << 20, r.stderr)
            r = cluster("exec", "--name", NAME, "--", "rbd", "export", "rbd/ceph-perf-test", str(dst), timeout=300)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertEqual(hashlib.sha256(dst.read_bytes()).hexdigest(), hashlib.sha256(data).hexdigest(),
                             "the image does not read back as written")
            r = cluster("exec", "--name", NAME, "--", "rbd", "rm", "rbd/ceph-perf-test")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            r = cluster("exec", "--name", NAME, "--", "rbd", "ls", "rbd")
            self.assertEqual(r.stdout.split(), [], "the image was not removed")
        finally:
            src.unlink(missing_ok=True)
            dst.unlink(missing_ok=True)


if __name__ == "__main__":
    unittest.main()
