"""ci/build-release on a fixture source package: a clean build from the .dsc
in a throwaway overlay of the build root, then blhc on its log and lintian on
its .changes. A package whose Makefile drops dpkg-buildflags' CFLAGS builds,
and is then refused by blhc, naming the warning. A build that stopped goes
on in its kept tree, making again an object cut short when it stopped."""
import os
import subprocess
import tempfile
import textwrap
import unittest
from pathlib import Path

from tests.helpers import REPO, scratch_dir

MAKEFILE_GOOD = "hello: hello.c\n\t$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o hello hello.c\n"
MAKEFILE_BAD = "hello: hello.c\n\t$(CC) -O2 -o hello hello.c\n"
# The program in a CMake-like obj-*/bin, and an install that stops until the
# test lets it go on (a build interrupted after its build step).
MAKEFILE_IN_OBJ = """\
obj-x86_64-linux-gnu/bin/hello: hello.c
\tmkdir -p obj-x86_64-linux-gnu/bin
\t$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o obj-x86_64-linux-gnu/bin/hello hello.c
"""
RULES_INSTALL_STOPS = """\
#!/usr/bin/make -f
%:
\tdh $@
override_dh_auto_install:
\ttest -f go-on || { echo "ceph-perf-hello: stopped before the install"; exit 1; }
\tinstall -D obj-x86_64-linux-gnu/bin/hello debian/ceph-perf-hello/usr/bin/ceph-perf-hello
"""
# Two objects in a CMake-like obj-* directory, then a link that stops until
# the test lets it go on (a build interrupted between compile and link).
MAKEFILE_STOPS = """\
O = obj-x86_64-linux-gnu
hello: $(O)/hello.o $(O)/greeting.o
\ttest -f go-on || { echo "ceph-perf-hello: stopped before the link"; exit 1; }
\t$(CC) $(CFLAGS) $(LDFLAGS) -o hello $(O)/hello.o $(O)/greeting.o
$(O)/%.o: %.c
\tmkdir -p $(O)
\t$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<
"""


def fixture_dsc(dest: Path, makefile: str, rules: str = "#!/usr/bin/make -f\n%:\n\tdh $@\n",
                extra: dict | None = None, compat: int = 13) -> Path:
    """A native source package building one C program with `makefile`,
    debian/rules `rules`, the `extra` files (name: text) and debhelper's
    `compat` level (Ceph's packaging is at 11); its .dsc."""
    src = dest / "ceph-perf-hello-1.0"
    (src / "debian" / "source").mkdir(parents=True)
    (src / "hello.c").write_text('#include <stdio.h>\nint main(void) { char b[16]; snprintf(b, sizeof b, "%s", "hi");'
                                 ' puts(b); return 0; }\n')
    (src / "greeting.c").write_text('const char *greeting(void) { return "hi"; }\n')
    for name, text in (extra or {}).items():
        (src / name).write_text(text)
    (src / "Makefile").write_text(makefile + "install:\n\tinstall -D hello $(DESTDIR)/usr/bin/ceph-perf-hello\n")
    files = {
        "control": """\
            Source: ceph-perf-hello
            Section: misc
            Priority: optional
            Maintainer: ceph-perf developers <ceph-perf@example.org>
            Build-Depends: debhelper-compat (= COMPAT)
            Standards-Version: 4.7.0
            Rules-Requires-Root: no

            Package: ceph-perf-hello
            Architecture: any
            Depends: ${shlibs:Depends}, ${misc:Depends}
            Description: ci/build-release test fixture
             A C program built with dpkg-buildflags' flags, or not.
            """,
        "changelog": """\
            ceph-perf-hello (1.0) trixie; urgency=medium

              * Fixture.

             -- ceph-perf developers <ceph-perf@example.org>  Mon, 23 Nov 2026 00:00:00 +0000
            """,
        "copyright": """\
            Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
            Upstream-Name: ceph-perf-hello

            Files: *
            Copyright: 2026 ceph-perf developers
            License: CC0-1.0
             On Debian systems the full text is in /usr/share/common-licenses/CC0-1.0.
            """,
        "rules": rules,
        "source/format": "3.0 (native)\n",
    }
    for name, text in files.items():
        (src / "debian" / name).write_text(textwrap.dedent(text).replace("COMPAT", str(compat)))
    (src / "debian" / "rules").chmod(0o755)
    subprocess.run(["dpkg-source", "-b", src.name], cwd=dest, check=True, capture_output=True)
    return dest / "ceph-perf-hello_1.0.dsc"


