"""ci/release passes a stage's exit code through unchanged: the gate's 1 (a
regression) and 2 (the gate could not run) reach whoever runs the main job.
Every stage is a stand-in program here; each logs its name and exits as told."""
import os
import subprocess
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from cephperf.stages import release

STAND_IN = """#!/bin/sh
echo "$(basename "$0")" >> "$STAND_IN_LOG"
[ "$(basename "$0")" = "$STAND_IN_FAIL" ] && exit "$STAND_IN_CODE"
exit 0
"""


class ReleaseExitCodeTest(unittest.TestCase):
    def setUp(self):
        tmp = Path(tempfile.mkdtemp())
        self.addCleanup(subprocess.run, ["rm", "-rf", str(tmp)])
        self.ci, self.bench, self.log = tmp / "ci", tmp / "bench", tmp / "calls"
        for d in (self.ci, self.bench):
            d.mkdir()
        names = {cmd[0].name for _, cmd, _ in release.stages("osd-only", self.ci, self.bench)}
        for name in names:
            program = (self.bench if name == "gate" else self.ci) / name
            program.write_text(STAND_IN)
            program.chmod(0o755)
        # the release's "passed before" stamps go to a private build dir
        env = {"CEPH_PERF_BUILD": str(tmp / "build"), "CEPH_PERF_CACHE": str(tmp / "cache"),
               "STAND_IN_LOG": str(self.log)}
        patcher = mock.patch.dict(os.environ, env)
        patcher.start()
        self.addCleanup(patcher.stop)

    def release_with(self, failing: str, code: int) -> int:
        with mock.patch.dict(os.environ, {"STAND_IN_FAIL": failing, "STAND_IN_CODE": str(code)}):
            return release.run_stages(release.stages("osd-only", self.ci, self.bench))

    def calls(self) -> list[str]:
        return self.log.read_text().split()

    def test_a_regression_exits_1(self):
        self.assertEqual(self.release_with("gate", 1), 1)
        self.assertEqual(self.calls()[-1], "gate")

    def test_a_gate_that_could_not_run_exits_2(self):
        self.assertEqual(self.release_with("gate", 2), 2)

    def test_a_failing_stage_stops_the_chain_with_its_code(self):
        self.assertEqual(self.release_with("audit-flags", 1), 1)
        self.assertEqual(self.calls()[-1], "audit-flags")
        self.assertNotIn("gate", self.calls())

    def test_gate_arguments_reach_the_gate_and_its_up_to_date_key(self):
        chain = release.stages("osd-only", self.ci, self.bench, ("--candidate-conf", "debug-20.conf"))
        gate = dict((name, cmd) for name, cmd, _ in chain)["gate"]
        self.assertEqual([str(c) for c in gate[-2:]], ["--candidate-conf", "debug-20.conf"])
        default = dict((name, cmd) for name, cmd, _ in release.stages("osd-only", self.ci, self.bench))["gate"]
        # its own report directory: the default gate's report is not overwritten
        self.assertNotEqual(gate[gate.index("--out") + 1], default[default.index("--out") + 1])
        self.assertEqual(self.release_with("none", 0), 0)
        # the default gate passed; the same release with other gate arguments runs its gate again
        with mock.patch.dict(os.environ, {"STAND_IN_FAIL": "gate", "STAND_IN_CODE": "1"}):
            self.assertEqual(release.run_stages(chain), 1)
        self.assertEqual(self.calls().count("gate"), 2)

    def test_every_stage_passing_exits_0(self):
        self.assertEqual(self.release_with("none", 0), 0)
        self.assertEqual(self.calls()[0], "check-debian")
        self.assertEqual(self.calls()[-1], "gate")




class ReleaseFlagCasesTest(unittest.TestCase):
    def check_flags_command(self, build_profiles: str) -> list[str]:
        [cmd] = [c for name, c, _ in release.stages("osd-only", build_profiles=build_profiles) if name == "check-flags"]
        return [str(a) for a in cmd[1:]]

    def test_the_release_checks_the_compile_commands_of_its_build_profiles(self):
        # by default the release is built with LTO and PGO
        self.assertEqual(self.check_flags_command(""), ["a", "b", "c", "a-lto-pgo"])
        self.assertEqual(self.check_flags_command("pkg.ceph.lto pkg.ceph.pgo"), ["a", "b", "c", "a-lto-pgo"])
        self.assertEqual(self.check_flags_command("pkg.ceph.nopgo"), ["a", "b", "c", "a-lto"])
        self.assertEqual(self.check_flags_command("pkg.ceph.nolto"), ["a", "b", "c"])
        self.assertEqual(self.check_flags_command("pkg.ceph.nolto pkg.ceph.nopgo"), ["a", "b", "c"])


if __name__ == "__main__":
    unittest.main()
