"""ci/onode-cache-test: the onode lookup patch on a one-OSD cluster
(patches/bluestore-onode-lookup-once.patch).

Needs a ceph-osd built with the patch: ci/build-debs' osd-only output, or the
directory CEPH_PERF_CANDIDATE_DEBS names. CI does not build it (an hour on 2
cores), so there the test is skipped, and says so; the patch's code is
compiled in CI by ci/patch-tests, and this test runs where the packages are
built (ci/release runs ci/onode-cache-test on them).
"""
import subprocess
import unittest

from tests.helpers import REPO
from tests.root.test_io_mock import assert_stock_osd_is_named, candidate_debs


class OnodeCacheTest(unittest.TestCase):
    @unittest.skipUnless(candidate_debs(), "no ceph-osd .deb of our pinned version built here "
                         "(ci/build-debs --profile osd-only, or set CEPH_PERF_CANDIDATE_DEBS)")
    def test_absent_onodes_are_remembered_and_never_wrong(self):
        r = subprocess.run([str(REPO / "ci" / "onode-cache-test"), "--debs", str(candidate_debs())],
                           capture_output=True, text=True, timeout=1500)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr[-4000:])
        for step in ("cache_absent=True: 20 reads of a missing object",
                     "cache_absent=False: 20 reads of a missing object",
                     "cache_absent=False: written after a miss",
                     "absent entries switched off at run time: the entry cached before is gone",
                     "set at run time (tell, central configuration): refused",
                     "in the central configuration at the OSD's start: ignored (logged), no abort",
                     "set at start for the OSD alone: the OSD aborted in the key self-check before storing any key",
                     "after an OSD restart: all"):
            self.assertIn(step, r.stderr)

    def test_a_ceph_osd_without_the_option_is_named(self):
        """Debian's stock ceph-osd has no bluestore_onode_cache_absent: the test says so and exits 1."""
        assert_stock_osd_is_named(self, "onode-cache-test", "bluestore_onode_cache_absent")


if __name__ == "__main__":
    unittest.main()
