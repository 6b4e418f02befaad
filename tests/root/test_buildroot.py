"""ci/buildroot against the real assembled tree: cache hit, build deps, mounts always undone.

Needs root and the Debian archive; creating the root cold takes about 5 minutes.
"""
import os
import signal
import subprocess
import tempfile
import time
import unittest
from pathlib import Path

from tests.helpers import CI, run_stage

from cephperf.leftovers import run_mounts


def pids_running(argv: list[str]) -> list[int]:
    """PIDs whose command line is exactly argv."""
    want = ("\0".join(argv) + "\0").encode()
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if (d / "cmdline").read_bytes() == want:
                    found.append(int(d.name))
            except OSError:
                pass
    return found


class BuildRootTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        r = run_stage("source", timeout=900)
        if r.returncode != 0:
            raise AssertionError("ci/source failed:\n" + r.stderr[-3000:])
        cls.tree = Path(r.stdout.strip())
        r = run_stage("buildroot", "create", timeout=1800)
        if r.returncode != 0:
            raise AssertionError("ci/buildroot create failed:\n" + r.stderr[-3000:])
        cls.tarball = Path(r.stdout.strip().splitlines()[-1])

    def test_second_creation_is_a_cache_hit(self):
        mtime = self.tarball.stat().st_mtime
        t0 = time.monotonic()
        r = run_stage("buildroot", "create", timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("cache hit", r.stderr)
        self.assertEqual(self.tarball.stat().st_mtime, mtime)
        self.assertLess(time.monotonic() - t0, 120)

    def test_build_dependencies_are_met_in_the_assembled_tree(self):
        r = run_stage("buildroot", "run", "--", "dpkg-checkbuilddeps", cwd=self.tree, timeout=600)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_failure_propagates_and_mounts_are_gone(self):
        before = run_mounts()
        r = run_stage("buildroot", "run", "--", "sh", "-c", "test -e /proc/self/status && test -c /dev/null && "
                      "test -d /dev/pts && touch /tmp/x && exit 7", timeout=600)
        self.assertEqual(r.returncode, 7, r.stderr)
        self.assertEqual(run_mounts(), before)

    def test_interrupt_kills_the_command_and_unmounts(self):
        (CI.parent / "build").mkdir(exist_ok=True)  # bound inside the root at the same path
        with tempfile.TemporaryDirectory(dir=CI.parent / "build") as tmp:
            fifo = Path(tmp) / "ready"
            os.mkfifo(fifo)
            # The workload says "ready" itself, after exec: once the fifo yields, its
            # command line is final and it can be found in /proc.
            workload = ["python3", "-c", "import sys, time; f = open(sys.argv[1], 'w'); f.write('ready'); "
                        "f.close(); time.sleep(600)", str(fifo)]
            proc = subprocess.Popen([str(CI / "buildroot"), "run", "--", *workload],
                                    start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            with open(fifo) as f:  # blocks until the command inside the root has started
                self.assertEqual(f.read().strip(), "ready")
            pids = pids_running(workload)
            self.assertEqual(len(pids), 1)
            inside = Path(f"/proc/{pids[0]}/mounts").read_text()
            self.assertIn("overlay", inside, "the run sees its overlay root")
            self.assertIn("devpts", inside)
            self.assertEqual(run_mounts(), [], "the run's mounts are private: the host never sees them")
            os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
            proc.wait(timeout=120)
        self.assertEqual(run_mounts(), [])
        self.assertEqual(pids_running(workload), [], "the command inside the root must not outlive the run")


if __name__ == "__main__":
    unittest.main()
