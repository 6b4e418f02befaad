"""ci/build-debs' conventions: the user's DEB_BUILD_OPTIONS and profiles, and a
console that shows progress and a heartbeat instead of every compile command."""
import io
import os
import subprocess
import tempfile
import threading
import unittest
from pathlib import Path

from cephperf.common import StageError
from cephperf.packaging.buildlog import Console, build_in_root, follow
from cephperf.packaging.changelog import changelog_epoch
from cephperf.packaging.dpkg_build import build_environment
from cephperf.stages.build_debs import build_key, pin_debian_mtimes


class BuildEnvironmentTest(unittest.TestCase):
    def test_the_users_options_are_kept_and_ours_appended(self):
        env = build_environment({"DEB_BUILD_OPTIONS": "nodoc noopt"}, "osd-only", None)
        # nocheck is not added: without it the osd-only profile builds the store test
        self.assertEqual(env["DEB_BUILD_OPTIONS"], f"nodoc noopt parallel={os.cpu_count()}")
        self.assertEqual(env["DEB_BUILD_PROFILES"], "pkg.ceph.osd-only")

    def test_the_users_parallel_decides_the_jobs(self):
        env = build_environment({"DEB_BUILD_OPTIONS": "parallel=1"}, "osd-only", None)
        self.assertEqual(env["DEB_BUILD_OPTIONS"], "parallel=1")

    def test_jobs_on_the_command_line_win(self):
        env = build_environment({"DEB_BUILD_OPTIONS": "parallel=1 nocheck"}, "full", 3)
        self.assertEqual(env["DEB_BUILD_OPTIONS"], "nocheck parallel=3")

    def test_the_development_loop_builds_without_lto_and_pgo_unless_asked(self):
        # the release (ci/build-release) takes the rules' default: LTO and PGO
        self.assertEqual(build_environment({}, "osd-only", 2)["DEB_BUILD_PROFILES"], "pkg.ceph.osd-only")
        self.assertEqual(build_environment({}, "osd-only", 2, development=True)["DEB_BUILD_PROFILES"],
                         "pkg.ceph.osd-only pkg.ceph.nolto")
        for asked in ("pkg.ceph.lto", "pkg.ceph.nopgo", "pkg.ceph.pgo-generate"):
            env = build_environment({"DEB_BUILD_PROFILES": asked}, "osd-only", 2, development=True)
            self.assertEqual(env["DEB_BUILD_PROFILES"], f"{asked} pkg.ceph.osd-only")
        self.assertEqual(build_environment({}, "source", 2, development=True)["DEB_BUILD_PROFILES"], "")

    def test_the_users_profiles_come_first_and_ours_once(self):
        env = build_environment({"DEB_BUILD_PROFILES": "nodoc pkg.ceph.osd-only"}, "osd-only", 2)
        self.assertEqual(env["DEB_BUILD_PROFILES"], "nodoc pkg.ceph.osd-only")
        self.assertEqual(build_environment({"DEB_BUILD_PROFILES": "nodoc"}, "full", 2)["DEB_BUILD_PROFILES"], "nodoc")
        # a source package is built without profiles
        self.assertEqual(build_environment({"DEB_BUILD_PROFILES": "nodoc"}, "source", 2)["DEB_BUILD_PROFILES"], "")


class BuildKeyTest(unittest.TestCase):
    def test_a_changed_profile_or_option_is_not_up_to_date(self):
        plain = build_key("tree", "osd-only", build_environment({}, "osd-only", 2))
        self.assertEqual(plain, build_key("tree", "osd-only", build_environment({}, "osd-only", 2)))
        lto = build_key("tree", "osd-only", build_environment({"DEB_BUILD_PROFILES": "pkg.ceph.lto"}, "osd-only", 2))
        nodoc = build_key("tree", "osd-only", build_environment({"DEB_BUILD_OPTIONS": "nodoc"}, "osd-only", 2))
        self.assertEqual(len({plain, lto, nodoc}), 3)
        # the number of jobs changes how the packages are built, not what they are
        one_job = build_key("tree", "osd-only", build_environment({"DEB_BUILD_OPTIONS": "parallel=1"}, "osd-only", None))
        self.assertEqual(one_job, plain)


class ConsoleTest(unittest.TestCase):
    def test_progress_once_per_percentage_and_steps_but_no_compile_commands(self):
        c = Console(heartbeat=300)
        said = [c.line(text, now) for now, text in enumerate([
            "   dh_auto_configure -a",
            "/usr/bin/c++ -O2 -g -c foo.cc -o foo.o",
            "[  1%] Building CXX object src/common/CMakeFiles/foo.dir/foo.cc.o",
            "[  1%] Building CXX object src/common/CMakeFiles/bar.dir/bar.cc.o",
            "[  2%] Linking CXX static library libfoo.a",
            "dpkg-buildpackage: info: binary-only upload (no source included)"])]
        self.assertEqual(said, ["dh_auto_configure -a", None,
                                "build 1%: Building CXX object src/common/CMakeFiles/foo.dir/foo.cc.o", None,
                                "build 2%: Linking CXX static library libfoo.a",
                                "dpkg-buildpackage: info: binary-only upload (no source included)"])

    def test_a_heartbeat_after_silence_and_not_before(self):
        c = Console(heartbeat=300)
        self.assertEqual(c.line("[ 40%] Linking CXX executable ceph-osd", 0), "build 40%: Linking CXX executable ceph-osd")
        self.assertIsNone(c.tick(299))
        self.assertEqual(c.tick(600), "still building after 10 min (40%, 1 log lines)")
        self.assertIsNone(c.tick(700))

    def test_follow_logs_everything_and_says_little(self):
        lines = ["/usr/bin/c++ -c a.cc\n"] * 500 + ["[ 99%] Built target ceph-osd\n", "error: last words\n"]
        logf, said = io.StringIO(), []
        tail = follow(io.StringIO("".join(lines)), logf, said.append, clock=lambda: 0.0)
        self.assertEqual(logf.getvalue(), "".join(lines))
        self.assertEqual(said, ["[build-debs] build 99%: Built target ceph-osd"])
        self.assertEqual(tail[-1], "error: last words")
        self.assertEqual(len(tail), 40)