class BuildReleaseTest(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="build-release-test-", dir=scratch_dir()))
        self.addCleanup(subprocess.run, ["rm", "-rf", str(self.tmp)])

    def build(self, makefile: str) -> tuple[subprocess.CompletedProcess, Path]:
        return self.build_dsc(fixture_dsc(self.tmp / "src", makefile))

    def build_dsc(self, dsc: Path) -> tuple[subprocess.CompletedProcess, Path]:
        out = self.tmp / "out"
        # a fixture, not Ceph: no training counts apply to it, whatever the pin says
        env = {**os.environ, "DEB_BUILD_PROFILES": "pkg.ceph.nopgo"}
        r = subprocess.run([str(REPO / "ci" / "build-release"), "--dsc", str(dsc), "--out", str(out)],
                           capture_output=True, text=True, timeout=1200, env=env)
        return r, out

    def test_a_stopped_build_goes_on_in_its_kept_tree(self):
        dsc = fixture_dsc(self.tmp / "src", MAKEFILE_STOPS)
        r, out = self.build_dsc(dsc)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr[-3000:])
        self.assertIn("ceph-perf-hello: stopped before the link", r.stderr)
        self.assertIn("the next run goes on from where it stopped", r.stderr)
        tree = out.with_name(".out.new") / "tree" / "src"
        objs = tree / "obj-x86_64-linux-gnu"
        # hello.o was made long before the build stopped; greeting.o was being
        # written when it stopped: cut short, and the newest file of the tree
        hour_ago = (objs / "hello.o").stat().st_mtime - 3600
        os.utime(objs / "hello.o", (hour_ago, hour_ago))
        with open(objs / "greeting.o", "r+b") as f:
            f.truncate(16)
        (tree / "go-on").touch()
        r, out = self.build_dsc(dsc)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr[-3000:])
        self.assertIn("resumed build of ceph-perf-hello_1.0.dsc", r.stderr)
        log = (out / "build.log").read_text()
        self.assertIn("resuming the build of ceph-perf-hello_1.0.dsc in its kept tree; 1 output(s) of its last "
                      "10 minutes are made again", log)
        # the first part's log is kept: blhc judged hello.o's compile line too
        self.assertIn("-c -o obj-x86_64-linux-gnu/hello.o hello.c", log)
        self.assertEqual(log.count("-c -o obj-x86_64-linux-gnu/greeting.o greeting.c"), 2)
        self.assertEqual(log.count("-c -o obj-x86_64-linux-gnu/hello.o hello.c"), 1)
        self.assertIn("ceph-perf-hello_1.0_amd64.deb", {f.name for f in out.iterdir()})
        self.assertFalse((out / "tree").exists())  # the kept tree goes once the build is done

    def test_a_build_stopped_after_its_build_step_makes_again_what_it_drops(self):
        """Stopped in the binary step: the resumed run removes the outputs of
        its last minutes, the program among them, and the build step makes
        them again before they are installed."""
        dsc = fixture_dsc(self.tmp / "src", MAKEFILE_IN_OBJ, RULES_INSTALL_STOPS, compat=11)
        r, out = self.build_dsc(dsc)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr[-3000:])
        self.assertIn("ceph-perf-hello: stopped before the install", r.stderr)
        tree = out.with_name(".out.new") / "tree" / "src"
        self.assertTrue((tree / "debian" / "debhelper-build-stamp").is_file())  # the build step had finished
        (tree / "go-on").touch()
        r, out = self.build_dsc(dsc)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr[-3000:])
        log = (out / "build.log").read_text()
        self.assertIn("1 output(s) of its last 10 minutes are made again", log)
        self.assertEqual(log.count("-o obj-x86_64-linux-gnu/bin/hello hello.c"), 2)
        self.assertIn("ceph-perf-hello_1.0_amd64.deb", {f.name for f in out.iterdir()})

    def test_a_clean_build_passes_blhc_and_lintian(self):
        r, out = self.build(MAKEFILE_GOOD)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr[-3000:])
        names = {f.name for f in out.iterdir()}
        self.assertIn("ceph-perf-hello_1.0_amd64.deb", names)
        self.assertIn("ceph-perf-hello_1.0_amd64.changes", names)
        self.assertIn("ceph-perf-hello_1.0_amd64.buildinfo", names)
        # the release's .changes lists the source package as it was made, and the binaries
        changes = (out / "ceph-perf-hello_1.0_amd64.changes").read_text()
        self.assertIn("ceph-perf-hello_1.0.dsc", changes)
        self.assertIn("ceph-perf-hello_1.0_amd64.deb", changes)
        self.assertIn("ceph-perf-hello_1.0_amd64.buildinfo", changes)
        # built from the .dsc, not from a tree: dpkg-source unpacked it
        self.assertIn("dpkg-source: info: extracting ceph-perf-hello", (out / "build.log").read_text())
        self.assertIn("blhc and lintian clean", r.stderr)

    def test_dropped_cflags_are_refused_by_blhc(self):
        r, out = self.build(MAKEFILE_BAD)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr[-3000:])
        self.assertIn("blhc: 3 warning(s) of build.log not explained", r.stderr)
        self.assertIn("CFLAGS missing (-g -fstack-protector-strong", r.stderr)
        self.assertFalse(out.exists())  # a failed release build never becomes the output


if __name__ == "__main__":
    unittest.main()
