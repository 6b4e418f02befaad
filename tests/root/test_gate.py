"""bench/gate for real: a cluster is brought up in the runtime root each round.

Needs root and Debian's archive (the runtime root is created once, about 2 minutes).
"""
import json
import os
import signal
import subprocess
import tempfile
import textwrap
import time
import unittest
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.helpers import REPO

from cephperf.paths import runs_root
from cephperf.leftovers import our_daemons, run_mounts

GATE = REPO / "bench" / "gate"


class GateTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="gate-test-")
        self.tmp = Path(self._tmp.name)
        self.started = time.time()

    def tearDown(self):
        self._tmp.cleanup()

    def gate(self, *args, timeout=1200):
        return subprocess.run([str(GATE), *map(str, args)], capture_output=True, text=True, timeout=timeout)

    def test_both_layouts_in_one_gate(self):
        """The release gate's form: one run per layout, each judged alone. Each
        round's record says, read from the running OSD, which layout it had:
        the flash layout's OSD sees a non-rotational device and runs eight op
        shards; its loop devices are gone once the gate ends."""
        r = self.gate("--baseline", "debian", "--candidate", "debian", "--rounds", "1", "--seconds", "5",
                      "--mode", "native", "--layout", "hdd,flash", "--out", self.tmp / "out")
        self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr[-3000:])
        self.assertRegex(r.stdout.strip().splitlines()[-1], r"^gate: PASS \(2 runs, each passed\)")
        want = {"hdd": ("1", 1), "flash": ("0", 8)}
        for layout, (rotational, shards) in want.items():
            rep = json.loads((self.tmp / "out" / f"4k-write-{layout}" / "report.json").read_text())
            self.assertEqual(rep["layout"]["name"], layout)
            for rec in rep["records"]:
                seen = rec["layout"]["osds"]["osd.0"]
                self.assertEqual((seen["bluestore_bdev_rotational"], seen["op_shards"]), (rotational, shards), layout)
            self.assertIn(f"layout `{layout}`", (self.tmp / "out" / f"4k-write-{layout}" / "report.md").read_text())
        # every attached loop device names its backing file in sysfs
        attached = [f.read_text() for f in Path("/sys/block").glob("loop*/loop/backing_file")]
        self.assertFalse([f for f in attached if "block-backing-" in f], attached)

    def test_smoke_stock_vs_stock(self):
        """CI's smoke: one 10 s round per side, native and instruction-counted, the full path, stock vs stock."""
        r = self.gate("--baseline", "debian", "--candidate", "debian", "--rounds", "1", "--seconds", "10",
                      "--mode", "both", "--out", self.tmp / "out")
        self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr[-3000:])
        self.assertRegex(r.stdout.strip().splitlines()[-1], r"^gate: PASS \(not judged: 1 round\(s\) per side")
        rep = json.loads((self.tmp / "out" / "report.json").read_text())
        self.assertEqual(rep["schema_version"], 2)  # 2: paired judgement and the environment block
        native = [x for x in rep["records"] if x["mode"] == "native"]
        counted = [x for x in rep["records"] if x["mode"] == "callgrind"]
        self.assertEqual([x["side"] for x in native], ["baseline", "candidate"])
        self.assertEqual([x["side"] for x in counted], ["baseline", "candidate"])
        for rec in counted:
            # stock 18.2.7 does about 208,000 instructions per 4 KiB write op
            self.assertGreater(rec["osd_instructions_per_op"], 100_000)
            self.assertLess(rec["osd_instructions_per_op"], 1_000_000)
            self.assertGreater(rec["osd_est_cycles_per_op"], rec["osd_instructions_per_op"])
            self.assertTrue(Path(rec["callgrind_file"]).is_file())
        names = [n for n, _ in rep["functions"]["inclusive"]["baseline"]]
        self.assertTrue(any("PrimaryLogPG" in n for n in names), names)
        self.assertIn("| ceph-osd instructions/op |", (self.tmp / "out" / "report.md").read_text())
        env = rep["environment"]
        self.assertEqual(set(env["host"]), {"ceph_perf_commit", "kernel", "cpu_model", "cores"})
        self.assertEqual(env["workload"]["bench"]["block_size"], 4096)
        for side in ("baseline", "candidate"):
            self.assertRegex(env["sides"][side]["versions"]["ceph-osd"], r"^18\.2\.7")
            self.assertIn(env["sides"][side]["osd_metadata"]["bluestore_bdev_rotational"], ("0", "1"))
        # the binary that ran, by its GNU build ID: Debian's one ceph-osd on both sides here
        ids = {env["sides"][side]["versions"]["ceph-osd build ID"] for side in ("baseline", "candidate")}
        self.assertEqual(len(ids), 1, ids)
        self.assertRegex(ids.pop(), r"^[0-9a-f]{40}$")
        for rec in native:
            self.assertGreater(rec["iops"], 0)
            self.assertGreater(rec["osd_cpu_us_per_op"], 0)
            self.assertGreater(rec["osd_peak_rss_mib"], 0)
            self.assertIn("perf", rec)
            # what bench/diagnose reads: the write path's counters, threads, device use
            diag = rec["diagnostics"]
            self.assertGreater(diag["bluestore"]["txc_count"], 0)
            self.assertEqual(diag["bluestore"]["write_penalty_read_ops"], 0)  # new 4 KiB objects: aligned
            self.assertTrue(diag["threads"]["busiest"])
            self.assertLess(diag["device"]["utilization"], 0.5)
        self.assertTrue((self.tmp / "out" / "chart.svg").read_text().startswith("<svg"))
        self.assertIn("| IOPS |", (self.tmp / "out" / "report.md").read_text())
        self.assertEqual(our_daemons(), [])
        self.assertEqual(run_mounts(), [])

    def test_counted_verdicts_stock_against_itself_and_a_small_known_regression(self):
        """The real gate to a verdict, counted (4 pairs, the default): Debian's
        stock OSD against itself shows no regression, and against itself with
        the op tracker and BlueStore's log gathering off on the baseline side
        (bench/conf/small-regression.conf, about 2% fewer instructions per op)
        fails with a regression in instructions per op. The two gates run side
        by side, as ci/acceptance --lanes 2 runs them: valgrind runs all of a
        callgrind'ed OSD's threads on one core, so each has a core of its own."""
        with ThreadPoolExecutor(max_workers=2) as pool:
            same_run = pool.submit(self.gate, "--baseline", "debian", "--candidate", "debian", "--mode", "counted",
                                   "--out", self.tmp / "same", timeout=1800)
            worse_run = pool.submit(self.gate, "--baseline", "debian", "--candidate", "debian", "--mode", "counted",
                                    "--baseline-conf", REPO / "bench" / "conf" / "small-regression.conf",
                                    "--out", self.tmp / "worse", timeout=1800)
            same, worse = same_run.result(), worse_run.result()
        self.assertEqual(our_daemons(), [])
        self.assertEqual(same.returncode, 0, same.stdout[-3000:] + same.stderr[-3000:])
        rule = self.rule(self.tmp / "same", "osd_instructions_per_op")
        # The gate passes; an interval that excludes 1 by chance (5% of A/A
        # runs at 95% confidence, more beside other load) may call a tiny
        # difference a gain, never a regression.
        self.assertNotEqual(rule["verdict"], "regression")
        self.assertEqual(rule["pairs"], 4)
        self.assertLess(abs(rule["ratio"] - 1), 0.01, rule)
        self.assertEqual(worse.returncode, 1, worse.stdout[-3000:] + worse.stderr[-3000:])
        self.assertRegex(worse.stdout.strip().splitlines()[-1], r"^gate: REGRESSION")
        rule = self.rule(self.tmp / "worse", "osd_instructions_per_op")
        self.assertEqual(rule["verdict"], "regression")
        self.assertGreater(rule["ci"][0], 1.0)
        self.assertLess(rule["ratio"], 1.05)  # small: a few percent, not a broken side

    @staticmethod
    def rule(out: Path, metric: str) -> dict:
        rep = json.loads((out / "report.json").read_text())
        [rule] = [r for r in rep["judgement"]["rules"] if r["metric"] == metric]
        return rule

    def test_three_osds_one_round_per_side(self):
        """The three-OSD variant: a size-3 pool over three OSDs, one native round per side
        (its counted rounds, each OSD under a callgrind of its own, take some 4 minutes a round)."""
        r = self.gate("--baseline", "debian", "--candidate", "debian", "--variant", "three-osds", "--rounds", "1",
                      "--seconds", "5", "--mode", "native", "--out", self.tmp / "out")
        self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr[-3000:])
        self.assertIn("osd.0-2, pool size 3", r.stderr)
        rep = json.loads((self.tmp / "out" / "report.json").read_text())
        self.assertEqual([x["side"] for x in rep["records"]], ["baseline", "candidate"])
        self.assertTrue(all(x["iops"] > 0 for x in rep["records"]))
        self.assertEqual(our_daemons(), [])

    def test_a_full_osd_stops_the_gate_with_exit_2(self):
        profile = self.tmp / "tiny-4m.toml"
        profile.write_text(textwrap.dedent("""\
            description = "4 MiB writes into a device far too small for them"
            [bench]
            mode = "write"
            block_size = 4194304
            threads = 16
            seconds = 120
            [device]
            size_gib = 3
            """))
        t0 = time.monotonic()
        r = self.gate("--baseline", "debian", "--candidate", "debian", "--rounds", "1", "--profile", profile,
                      "--stall-seconds", "15", "--out", self.tmp / "out", timeout=900)
        self.assertEqual(r.returncode, 2, r.stdout[-3000:] + r.stderr[-3000:])
        last = r.stdout.strip().splitlines()[-1]
        self.assertTrue(last.startswith("gate: ERROR (could not run): round 1 (baseline)"), last)
        self.assertRegex(r.stdout, r"OSD full|OSD aborted|osd.0 died|no progress")
        self.assertLess(time.monotonic() - t0, 600)
        self.assertEqual(our_daemons(), [])
        # the failed round's logs stay for diagnosis, its device file does not
        runs = runs_root()
        self.assertEqual([p for p in runs.rglob("block")
                          if p.lstat().st_mtime >= self.started], [])

    def test_interrupt_leaves_no_process_or_mount(self):
        proc = subprocess.Popen([str(GATE), "--baseline", "debian", "--candidate", "debian", "--rounds", "1",
                                 "--seconds", "60", "--out", self.tmp / "out"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        for line in proc.stderr:  # wait until a cluster is really up
            if "cluster up" in line:
                break
        else:
            self.fail("the gate never brought a cluster up")
        self.assertTrue(our_daemons(), "the round's daemons should be running")
        os.killpg(proc.pid, signal.SIGINT)
        out, _ = proc.communicate(timeout=180)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("interrupted", out.strip().splitlines()[-1])
        self.assertEqual(our_daemons(), [])
        self.assertEqual(run_mounts(), [])


if __name__ == "__main__":
    unittest.main()