if __name__ == "__main__":
    unittest.main()


CHANGELOG = """tiny (1.0-1) unstable; urgency=medium

  * A test package.

 -- ceph-perf developers <ceph-perf@example.org>  Wed, 25 Nov 2026 00:30:00 +0000
"""


def tiny_source(top: Path, written_at: float) -> Path:
    """A 3.0 (quilt) source tree whose debian/ files were written at `written_at`."""
    tree = top / "tiny-1.0"
    (tree / "debian" / "source").mkdir(parents=True)
    (tree / "hello.txt").write_text("hello\n")
    subprocess.run(["tar", "-czf", str(top / "tiny_1.0.orig.tar.gz"), "-C", str(top), "tiny-1.0/hello.txt"],
                   check=True, timeout=60)
    files = {"changelog": CHANGELOG, "source/format": "3.0 (quilt)\n", "rules": "#!/usr/bin/make -f\n",
             "control": "Source: tiny\nMaintainer: X <x@example.org>\n\nPackage: tiny\n"
                        "Architecture: all\nDescription: t\n t\n"}
    for name, text in files.items():
        (tree / "debian" / name).write_text(text)
    for p in [tree / "debian", *(tree / "debian").rglob("*")]:
        os.utime(p, (written_at, written_at))
    return tree


class HostRoot:
    """A stand-in for a build root: runs the command on the host."""

    def run(self, argv, stdout=None, binds=(), env=None, mounts=None) -> int:
        return subprocess.run(argv, stdout=stdout, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
                              timeout=60).returncode


class BuildScriptSnapshotTest(unittest.TestCase):
    def test_an_edit_of_the_script_while_it_runs_changes_nothing_it_runs(self):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            scripts = tmp / "scripts"
            scripts.mkdir()
            script = scripts / "build.sh"
            # it sources a neighbour, as build-release.sh sources kept-tree.sh; bash
            # goes back to the file for the next line after an external command
            (scripts / "helper.sh").write_text('say() { echo "ran: $1"; }\n')
            script.write_text('. "$(dirname "$0")/helper.sh"\nhead -n 1 "$FIFO" >/dev/null\nsay "as it was when the build began"\n')
            fifo = tmp / "fifo"
            os.mkfifo(fifo)

            def edit_while_it_waits():
                # opening the pipe waits until the script opens it to read: it is running
                with open(fifo, "w") as go:
                    script.write_text('. "$(dirname "$0")/helper.sh"\nhead -n 1 "$FIFO" >/dev/null\nsay "an edit made while it ran"\n')
                    go.write("go\n")

            editor = threading.Thread(target=edit_while_it_waits, daemon=True)
            editor.start()
            log = io.StringIO()
            build_in_root(HostRoot(), script, {"FIFO": str(fifo)}, log, "build-test", "the test build failed", 1)
            editor.join(timeout=60)
            self.assertIn("an edit made while it ran", script.read_text())  # the edit happened
            self.assertIn("ran: as it was when the build began", log.getvalue())
            self.assertNotIn("ran: an edit", log.getvalue())


class SourcePackageReproducibleTest(unittest.TestCase):
    def test_the_changelogs_time(self):
        with tempfile.TemporaryDirectory() as tmp:
            f = Path(tmp) / "changelog"
            f.write_text(CHANGELOG)
            self.assertEqual(changelog_epoch(f), 1795566600)
            f.write_text("tiny (1.0-1) unstable; urgency=medium\n\n  * no trailer\n")
            with self.assertRaisesRegex(StageError, "no trailer line"):
                changelog_epoch(f)

    def debian_tarball(self, written_at: float, pin: bool) -> bytes:
        with tempfile.TemporaryDirectory() as tmp:
            tree = tiny_source(Path(tmp), written_at)
            if pin:
                pin_debian_mtimes(tree)
            subprocess.run(["dpkg-source", "-b", tree.name], cwd=tmp, capture_output=True, check=True, timeout=120)
            return (Path(tmp) / "tiny_1.0-1.debian.tar.xz").read_bytes()

    def test_the_debian_tarball_does_not_depend_on_when_the_tree_was_written(self):
        """Trees written an hour apart, both before the changelog's date (as
        ci/source writes them before a release's entry is dated): dpkg-source
        alone gives two tarballs, and the .dsc two checksums; pinned, one."""
        before = changelog_epoch_of(CHANGELOG) - 7200
        self.assertNotEqual(self.debian_tarball(before, pin=False), self.debian_tarball(before + 3600, pin=False))
        self.assertEqual(self.debian_tarball(before, pin=True), self.debian_tarball(before + 3600, pin=True))


def changelog_epoch_of(text: str) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "changelog"
        f.write_text(text)
        return changelog_epoch(f)
