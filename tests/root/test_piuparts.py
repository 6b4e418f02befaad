"""ci/piuparts on real packages, in the piuparts root over Debian's archive.

Debian's ceph-fuse repacked above Debian's version must pass both of
piuparts' tests, the upgrade a real one from Debian's version; the same repack with a postrm that
exits 1 on purge must fail, naming the test and the phase, and keep
piuparts' log. Each run is bounded: past its time it is interrupted
(SIGTERM: the stage stops its root run and removes piuparts' chroot), then
killed; the test's files and any chroot directory a killed run left go
afterwards, whatever happened.
"""
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from tests.helpers import CI, scratch_dir

from cephperf.common import load_pins
from cephperf.packaging import piuparts

# Debian's whole osd-only set (`ci/piuparts --stock`: ceph-osd-dbg alone is
# 650 MB) passed in 670 s beside an LTO build (2026-12-04): by hand and in
# the release, not here, where CI's time goes to the failing case.
# ceph-fuse alone: both tests in 130 to 270 s there; the broken one fails at its first purge
FUSE_SECONDS = 900
# inserted after the postrm's `set -e`
FAIL_ON_PURGE = 'if [ "$1" = purge ]; then echo "postrm: purge fails on purpose" >&2; exit 1; fi\n'


def bounded(argv: list, seconds: int) -> subprocess.CompletedProcess:
    """Run argv; past `seconds`, SIGTERM (the stage cleans up), then SIGKILL."""
    # the stage's own Python, so that the signal reaches it (not an interpreter shim)
    proc = subprocess.Popen([sys.executable, *map(str, argv)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        out, err = proc.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        raise AssertionError(f"{argv[0]} ran past {seconds} s:\n{err[-4000:]}")
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def repacked_fuse(stock: Path, dest: Path, version: str, broken: bool) -> Path:
    """Debian's ceph-fuse at `version`; when broken, its postrm exits 1 on purge."""
    [deb] = stock.glob("ceph-fuse_*.deb")
    tree = dest / "tree"
    subprocess.run(["dpkg-deb", "-R", str(deb), str(tree)], check=True)
    control = tree / "DEBIAN" / "control"
    control.write_text("".join(f"Version: {version}\n" if line.startswith("Version:") else line
                               for line in control.read_text().splitlines(True)))
    if broken:
        postrm = tree / "DEBIAN" / "postrm"
        text = postrm.read_text()
        assert "set -e\n" in text, text
        postrm.write_text(text.replace("set -e\n", "set -e\n" + FAIL_ON_PURGE, 1))
    out = dest / "debs"
    out.mkdir()
    subprocess.run(["dpkg-deb", "-Zxz", "-z1", "-b", str(tree), str(out / f"ceph-fuse_{version}_amd64.deb")],
                   check=True, capture_output=True)
    shutil.rmtree(tree)
    return out


class PiupartsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="piuparts-test-", dir=scratch_dir()))
        self.addCleanup(piuparts.remove_stale_tmpdirs, scratch_dir())
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.out = self.tmp / "report"
        self.debian = load_pins()["debian"]["version"]

    def report(self) -> dict:
        self.assertTrue((self.out / "piuparts.log").stat().st_size > 0)
        self.assertTrue((self.out / "report.md").exists())
        return json.loads((self.out / "report.json").read_text())

    def fuse(self, broken: bool) -> tuple[Path, str]:
        stock = piuparts.stock_debs(self.debian, ["ceph-fuse"])
        version = f"{self.debian}+perf0"
        return repacked_fuse(stock, self.tmp, version, broken), version

    def test_ceph_fuse_upgraded_from_debians_passes(self):
        """The control of the broken package below: the same repack, its postrm intact."""
        debs, version = self.fuse(broken=False)
        r = bounded([CI / "piuparts", "--debs", debs, "--packages", "ceph-fuse", "--out", self.out], FUSE_SECONDS)
        self.assertEqual(r.returncode, 0, r.stderr[-4000:])
        self.assertEqual(self.report()["passed"], ["install and purge", "install, upgrade and purge"])
        log = (self.out / "piuparts.log").read_text()
        self.assertIn(f"Unpacking ceph-fuse ({version}) over ({self.debian})", log)

    def test_a_postrm_failing_on_purge_fails_naming_the_phase(self):
        debs, version = self.fuse(broken=True)
        r = bounded([CI / "piuparts", "--debs", debs, "--packages", "ceph-fuse", "--out", self.out], FUSE_SECONDS)
        self.assertEqual(r.returncode, 1, r.stderr[-4000:])
        self.assertIn("failed: the install and purge test, phase purge:", r.stderr)
        self.assertIn("dpkg --purge ceph-fuse failed (status=1)", r.stderr)
        self.assertIn("postrm: purge fails on purpose", r.stderr)
        report = self.report()
        self.assertEqual((report["verdict"], report["phase"]), ("fail", "purge"))
        self.assertEqual(report["packages"], [{"package": "ceph-fuse", "version": version,
                                               "file": f"ceph-fuse_{version}_amd64.deb"}])


if __name__ == "__main__":
    unittest.main()
