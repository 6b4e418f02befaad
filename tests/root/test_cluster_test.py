"""ci/cluster-test: CI's smoke of the rolling-upgrade cluster stage.

On Debian's stock ceph-osd for every OSD (--candidate debian), which must
pass: it checks the test itself. One phase (the mixed one, whose roles the
stock build plays on all three OSDs) with few ops: three OSDs, both pools,
ceph_test_rados on each with a candidate OSD killed, a split, the stock OSD
out and in, then active+clean, the deep scrub of every PG, the log scans
and fsck --deep of each store. Then a broken variant of the candidate,
which must fail the stage: Debian's ceph-osd whose OSDMaps fail their CRC
check now and then (upstream's injection), named by the "failed to encode
map" lines of the two candidate OSDs. The candidate's own full run is
ci/release's. Each run is bounded,
and the stage's state and reports go whether it passes or not.
"""
import json
import tempfile
import unittest
from pathlib import Path

from tests.helpers import run_stage, scratch_dir

from cephperf import paths
from cephperf.common import rmtree

SMOKE = ["--candidate", "debian", "--ops", "300", "--phase", "mixed"]
# one smoke run took about 100 s here on a busy machine (2026-12-04); a hung one is ended
RUN_SECONDS = 900


class ClusterTestSmoke(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.out = Path(self.tmp.name) / "report"
        self.addCleanup(self.tmp.cleanup)
        self.addCleanup(rmtree, paths.bench_state("cluster-test"))  # a failed run leaves its state

    def test_stock_osds_pass(self):
        r = run_stage("cluster-test", *SMOKE, "--out", self.out, timeout=RUN_SECONDS)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr[-4000:])
        report = json.loads((self.out / "report.json").read_text())
        self.assertTrue(report["ok"])
        up, mixed, logs, fsck = report["checks"]
        self.assertEqual(mixed["builds"], {"osd.0": "stock", "osd.1": "candidate", "osd.2": "candidate"})
        self.assertEqual(set(mixed["binaries"].values()), {"/usr/bin/ceph-osd"})
        self.assertEqual([e["do"] for e in mixed["events"]], ["kill", "split", "out", "in"])
        self.assertEqual(set(mixed["op_counts"]), {"bench", "ec"})
        self.assertNotIn("write", mixed["op_counts"]["ec"])
        self.assertIn("write", mixed["op_counts"]["bench"])
        self.assertGreater(mixed["recovery_messages"]["osd.1"]["pushes"], 0)
        self.assertGreater(mixed["recovery_messages"]["osd.0"]["backfill_messages"], 0)
        self.assertGreaterEqual(mixed["scrubbed_pgs"], 16 + 8)  # bench split to 16, ec 8
        self.assertEqual(logs["problems"], [])
        self.assertEqual([fsck[f"osd.{n}"] for n in range(3)], [0, 0, 0])
        self.assertIn("| phase mixed |", (self.out / "report.md").read_text())
        self.assertFalse((self.out / "log").exists(), "a pass keeps no logs")
        self.assertFalse(paths.bench_state("cluster-test").exists(), "a pass keeps no state")

    def test_a_candidate_whose_maps_fail_their_crc_fails_naming_the_lines(self):
        # Debian's ceph-osd with upstream's injection: now and then a map it
        # re-encodes does not match the CRC it got (what an encoding that
        # differs between builds does), and it says so in the cluster log
        candidate = Path(tempfile.mkdtemp(dir=scratch_dir()))
        self.addCleanup(rmtree, candidate)
        (candidate / "ceph-osd").write_text(
            '#!/bin/sh\nexec /usr/bin/ceph-osd --osd_inject_bad_map_crc_probability=0.3 "$@"\n')
        (candidate / "ceph-osd").chmod(0o755)
        smoke = ["--candidate", candidate, *SMOKE[2:]]
        r = run_stage("cluster-test", *smoke, "--out", self.out, timeout=RUN_SECONDS)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr[-4000:])
        self.assertIn("cluster test failed: cluster log and daemon logs: cluster log: ", r.stderr)
        self.assertRegex(r.stderr, r"osd\.[12] \(osd\.[12]\) \d+ : cluster \[WRN\] failed to encode map e\d+ "
                                   r"with expected crc")
        self.assertNotRegex(r.stderr, r"osd\.0 \(osd\.0\) \d+ : cluster \[WRN\] failed to encode", "osd.0 is stock")
        self.assertTrue((self.out / "log" / "cluster" / "ceph.log").exists(), "a failure keeps the logs")
        self.assertIn("FAIL: cluster log and daemon logs", (self.out / "report.md").read_text())


if __name__ == "__main__":
    unittest.main()
