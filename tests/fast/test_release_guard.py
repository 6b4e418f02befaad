"""cmake/release-guard.cmake, injected as CMAKE_PROJECT_ceph_INCLUDE, on a tiny project named ceph."""
import subprocess
import tempfile
import unittest
from pathlib import Path

from tests.helpers import REPO

GUARD = REPO / "cmake" / "release-guard.cmake"


class ReleaseGuardTest(unittest.TestCase):
    def configure(self, *args):
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "src"
            src.mkdir()
            (src / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.16)\nproject(ceph NONE)\n")
            return subprocess.run(["cmake", "-S", src, "-B", Path(tmp) / "b",
                                   f"-DCMAKE_PROJECT_ceph_INCLUDE={GUARD}", *args],
                                  capture_output=True, text=True, timeout=120)

    def test_relwithdebinfo_passes(self):
        r = self.configure("-DCMAKE_BUILD_TYPE=RelWithDebInfo")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("ceph-perf release guard: CMAKE_BUILD_TYPE=RelWithDebInfo", r.stdout)

    def test_debhelper_none_fails_clearly(self):
        r = self.configure("-DCMAKE_BUILD_TYPE=None")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("a release must be configured with -DCMAKE_BUILD_TYPE=RelWithDebInfo, got CMAKE_BUILD_TYPE=None",
                      " ".join(r.stderr.split()))

    def test_no_build_type_fails(self):
        r = self.configure()
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("got no CMAKE_BUILD_TYPE", " ".join(r.stderr.split()))

    def test_last_build_type_on_the_command_line_wins(self):
        # dh_auto_configure passes None first; our rules append RelWithDebInfo after it.
        r = self.configure("-DCMAKE_BUILD_TYPE=None", "-DCMAKE_BUILD_TYPE=RelWithDebInfo")
        self.assertEqual(r.returncode, 0, r.stderr)


if __name__ == "__main__":
    unittest.main()
