"""ci/io-mock-test: bluestore_io_mock on a one-OSD cluster (patches/bluestore-io-mock.patch).

Needs a ceph-osd built with the patch: ci/build-debs' osd-only output, or the
directory CEPH_PERF_CANDIDATE_DEBS names. CI does not build it (an hour on 2
cores), so there the test is skipped, and says so; the patch's code is
compiled in CI by ci/patch-tests, and this test runs where the packages are
built (ci/release runs ci/io-mock-test on them).
"""
import os
import subprocess
import tempfile
import unittest
from pathlib import Path

from tests.helpers import REPO, scratch_dir
from tests.root.test_upgrade import standin_debs  # Debian's ceph-osd, re-versioned

from cephperf.common import load_pins
from cephperf.paths import debs_out


def candidate_debs() -> Path | None:
    d = Path(os.environ.get("CEPH_PERF_CANDIDATE_DEBS") or debs_out("osd-only"))
    ours = load_pins()["ours"]["version"]
    return d if list(d.glob(f"ceph-osd_{ours.split(':')[-1]}_*.deb")) else None


class IoMockTest(unittest.TestCase):
    @unittest.skipUnless(candidate_debs(), "no ceph-osd .deb of our pinned version built here "
                         "(ci/build-debs --profile osd-only, or set CEPH_PERF_CANDIDATE_DEBS)")
    def test_io_mock_is_safe(self):
        r = subprocess.run([str(REPO / "ci" / "io-mock-test"), "--debs", str(candidate_debs())],
                           capture_output=True, text=True, timeout=1500)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr[-4000:])
        for step in ("health: BLUESTORE_IO_MOCK", "reads return that many zeros",
                     "restart with the option set: refused", "restart with the option off: refused",
                     "switching the mode on is refused", "forced: the OSD comes up mocked",
                     "a snapshot's clone of a mocked object with omap: made, reads as",
                     "set in the central configuration and the [osd] section: refused",
                     "opened without its label (as a stock release would): refused"):
            self.assertIn(step, r.stderr)

    def test_a_ceph_osd_without_the_option_is_named(self):
        """Debian's stock ceph-osd has no bluestore_io_mock: the test says so and exits 1."""
        assert_stock_osd_is_named(self, "io-mock-test", "bluestore_io_mock")


def assert_stock_osd_is_named(test: unittest.TestCase, program: str, option: str) -> None:
    """ci/PROGRAM on Debian's stock ceph-osd (re-versioned as ours) exits 1 and names the missing option."""
    with tempfile.TemporaryDirectory(dir=scratch_dir()) as tmp:
        debs = standin_debs(Path(tmp), load_pins()["ours"]["version"])
        r = subprocess.run([str(REPO / "ci" / program), "--debs", str(debs), "--out", str(Path(tmp) / "report")],
                           capture_output=True, text=True, timeout=900)
    test.assertEqual(r.returncode, 1, r.stdout + r.stderr[-4000:])
    test.assertIn(f"has no {option} option", r.stderr)


if __name__ == "__main__":
    unittest.main()
