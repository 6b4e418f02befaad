"""The pins themselves: well-formed, and our version sorts above Debian's."""
import re
import subprocess
import unittest

from tests.helpers import REPO

from cephperf.common import load_pins, pinned_file


class PinsTest(unittest.TestCase):
    def setUp(self):
        self.pins = load_pins(REPO / "cmake" / "pins.toml")

    def test_our_version_sorts_above_debians(self):
        ours, debian = self.pins["ours"]["version"], self.pins["debian"]["version"]
        r = subprocess.run(["dpkg", "--compare-versions", ours, "gt", debian])
        self.assertEqual(r.returncode, 0, f"{ours} must sort above {debian}")
        self.assertRegex(ours, r"\+perf\d+$")

    def test_files_are_the_ones_debian_13_ships(self):
        self.assertEqual(pinned_file(self.pins, "orig")["name"], f"ceph_{self.pins['upstream']['version']}+ds.orig.tar.xz")
        self.assertEqual(pinned_file(self.pins, "debian")["name"], f"ceph_{self.pins['debian']['version']}.debian.tar.xz")

    def test_our_changelog_tops_at_the_pinned_version(self):
        top = subprocess.run(["dpkg-parsechangelog", "-l", REPO / "debian" / "changelog", "-S", "Version"],
                             capture_output=True, text=True).stdout.strip()
        self.assertEqual(top, self.pins["ours"]["version"])

    def test_no_mirror_host_is_written_in_the_repo(self):
        # Assembled from parts so that this file does not name one either.
        mirror = re.compile(r"\b(deb|ftp|security|snapshot|httpredir|cdn-aws)\." + "debian" + r"\.(org|net)\b")
        files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True).stdout.split()
        self.assertTrue(files)
        for f in files:
            p = REPO / f
            if p.is_file():
                m = mirror.search(p.read_text(errors="replace"))
                self.assertIsNone(m, f"{f} names a mirror host: {m and m.group(0)}")

if __name__ == "__main__":
    unittest.main()
