"""ci/piuparts' pure parts: its verdict from piuparts' log (which test, which
phase, which lines), the command line it gives piuparts, and the choice of
the package set's .debs. The logs are written here in piuparts 1.6's form,
as a run of it on Debian's ceph-fuse and on a ceph-fuse whose postrm fails
on purge printed them."""
import unittest
from pathlib import Path
from unittest import mock

from cephperf.common import EXIT_ERROR, StageError
from cephperf.packaging import piuparts
from cephperf.packaging.piuparts import Deb, choose, piuparts_argv
from cephperf.packaging.piuparts_log import INSTALL_PURGE, UPGRADE, judge, phase_of, render, summary

CHROOT = "/var/cache/ceph-perf/scratch/piuparts-1/tmpabc"
DEB = "./tmp/ceph-fuse_18.2.7+ds-1+deb13u1+perf16_amd64.deb"


def entry(time: str, level: str, message: str, *below: str) -> str:
    return "\n".join([f"{time} {level}: {message}", *(f"  {line}" for line in below)])


def command(argv: list[str], *output: str, status: int = 0) -> str:
    full = ["chroot", CHROOT, *argv]
    lines = [entry("0m1.0s", "DEBUG", f"Starting command: {full!r}")]
    if output:
        lines.append(entry("0m1.1s", "DUMP", "", *output))
    lines.append(entry("0m1.2s", "DEBUG", f"Command ok: {full!r}") if status == 0 else
                 entry("0m1.2s", "ERROR", f"Command failed (status={status}): {full!r}", *output, ""))
    return "\n".join(lines)


HEAD = [entry("0m0.0s", "INFO", "piuparts version 1.6.0 starting up."),
        command(["apt-get", "update"], "Reading package lists..."),
        command(["apt-get", "-yf", "dist-upgrade"])]
INSTALL = command(["apt-get", "-y", "--allow-downgrades", "install", DEB])
REMOVE = command(["apt-get", "remove", "ceph-fuse"])
PURGE = command(["dpkg", "--purge", "ceph-fuse"])
FIRST_PASS = entry("0m2.0s", "INFO", "PASS: Installation and purging test.")
ARCHIVE = command(["apt-get", "-y", "install", "ceph-fuse"])
SECOND_PASS = entry("0m3.0s", "INFO", "PASS: Installation, upgrade and purging tests.")
END = [entry("0m4.0s", "INFO", "PASS: All tests."), entry("0m4.0s", "INFO", "piuparts run ends.")]
BROKEN_PURGE = command(["dpkg", "--purge", "ceph-fuse"], "Purging configuration files for ceph-fuse ...",
                       "postrm: purge fails on purpose",
                       "dpkg: error processing package ceph-fuse (--purge):", status=1)
RUN_ENDS = entry("0m5.0s", "ERROR", "piuparts run ends.")


def log(*parts: str) -> str:
    return "\n".join([*HEAD, *parts]) + "\n"


