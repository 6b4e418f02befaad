"""cmake/lto-link-exceptions.cmake, injected as CMAKE_PROJECT_INCLUDE, on a tiny
project named ceph whose tools are defined in a subdirectory, as Ceph's are."""
import subprocess
import tempfile
import unittest
from pathlib import Path

from tests.helpers import REPO

EXCEPTIONS = REPO / "cmake" / "lto-link-exceptions.cmake"

TOP = """cmake_minimum_required(VERSION 3.19)
project(ceph C)
add_subdirectory(tools)
"""
# A nested project() as well: the include runs for it too and must not act twice.
TOOLS = """project(tools C)
add_executable(ceph-osd main.c)
add_executable(ceph-osdomap-tool main.c)
"""


class LtoLinkExceptionsTest(unittest.TestCase):
    def configure(self, top=TOP):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        src, build = Path(self.tmp.name) / "src", Path(self.tmp.name) / "b"
        (src / "tools").mkdir(parents=True)
        (src / "CMakeLists.txt").write_text(top)
        (src / "tools" / "CMakeLists.txt").write_text(TOOLS)
        (src / "tools" / "main.c").write_text("int main(void) { return 0; }\n")
        r = subprocess.run(["cmake", "-S", src, "-B", build, "-G", "Unix Makefiles",
                            "-DCMAKE_C_FLAGS=-flto=auto -ffat-lto-objects",
                            f"-DCMAKE_PROJECT_INCLUDE={EXCEPTIONS}"],
                           capture_output=True, text=True, timeout=120)
        return r, build / "tools" / "CMakeFiles"

    def link_command(self, dirs, target):
        return (dirs / f"{target}.dir" / "link.txt").read_text()

    def test_osdomap_tool_links_without_lto_and_last(self):
        r, dirs = self.configure()
        self.assertEqual(r.returncode, 0, r.stderr)
        cmd = self.link_command(dirs, "ceph-osdomap-tool").split()
        self.assertEqual(cmd.count("-fno-lto"), 1, cmd)
        # The driver takes the last of -flto / -fno-lto.
        self.assertGreater(cmd.index("-fno-lto"), cmd.index("-flto=auto"), cmd)
        self.assertIn("ceph-osdomap-tool is linked without LTO", r.stdout)

    def test_ceph_osd_keeps_lto(self):
        r, dirs = self.configure()
        self.assertEqual(r.returncode, 0, r.stderr)
        cmd = self.link_command(dirs, "ceph-osd")
        self.assertIn("-flto=auto", cmd)
        self.assertNotIn("-fno-lto", cmd)

    def test_other_projects_are_left_alone(self):
        r, dirs = self.configure(TOP.replace("project(ceph C)", "project(notceph C)"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("-fno-lto", self.link_command(dirs, "ceph-osdomap-tool"))


if __name__ == "__main__":
    unittest.main()
