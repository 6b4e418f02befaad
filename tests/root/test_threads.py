"""bench/threads on a real one-OSD cluster (Debian's stock packages, a short round)."""
import json
import subprocess
import tempfile
import unittest
from pathlib import Path

from tests.helpers import REPO


class ThreadsTest(unittest.TestCase):
    def test_per_thread_cpu_and_completion_counters(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = subprocess.run([str(REPO / "bench" / "threads"), "--variant", "defaults", "--seconds", "8",
                                "--out", tmp], capture_output=True, text=True, timeout=900)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr[-3000:])
            [run] = json.loads((Path(tmp) / "threads.json").read_text())["runs"]
            names = {t["name"] for t in run["threads"]["busiest"]}
            self.assertIn("bstore_kv_sync", run["threads"]["by_name"])
            self.assertTrue(names & {"tp_osd_tp", "bstore_kv_sync", "msgr-worker-0", "msgr-worker-1",
                                     "msgr-worker-2"}, names)
            for t in run["threads"]["busiest"]:
                self.assertGreaterEqual(t["cpu_percent"], 0)
            self.assertGreater(run["queues"]["bluestore.kv_sync_lat"]["count"], 0)
            self.assertIn("Busiest thread:", (Path(tmp) / "threads.md").read_text())


if __name__ == "__main__":
    unittest.main()
