"""ci/publish-repo keeps history: two publishes of different versions leave
both in the signed index, a version republished with other bytes is refused,
the newest --keep versions stay, and a .changes is included whole.
Fixture packages are made with dpkg-deb; signing uses the throwaway key."""
import hashlib
import subprocess
import tempfile
import textwrap
import unittest
from pathlib import Path

from tests.helpers import run_stage


def fixture_deb(dest: Path, version: str, payload: str = "") -> Path:
    tree = dest / f"tree-{version}"
    (tree / "DEBIAN").mkdir(parents=True)
    (tree / "DEBIAN" / "control").write_text(
        f"Package: ceph-perf-fixture\nVersion: {version}\nArchitecture: amd64\n"
        f"Maintainer: Fixture <fixture@example.org>\nDescription: publish-repo fixture\n")
    if payload:
        (tree / "usr" / "share").mkdir(parents=True)
        (tree / "usr" / "share" / "ceph-perf-fixture").write_text(payload)
    dest.mkdir(parents=True, exist_ok=True)
    deb = dest / f"ceph-perf-fixture_{version}_amd64.deb"
    subprocess.run(["dpkg-deb", "--root-owner-group", "-b", str(tree), str(deb)], check=True, capture_output=True)
    subprocess.run(["rm", "-rf", str(tree)])
    return deb


def fixture_changes(dest: Path, version: str) -> Path:
    """A binary .changes over one fixture .deb and a .buildinfo, as dpkg-genchanges writes it."""
    deb = fixture_deb(dest, version)
    buildinfo = dest / f"ceph-perf-fixture_{version}_amd64.buildinfo"
    buildinfo.write_text(f"Format: 1.0\nSource: ceph-perf-fixture\nVersion: {version}\n")
    files = [deb, buildinfo]

    def lines(algo):
        return "".join(f" {hashlib.new(algo, f.read_bytes()).hexdigest()} {f.stat().st_size} {f.name}\n" for f in files)
    changes = dest / f"ceph-perf-fixture_{version}_amd64.changes"
    changes.write_text(textwrap.dedent(f"""\
        Format: 1.8
        Date: Sat, 21 Nov 2026 00:00:00 +0000
        Source: ceph-perf-fixture
        Binary: ceph-perf-fixture
        Architecture: amd64
        Version: {version}
        Distribution: trixie
        Urgency: medium
        Maintainer: Fixture <fixture@example.org>
        Description:
         ceph-perf-fixture - publish-repo fixture
        Changes:
         ceph-perf-fixture ({version}) trixie; urgency=medium
        """) + "Checksums-Sha1:\n" + lines("sha1") + "Checksums-Sha256:\n" + lines("sha256")
        + "Files:\n" + "".join(f" {hashlib.md5(f.read_bytes()).hexdigest()} {f.stat().st_size} misc optional {f.name}\n"
                               for f in files))
    return changes


class PublishRepoTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # A cache of the tests' own: unsigned runs make a throwaway key (and
        # start a gpg-agent) in the cache, and the persistent one is not theirs
        # to write. One for the class: the key takes seconds to make.
        cls._cache = tempfile.TemporaryDirectory(prefix="ceph-perf-test-cache-")
        cls.cache = Path(cls._cache.name)
        cls.addClassCleanup(cls._cache.cleanup)
        cls.addClassCleanup(subprocess.run, ["gpgconf", "--homedir", str(cls.cache / "throwaway-gnupg"),
                                             "--kill", "gpg-agent"], capture_output=True)

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="ceph-perf-test-")
        self.addCleanup(self._tmp.cleanup)
        self.tmp = Path(self._tmp.name)
        self.out = self.tmp / "repo"

    def publish(self, inputs: Path, *extra) -> subprocess.CompletedProcess:
        return run_stage("publish-repo", "--debs", inputs, "--out", self.out, *extra, timeout=300,
                         env={"CEPH_PERF_CACHE": str(self.cache)})

    def index(self) -> str:
        return (self.out / "dists" / "trixie" / "main" / "binary-amd64" / "Packages").read_text()

    def versions(self) -> list[str]:
        return sorted(line.split()[1] for line in self.index().splitlines() if line.startswith("Version:"))

    def test_two_versions_in_a_row_both_stay(self):
        for v in ("1.0-1", "1.0-2"):
            fixture_deb(self.tmp / v, v)
            r = self.publish(self.tmp / v)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(self.versions(), ["1.0-1", "1.0-2"])
        self.assertIn("-----BEGIN PGP SIGNATURE-----", (self.out / "dists" / "trixie" / "InRelease").read_text())
        self.assertTrue((self.out / "ceph-perf.gpg").stat().st_size > 0)
        self.assertIn(f"file:{self.out} trixie main", (self.out / "apt-line.txt").read_text())

    def test_the_same_version_with_other_bytes_is_refused(self):
        fixture_deb(self.tmp / "a", "1.0-1")
        self.assertEqual(self.publish(self.tmp / "a").returncode, 0)
        fixture_deb(self.tmp / "b", "1.0-1", payload="other bytes\n")
        r = self.publish(self.tmp / "b")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(f"{self.tmp / 'b' / 'ceph-perf-fixture_1.0-1_amd64.deb'}: already published with other contents",
                      r.stderr)
        self.assertEqual(self.versions(), ["1.0-1"])
        # the same bytes again are no change at all
        self.assertEqual(self.publish(self.tmp / "a").returncode, 0)

    def test_only_the_newest_keep_versions_stay(self):
        for v in ("1.0-1", "1.0-10", "1.0-2"):
            fixture_deb(self.tmp / v, v)
            r = self.publish(self.tmp / v, "--keep", "2")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(self.versions(), ["1.0-10", "1.0-2"])  # dpkg's order: -10 is the newest
        pool = {p.name for p in self.out.rglob("*.deb")}
        self.assertEqual(pool, {"ceph-perf-fixture_1.0-10_amd64.deb", "ceph-perf-fixture_1.0-2_amd64.deb"})

    def test_a_changes_file_is_included_with_its_buildinfo(self):
        fixture_changes(self.tmp / "c", "2.0-1")
        r = self.publish(self.tmp / "c")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(self.versions(), ["2.0-1"])
        self.assertTrue((self.out / "buildinfo" / "ceph-perf-fixture_2.0-1_amd64.buildinfo").exists())
        # the input directory is left as it was
        self.assertTrue((self.tmp / "c" / "ceph-perf-fixture_2.0-1_amd64.deb").exists())


if __name__ == "__main__":
    unittest.main()
