"""ceph-fuse for real: an MDS, a CephFS and a ceph-fuse mount in the bench
cluster, fio's O_DIRECT writers on it, and nothing left mounted afterwards,
whether the round passed, failed or was interrupted.

Needs root, /dev/fuse and Debian's archive (the runtime root holds ceph-mds
and ceph-fuse). CI's smoke of the ceph-fuse path.
"""
import json
import os
import signal
import subprocess
import tempfile
import textwrap
import unittest
from pathlib import Path

from tests.helpers import REPO

from cephperf.leftovers import our_daemons, run_mounts

GATE = REPO / "bench" / "gate"


def fuse_mounts() -> list[str]:
    """ceph-fuse mounts the host can see (a round's live in its own namespace)."""
    return [line for line in Path("/proc/mounts").read_text().splitlines() if "ceph-fuse" in line]


@unittest.skipUnless(os.path.exists("/dev/fuse"), "no /dev/fuse on this machine")
class CephFuseTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="cephfs-test-")
        self.tmp = Path(self._tmp.name)
        self.addCleanup(self._tmp.cleanup)

    def nothing_left(self):
        self.assertEqual(our_daemons(), [])
        self.assertEqual(run_mounts(), [])
        self.assertEqual(fuse_mounts(), [])

    def gate(self, profile, *extra, timeout=900):
        return subprocess.run([str(GATE), "--baseline", "debian", "--candidate", "debian", "--profile", str(profile),
                               "--rounds", "1", "--out", str(self.tmp / "out"), *extra],
                              capture_output=True, text=True, timeout=timeout)

    def test_mount_write_unmount(self):
        r = self.gate("cephfs-4k-directwrite-16jobs-1file", "--seconds", "5")
        self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr[-3000:])
        self.assertIn("CephFS mounted with ceph-fuse", r.stderr)
        rep = json.loads((self.tmp / "out" / "report.json").read_text())
        self.assertEqual(rep["mode"], "native")  # the default for these profiles
        for rec in rep["records"]:
            self.assertEqual((rec["tool"], rec["jobs"], rec["files"]), ("fio-cephfs", 16, 1))
            self.assertGreater(rec["write_ops"], 0)
            # Debian's stock ceph-fuse has no such option
            self.assertEqual(rec["fuse_parallel_direct_writes"], "unknown option")
        self.nothing_left()

    def test_a_failed_round_leaves_nothing_mounted(self):
        # sixteen 512 MiB files on a 3 GiB device: the OSD fills while they are written
        profile = self.tmp / "too-big.toml"
        profile.write_text(textwrap.dedent("""\
            description = "more file data than the device holds"
            [bench]
            tool = "fio-cephfs"
            rw = "randwrite"
            block_size = 4096
            jobs = 16
            files = 16
            file_mib = 512
            seconds = 5
            [device]
            size_gib = 3
            """))
        r = self.gate(profile, "--stall-seconds", "15")
        self.assertEqual(r.returncode, 2, r.stdout[-3000:] + r.stderr[-3000:])
        self.assertIn("CephFS mounted with ceph-fuse", r.stderr)
        self.nothing_left()

    def test_an_interrupt_leaves_nothing_mounted(self):
        proc = subprocess.Popen([str(GATE), "--baseline", "debian", "--candidate", "debian", "--profile",
                                 "cephfs-4k-directwrite-1job-1file", "--rounds", "1", "--seconds", "60",
                                 "--out", str(self.tmp / "out")],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        for line in proc.stderr:  # wait until the mount is up
            if "CephFS mounted with ceph-fuse" in line:
                break
        else:
            self.fail("the gate never mounted CephFS")
        os.killpg(proc.pid, signal.SIGINT)
        out, _ = proc.communicate(timeout=180)
        self.assertEqual(proc.returncode, 2, out[-2000:])
        self.nothing_left()


if __name__ == "__main__":
    unittest.main()
