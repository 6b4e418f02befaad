"""The RBD profiles for real: fio's rbd engine against a written image of the
bench cluster, and the diagnosis that names unaligned overwrites.

Needs root and Debian's archive (the runtime root holds fio). CI's smoke of
the fio-rbd path: one short native round per side of each 4 KiB overwrite
profile, aligned and not.
"""
import json
import subprocess
import tempfile
import unittest
from pathlib import Path

from tests.helpers import REPO

from cephperf.leftovers import our_daemons, run_mounts

GATE = REPO / "bench" / "gate"
DIAGNOSE = REPO / "bench" / "diagnose"


class RbdProfilesTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="rbd-test-")
        self.tmp = Path(self._tmp.name)
        self.addCleanup(self._tmp.cleanup)

    def gate_round(self, profile: str) -> tuple[dict, str]:
        """One native 10 s round per side, stock vs stock; the report and bench/diagnose's output."""
        out = self.tmp / profile
        r = subprocess.run([str(GATE), "--baseline", "debian", "--candidate", "debian", "--profile", profile,
                            "--rounds", "1", "--seconds", "10", "--mode", "native", "--out", str(out)],
                           capture_output=True, text=True, timeout=900)
        self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr[-3000:])
        self.assertEqual(our_daemons(), [])
        self.assertEqual(run_mounts(), [])
        d = subprocess.run([str(DIAGNOSE), str(out / "report.json")], capture_output=True, text=True, timeout=60)
        return json.loads((out / "report.json").read_text()), d.stdout + d.stderr

    def check_records(self, rep: dict) -> list[float]:
        """Every round's fio numbers; the penalty reads per write of each."""
        per_write = []
        for rec in rep["records"]:
            self.assertEqual(rec["tool"], "fio-rbd")
            self.assertGreater(rec["write_ops"], 0)
            self.assertGreater(rec["iops"], 0)
            self.assertLessEqual(rec["lat_p50_s"], rec["lat_p99_s"])
            self.assertLessEqual(rec["lat_p99_s"], rec["lat_p999_s"])
            bluestore = rec["diagnostics"]["bluestore"]
            self.assertIn("write_small", bluestore)
            per_write.append(bluestore.get("write_penalty_read_ops", 0) / rec["write_ops"])
        return per_write

    def test_misaligned_overwrites_are_named_and_aligned_ones_are_not(self):
        rep, diagnosis = self.gate_round("rbd-4k-randwrite-misaligned")
        self.assertTrue(all(x > 1 for x in self.check_records(rep)), rep["records"])
        self.assertIn("unaligned overwrites", diagnosis)
        rep, diagnosis = self.gate_round("rbd-4k-randwrite")
        self.assertTrue(all(x < 0.01 for x in self.check_records(rep)), rep["records"])
        self.assertNotIn("unaligned overwrites", diagnosis)


if __name__ == "__main__":
    unittest.main()
