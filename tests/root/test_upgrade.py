"""ci/publish-repo + ci/upgrade-test: a signed repository, apt picks our
version, and an OSD's data survives the upgrade and the downgrade.

The packages are ci/build-debs' osd-only output when CEPH_PERF_UPGRADE_DEBS
names it (the acceptance run on a build machine). Otherwise, as in CI where the
hour-long build does not fit, a stand-in: Debian's own ceph-osd re-versioned
to our +perfN version, which exercises the same repository, apt pinning and
on-disk compatibility path with a real OSD binary.
"""
import os
import subprocess
import tempfile
import unittest
from pathlib import Path

from tests.helpers import REPO, scratch_dir

from cephperf import paths
from cephperf.common import load_pins
from cephperf.packaging.archive import PrivateApt
from cephperf.packaging.roots import Root
from tests.fast.test_publish_repo import fixture_deb


def run(*cmd, timeout=1800):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout)


def standin_debs(dest: Path, version: str) -> Path:
    """Debian's ceph-osd, its control Version set to `version`."""
    apt = PrivateApt("trixie", kind="deb")
    apt.update()
    [deb] = apt.download(["ceph-osd"], dest / "download")
    tree = dest / "tree"
    subprocess.run(["dpkg-deb", "-R", str(deb), str(tree)], check=True)
    control = tree / "DEBIAN" / "control"
    lines = [f"Version: {version}" if ln.startswith("Version:") else ln for ln in control.read_text().splitlines()]
    control.write_text("\n".join(lines) + "\n")
    out = dest / "debs"
    out.mkdir()
    subprocess.run(["dpkg-deb", "-Zxz", "-z1", "-b", str(tree), str(out / f"ceph-osd_{version}_amd64.deb")],
                   check=True, capture_output=True)
    return out


class UpgradeTest(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="upgrade-test-", dir=scratch_dir()))
        self.tmp.chmod(0o755)  # apt reads the repository as its _apt user

    def tearDown(self):
        subprocess.run(["rm", "-rf", str(self.tmp)])

    def publish(self, debs: Path) -> Path:
        repo = self.tmp / "repo"
        r = run(REPO / "ci" / "publish-repo", "--debs", debs, "--out", repo)
        self.assertEqual(r.returncode, 0, r.stderr)
        release = (repo / "dists" / "trixie" / "InRelease").read_text()
        self.assertIn("-----BEGIN PGP SIGNATURE-----", release)
        self.assertTrue((repo / "ceph-perf.gpg").stat().st_size > 0)
        return repo

    def test_upgrade_and_downgrade_keep_the_data(self):
        ours = load_pins()["ours"]["version"]
        debs = Path(os.environ["CEPH_PERF_UPGRADE_DEBS"]) if os.environ.get("CEPH_PERF_UPGRADE_DEBS") \
            else standin_debs(self.tmp, ours)
        repo = self.publish(debs)
        r = run(REPO / "ci" / "upgrade-test", "--repo", repo, "--out", self.tmp / "report")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr[-4000:])
        self.assertIn(f"-> {ours} ->", r.stderr)

    def test_two_publishes_keep_both_versions_and_apt_downgrades(self):
        repo = self.tmp / "repo"
        for v in ("1.0-1", "1.0-2"):
            fixture_deb(self.tmp / v, v)
            r = run(REPO / "ci" / "publish-repo", "--debs", self.tmp / v, "--out", repo)
            self.assertEqual(r.returncode, 0, r.stderr)
        out = self.tmp / "apt.log"
        with open(out, "w") as f:
            rc = Root("runtime").run(["bash", str(paths.RUNTIME / "scripts" / "apt-downgrade.sh")], binds=[self.tmp],
                                     env={"REPO": str(repo), "PACKAGE": "ceph-perf-fixture", "NEWER": "1.0-2",
                                          "OLDER": "1.0-1"}, stdout=f)
        text = out.read_text()
        self.assertEqual(rc, 0, text[-4000:])
        self.assertEqual([ln for ln in text.splitlines() if ln.startswith("installed:")],
                         ["installed: 1.0-2", "installed: 1.0-1"], text[-4000:])

    def test_a_version_below_debians_is_refused(self):
        debs = standin_debs(self.tmp, "18.2.7+ds-1")  # below 18.2.7+ds-1+deb13u1
        repo = self.publish(debs)
        r = run(REPO / "ci" / "upgrade-test", "--repo", repo, "--out", self.tmp / "report")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr[-4000:])
        self.assertIn("not a +perfN version", r.stderr)


if __name__ == "__main__":
    unittest.main()