class VerdictTest(unittest.TestCase):
    def test_both_tests_passing_is_a_pass(self):
        result = judge(log(INSTALL, REMOVE, PURGE, FIRST_PASS, ARCHIVE, INSTALL, REMOVE, PURGE, SECOND_PASS,
                           *END), 0)
        self.assertEqual(result["verdict"], "pass")
        self.assertEqual(result["passed"], [INSTALL_PURGE, UPGRADE])
        self.assertEqual(result["piuparts"], "1.6.0")

    def test_a_failing_purge_names_the_test_the_phase_and_the_script_output(self):
        result = judge(log(INSTALL, REMOVE, BROKEN_PURGE, RUN_ENDS), 1)
        self.assertEqual((result["verdict"], result["test"], result["phase"]), ("fail", INSTALL_PURGE, "purge"))
        self.assertEqual(result["lines"][0], "dpkg --purge ceph-fuse failed (status=1) in piuparts' chroot")
        self.assertIn("postrm: purge fails on purpose", result["lines"])
        self.assertNotIn(CHROOT, "\n".join(result["lines"]))
        self.assertIn("the install and purge test, phase purge:", summary(result))

    def test_a_failing_upgrade_is_the_upgrade_tests(self):
        upgrade = command(["apt-get", "-y", "--allow-downgrades", "install", DEB], "E: Sub-process failed",
                          status=100)
        result = judge(log(INSTALL, REMOVE, PURGE, FIRST_PASS, ARCHIVE, upgrade, RUN_ENDS), 1)
        self.assertEqual((result["verdict"], result["test"], result["phase"]), ("fail", UPGRADE, "upgrade"))
        self.assertEqual(result["passed"], [INSTALL_PURGE])

    def test_the_archive_version_failing_to_install_is_its_own_phase(self):
        archive = command(["apt-get", "-y", "install", "ceph-fuse"], "E: Unable to locate package", status=100)
        result = judge(log(INSTALL, REMOVE, PURGE, FIRST_PASS, archive, RUN_ENDS), 1)
        self.assertEqual(result["phase"], "install of the archive's version")

    def test_files_left_after_the_purge_fail_in_the_purge_phase(self):
        left = entry("0m2.5s", "ERROR", "FAIL: Package purging left files on system:",
                     "/etc/ceph/ceph.conf\t owned by: ceph-fuse")
        result = judge(log(INSTALL, REMOVE, PURGE, left, RUN_ENDS), 1)
        self.assertEqual((result["verdict"], result["phase"]), ("fail", "purge"))
        self.assertIn("/etc/ceph/ceph.conf\t owned by: ceph-fuse", result["lines"])

    def test_a_dependency_refusing_removal_fails_naming_it_and_a_long_command_is_cut(self):
        deps = [f"lib{i}:amd64" for i in range(200)]
        removal = command(["apt-get", "remove", "--allow-remove-essential", *deps, "ceph-osd"],
                          "Refusing to remove sudo.", "dpkg: error processing package sudo (--remove):", status=100)
        result = judge(log(INSTALL, removal, RUN_ENDS), 1)
        self.assertEqual((result["verdict"], result["phase"]), ("fail", "remove"))
        self.assertTrue(result["lines"][0].startswith("apt-get remove --allow-remove-essential lib0:amd64 "))
        self.assertTrue(result["lines"][0].endswith(" ... failed (status=100) in piuparts' chroot"))
        self.assertLess(len(result["lines"][0]), 400)
        self.assertIn("Refusing to remove sudo.", result["lines"])

    def test_a_failing_check_script_before_removal_is_in_the_remove_phase(self):
        script = command(["tmp/scripts/pre_remove_50_find_bad_permissions"], "world writable: /etc/ceph/x",
                         status=1)
        result = judge(log(INSTALL, script, RUN_ENDS), 1)
        self.assertEqual((result["verdict"], result["phase"]), ("fail", "remove"))

    def test_a_package_not_installed_after_its_install_fails_and_a_warning_does_not(self):
        warning = entry("0m1.5s", "ERROR", "WARN: Broken symlinks:", "/usr/lib/x -> y")
        missing = entry("0m1.6s", "ERROR", "Could not install ceph-osd.")
        result = judge(log(warning, INSTALL, missing, RUN_ENDS), 1)
        self.assertEqual((result["verdict"], result["phase"], result["lines"]),
                         ("fail", "install", ["Could not install ceph-osd."]))

    def test_a_failing_removal_and_a_failing_install(self):
        removal = command(["apt-get", "remove", "ceph-fuse"], "prerm failed", status=100)
        self.assertEqual(judge(log(INSTALL, removal, RUN_ENDS), 1)["phase"], "remove")
        install = command(["apt-get", "-y", "--allow-downgrades", "install", DEB], "postinst failed", status=100)
        self.assertEqual(judge(log(install, RUN_ENDS), 1)["phase"], "install")

    def test_an_unreachable_archive_is_a_run_that_could_not_run(self):
        head = [HEAD[0], command(["apt-get", "update"], "E: Failed to fetch", status=100), RUN_ENDS]
        result = judge("\n".join(head), 1)
        self.assertEqual((result["verdict"], result["phase"]), ("error", "setup"))

    def test_a_skipped_upgrade_test_is_not_a_pass(self):
        result = judge(log(INSTALL, REMOVE, PURGE, FIRST_PASS, *END), 0)
        self.assertEqual(result["verdict"], "error")
        self.assertIn("upgrade test did not run", result["lines"][0])

    def test_a_crash_without_a_failure_is_not_a_pass(self):
        self.assertEqual(judge(log(INSTALL) + "Piuparts caught exception, exiting...\n", 1)["verdict"], "error")
        self.assertEqual(judge("", 1)["verdict"], "error")
        self.assertEqual(judge(log(INSTALL, REMOVE, PURGE, FIRST_PASS, ARCHIVE, INSTALL, REMOVE, PURGE,
                                   SECOND_PASS, *END), 1)["verdict"], "error")

    def test_the_report_names_the_failing_test(self):
        result = judge(log(INSTALL, REMOVE, BROKEN_PURGE, RUN_ENDS), 1)
        md = render(result, [{"package": "ceph-fuse", "version": "18.2.7+ds-1+deb13u1+perf16"}], 90, "2026-12-04")
        self.assertIn("| install and purge | **fail** in phase purge |", md)
        self.assertIn("| install, upgrade and purge | not run |", md)
        self.assertIn("postrm: purge fails on purpose", md)


