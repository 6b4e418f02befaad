"""Re-pointing the host's deb entries at trixie, for deb822 and one-line sources."""
import tempfile
import unittest
from pathlib import Path
from unittest import mock



from cephperf.packaging import archive


# Fixture URIs are derived from this machine's own apt sources, so that no
# mirror is ever named here; the fixtures only reshape them.
HOST_CODENAME = archive.host_codename()
HOST_URI = next(e["uri"] for e in archive.host_deb_entries() if e["suite"] == HOST_CODENAME)
SECURITY_URI = HOST_URI + "-security-fixture"
VENDOR_URI = HOST_URI + "/vendor-fixture"


class TargetEntriesTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.etc = Path(self._tmp.name)
        (self.etc / "sources.list.d").mkdir()
        self.patch = mock.patch.object(archive, "APT_ETC", self.etc)
        self.patch.start()

    def tearDown(self):
        self.patch.stop()
        self._tmp.cleanup()

    def test_deb822_main_updates_security_thirdparty(self):
        c = HOST_CODENAME
        (self.etc / "sources.list.d" / "debian.sources").write_text(
            f"Types: deb\nURIs: {HOST_URI}\nSuites: {c} {c}-updates\nComponents: main\n\n"
            f"Types: deb\nURIs: {SECURITY_URI}\nSuites: {c}-security\nComponents: main\n\n"
            f"Types: deb\nURIs: {VENDOR_URI}\nSuites: stable\nComponents: main\n\n"
            f"Enabled: no\nTypes: deb\nURIs: {VENDOR_URI}/disabled\nSuites: {c}\nComponents: main\n")
        got = [(e["uri"], e["suite"]) for e in archive.target_entries("trixie")]
        self.assertEqual(got, [(HOST_URI, "trixie"), (HOST_URI, "trixie-updates"),
                               (SECURITY_URI, "trixie-security")])
        lines = archive.sources_lines(archive.target_entries("trixie"), "deb-src").splitlines()
        self.assertEqual(len(lines), 3, lines)  # all() of no line would hold too
        self.assertTrue(all(line.startswith("deb-src ") for line in lines), lines)

    def test_one_line_format(self):
        (self.etc / "sources.list").write_text(
            f"# comment\ndeb [arch=amd64 signed-by=/k.gpg] {HOST_URI}/ {HOST_CODENAME} main contrib\n"
            f"deb-src {HOST_URI} {HOST_CODENAME} main\n")
        got = [(e["uri"], e["suite"]) for e in archive.target_entries("trixie")]
        self.assertEqual(got, [(HOST_URI, "trixie")])

    def test_no_debian_entry_is_a_clear_error(self):
        (self.etc / "sources.list").write_text(f"deb {VENDOR_URI} stable main\n")
        with self.assertRaises(archive.StageError) as cm:
            archive.target_entries("trixie")
        self.assertIn("--from DIR", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
