"""ci/check-debian against a fixture archive (file: URIs, the host's apt
sources replaced by the fixture's): a newer revision in -security fails the
check naming both versions and the rebase steps; the pinned one passes."""
import hashlib
import subprocess
import tempfile
import textwrap
import unittest
from pathlib import Path

from tests.helpers import run_stage

from cephperf.packaging.archive import host_codename

PINNED = "18.2.7+ds-1+deb13u1"


def sources_stanza(version: str) -> str:
    debian_tar = f"ceph_{version}.debian.tar.xz"
    return textwrap.dedent(f"""\
        Package: ceph
        Binary: ceph, ceph-osd
        Version: {version}
        Maintainer: Fixture <fixture@example.org>
        Architecture: any
        Format: 3.0 (quilt)
        Directory: pool/main/c/ceph
        Files:
         00000000000000000000000000000000 1 ceph_{version}.dsc
         00000000000000000000000000000000 1 {debian_tar}
        Checksums-Sha256:
         {'0' * 64} 1 ceph_{version}.dsc
         {'1' * 64} 1 {debian_tar}

        """)


def write_suite(archive: Path, suite: str, versions: list[str]) -> None:
    """dists/SUITE with a Sources index and an (unsigned) Release over it."""
    dist = archive / "dists" / suite
    index = dist / "main" / "source" / "Sources"
    index.parent.mkdir(parents=True)
    index.write_text("".join(sources_stanza(v) for v in versions))
    data = index.read_bytes()
    (dist / "Release").write_text(
        f"Origin: fixture\nLabel: fixture\nSuite: {suite}\nCodename: {suite}\nArchitectures: amd64 source\n"
        f"Components: main\nSHA256:\n {hashlib.sha256(data).hexdigest()} {len(data)} main/source/Sources\n")


class CheckDebianTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="ceph-perf-test-")
        self.tmp = Path(self._tmp.name)
        self.addCleanup(self._tmp.cleanup)
        self.archive = self.tmp / "archive"
        etc = self.tmp / "apt-etc"
        (etc / "sources.list.d").mkdir(parents=True)
        host = host_codename()
        # the host's own release names, re-pointed at trixie by the check as real entries are
        (etc / "sources.list").write_text(f"deb [trusted=yes] file:{self.archive} {host} main\n"
                                          f"deb [trusted=yes] file:{self.archive} {host}-security main\n")
        pins = self.tmp / "pins.toml"
        pins.write_text(f'[upstream]\nversion = "18.2.7"\n[debian]\nsource = "ceph"\nsuite = "trixie"\n'
                        f'version = "{PINNED}"\n[ours]\nversion = "{PINNED}+perf3"\n'
                        f'[[files]]\nrole = "orig"\nname = "ceph_18.2.7+ds.orig.tar.xz"\nsha256 = "{"2" * 64}"\n'
                        f'topdir = "ceph-18.2.7+ds"\n'
                        f'[[files]]\nrole = "debian"\nname = "ceph_{PINNED}.debian.tar.xz"\nsha256 = "{"1" * 64}"\n')
        self.env = {"CEPH_PERF_APT_ETC": str(etc), "CEPH_PERF_PINS": str(pins),
                    "CEPH_PERF_CACHE": str(self.tmp / "cache"), "CEPH_PERF_BUILD": str(self.tmp / "build")}

    def check(self) -> subprocess.CompletedProcess:
        return run_stage("check-debian", env=self.env, timeout=120)

    def test_a_newer_security_revision_fails_naming_both_versions(self):
        write_suite(self.archive, "trixie", [PINNED])
        write_suite(self.archive, "trixie-security", [PINNED, "18.2.7+ds-1+deb13u2"])
        r = self.check()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("18.2.7+ds-1+deb13u2", r.stdout)
        self.assertIn(f"newer than our pin {PINNED}", r.stdout)
        self.assertIn('[ours] version = "18.2.7+ds-1+deb13u2+perf1"', r.stdout)
        self.assertIn("ceph_18.2.7+ds-1+deb13u2.debian.tar.xz", r.stdout)

    def test_the_pinned_revision_being_newest_passes(self):
        write_suite(self.archive, "trixie", ["18.2.7+ds-1", PINNED])
        write_suite(self.archive, "trixie-security", [PINNED])
        r = self.check()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(f"Debian's newest ceph is {PINNED}", r.stdout)

    def test_no_ceph_in_the_indexes_could_not_check(self):
        write_suite(self.archive, "trixie", [])
        write_suite(self.archive, "trixie-security", [])
        r = self.check()
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("cannot tell whether Debian has moved", r.stderr)


if __name__ == "__main__":
    unittest.main()
