"""Re-pointing the host's deb entries at trixie, for deb822 and one-line sources."""
import os
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from tests.helpers import REPO

sys.path.insert(0, str(REPO / "ci" / "lib"))
from cephperf import archive  # noqa: E402


class TargetEntriesTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.etc = Path(self._tmp.name)
        (self.etc / "sources.list.d").mkdir()
        self.patches = [mock.patch.object(archive, "APT_ETC", self.etc),
                        mock.patch.object(archive, "host_codename", lambda: "bookworm")]
        for p in self.patches:
            p.start()

    def tearDown(self):
        for p in self.patches:
            p.stop()
        self._tmp.cleanup()

    def test_deb822_main_updates_security_thirdparty(self):
        (self.etc / "sources.list.d" / "debian.sources").write_text(
            "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\n"
            "Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\nComponents: main\n\n"
            "Types: deb\nURIs: http://vendor.example/apt\nSuites: stable\nComponents: main\n\n"
            "Enabled: no\nTypes: deb\nURIs: http://disabled.example/debian\nSuites: bookworm\nComponents: main\n")
        got = [(e["uri"], e["suite"]) for e in archive.target_entries("trixie")]
        self.assertEqual(got, [("http://mirror.example/debian", "trixie"),
                               ("http://mirror.example/debian", "trixie-updates"),
                               ("http://mirror.example/debian-security", "trixie-security")])
        lines = archive.sources_lines(archive.target_entries("trixie"), "deb-src")
        self.assertTrue(all(line.startswith("deb-src ") for line in lines.splitlines()))

    def test_one_line_format(self):
        (self.etc / "sources.list").write_text(
            "# comment\ndeb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian/ bookworm main contrib\n"
            "deb-src http://mirror.example/debian bookworm main\n")
        got = [(e["uri"], e["suite"]) for e in archive.target_entries("trixie")]
        self.assertEqual(got, [("http://mirror.example/debian", "trixie")])

    def test_no_debian_entry_is_a_clear_error(self):
        (self.etc / "sources.list").write_text("deb http://vendor.example/apt stable main\n")
        with self.assertRaises(archive.StageError) as cm:
            archive.target_entries("trixie")
        self.assertIn("--from DIR", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