class PhaseTest(unittest.TestCase):
    def test_commands_and_their_phases(self):
        chroot = ["chroot", CHROOT]
        cases = [(["dpkg", "--purge", "ceph-osd"], INSTALL_PURGE, "purge"),
                 (["dpkg", "--purge", "--pending"], INSTALL_PURGE, None),
                 (["apt-get", "remove", "ceph-osd"], UPGRADE, "remove"),
                 (["apt-get", "install", "librados2-", "ceph-base-"], INSTALL_PURGE, "remove"),
                 (["apt-get", "-y", "install", DEB], INSTALL_PURGE, "install"),
                 (["apt-get", "-y", "install", DEB], UPGRADE, "upgrade"),
                 (["apt-get", "-y", "install", "ceph-osd"], UPGRADE, "install of the archive's version"),
                 (["apt-get", "update"], INSTALL_PURGE, "setup"),
                 (["apt-get", "clean"], UPGRADE, None),
                 (["dpkg-divert", "--list"], UPGRADE, None),
                 (["tmp/scripts/pre_test_root_password"], INSTALL_PURGE, "setup"),
                 (["tmp/scripts/pre_remove_50_find_bad_permissions"], UPGRADE, "remove"),
                 (["tmp/scripts/post_purge_exceptions"], UPGRADE, "purge")]
        for argv, test, phase in cases:
            self.assertEqual(phase_of(chroot + argv, test), phase, argv)
        self.assertIsNone(phase_of(["lsof", "-w", "+D", CHROOT], UPGRADE))


class CommandLineTest(unittest.TestCase):
    ENTRIES = [{"uri": "http://mirror.invalid/archive", "suite": "trixie", "components": ["main"],
                "signed_by": "", "trusted": False}]

    def argv(self, proxy=None) -> list[str]:
        debs = [Deb(Path("/d/ceph-osd_1_amd64.deb"), "ceph-osd", "1"), Deb(Path("/d/ceph-fuse_1_amd64.deb"),
                                                                           "ceph-fuse", "1")]
        with mock.patch.object(piuparts, "target_entries", return_value=self.ENTRIES):
            return piuparts_argv(Path("/roots/piuparts-base-k.tar"), debs, Path("/scratch/piuparts-1"), proxy)

    def test_the_base_the_distribution_and_the_hosts_mirror(self):
        argv = self.argv()
        self.assertEqual(argv[0], "piuparts")
        for option, value in (("--basetgz", "/roots/piuparts-base-k.tar"), ("--distribution", "trixie"),
                              ("--mirror", "http://mirror.invalid/archive main"), ("--tmpdir", "/scratch/piuparts-1")):
            self.assertEqual(argv[argv.index(option) + 1], value)
        self.assertIn("--keep-sources-list", argv)
        self.assertEqual(argv[argv.index("--scriptsdir") + 1], "/etc/piuparts/scripts")
        self.assertNotIn("--no-upgrade-test", argv)
        self.assertNotIn("--warn-on-others", argv)
        self.assertNotIn("--proxy", argv)
        self.assertEqual(argv[-2:], ["/d/ceph-osd_1_amd64.deb", "/d/ceph-fuse_1_amd64.deb"])

    def test_the_hosts_proxy_is_passed_on(self):
        argv = self.argv("http://proxy.invalid:3142")
        self.assertEqual(argv[argv.index("--proxy") + 1], "http://proxy.invalid:3142")


class PackageSetTest(unittest.TestCase):
    def test_each_package_once(self):
        found = [Deb(Path(f"/d/{n}.deb"), n, "1") for n in ("ceph-osd", "ceph-fuse", "ceph-mon")]
        self.assertEqual([d.package for d in choose(found, ["ceph-fuse", "ceph-osd"], Path("/d"))],
                         ["ceph-fuse", "ceph-osd"])
        with self.assertRaises(StageError) as missing:
            choose(found, ["ceph-osd", "ceph-osd-dbg"], Path("/d"))
        self.assertEqual(missing.exception.code, EXIT_ERROR)
        self.assertIn("no .deb of ceph-osd-dbg", str(missing.exception))
        with self.assertRaises(StageError) as twice:
            choose(found + [Deb(Path("/d/ceph-osd_2.deb"), "ceph-osd", "2")], ["ceph-osd"], Path("/d"))
        self.assertIn("2 .debs of ceph-osd", str(twice.exception))


if __name__ == "__main__":
    unittest.main()
