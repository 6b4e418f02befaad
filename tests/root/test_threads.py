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
            busiest = run["threads"]["busiest"]
            # the busiest first, and each thread within the one core it can use
            # (a clock tick of slack: CPU times count in 10 ms ticks)
            self.assertEqual(busiest, sorted(busiest, key=lambda t: -t["cpu_seconds"]))
            self.assertGreater(busiest[0]["cpu_percent"], 1, busiest[0])
            self.assertLessEqual(busiest[0]["cpu_percent"], 101, busiest[0])
            # the threads' shares add up to the OSD's CPU over the same window
            # (less the threads that ended within it, and each share's rounding)
            seconds = run["threads"]["seconds"]
            threads_cpu = sum(g["cpu_percent"] for g in run["threads"]["by_name"].values()) * seconds / 100
            osd_cpu = run["osd_cpu_seconds"]
            self.assertAlmostEqual(threads_cpu, osd_cpu, delta=0.1 * osd_cpu + 0.3,
                                   msg=f"threads {threads_cpu:.2f} s, the OSD {osd_cpu} s over {seconds} s")
            self.assertGreater(run["queues"]["bluestore.kv_sync_lat"]["count"], 0)
            self.assertIn("Busiest thread:", (Path(tmp) / "threads.md").read_text())


if __name__ == "__main__":
    unittest.main()
