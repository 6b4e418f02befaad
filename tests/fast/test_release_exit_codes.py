"""ci/release passes a stage's exit code through unchanged: the gate's 1 (a
regression) and 2 (the gate could not run) reach whoever runs the main job.
A check stage that passed is skipped on the same inputs, through
cephperf.stage.produce; one that failed is not recorded and runs again.
Every stage is a stand-in program here; each logs its name and exits as told."""
import os
import subprocess
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from cephperf import paths, pipeline
from cephperf.stages import release

STAND_IN = """#!/bin/sh
echo "$(basename "$0")" >> "$STAND_IN_LOG"
[ "$(basename "$0")" = "$STAND_IN_FAIL" ] && exit "$STAND_IN_CODE"
# the release build's stand-in makes new packages when told to
[ "$(basename "$0")" = build-release ] && [ -n "${NEW_BUILD:-}" ] && echo "$NEW_BUILD" > "$DEBS_STAMP"
exit 0
"""
# the programs of the stages ci/release skips when they passed on the same inputs
CHECKS = [Path(s.program).name for s in pipeline.load() if s.skip == "passed"]


class ReleaseExitCodeTest(unittest.TestCase):
    def setUp(self):
        tmp = Path(tempfile.mkdtemp())
        self.addCleanup(subprocess.run, ["rm", "-rf", str(tmp)])
        self.programs, self.log = tmp, tmp / "calls"
        # the release's records of passed stages go to a private build dir, its packages' stamp to a private cache
        env = {"CEPH_PERF_BUILD": str(tmp / "build"), "CEPH_PERF_CACHE": str(tmp / "cache"),
               "STAND_IN_LOG": str(self.log)}
        patcher = mock.patch.dict(os.environ, env)
        patcher.start()
        self.addCleanup(patcher.stop)
        for step in self.chain():
            program = Path(step.command[0])
            program.parent.mkdir(exist_ok=True)
            program.write_text(STAND_IN)
            program.chmod(0o755)
        self.debs_stamp = paths.release_out("osd-only") / "stamp.json"
        self.debs_stamp.parent.mkdir(parents=True)
        self.debs_stamp.write_text('{"inputs": "first build"}\n')
        os.environ["DEBS_STAMP"] = str(self.debs_stamp)

    def chain(self, release_args: tuple[str, ...] = ()) -> list[pipeline.Step]:
        return pipeline.steps("osd-only", release_args, programs=self.programs)

    def release_with(self, failing: str, code: int, release_args: tuple[str, ...] = ()) -> int:
        with mock.patch.dict(os.environ, {"STAND_IN_FAIL": failing, "STAND_IN_CODE": str(code)}):
            return release.run_steps(self.chain(release_args))

    def calls(self) -> list[str]:
        calls = self.log.read_text().split() if self.log.exists() else []
        self.log.unlink(missing_ok=True)
        return calls

    def test_a_regression_exits_1(self):
        self.assertEqual(self.release_with("gate", 1), 1)
        self.assertEqual(self.calls()[-1], "gate")

    def test_a_gate_that_could_not_run_exits_2(self):
        self.assertEqual(self.release_with("gate", 2), 2)

    def test_a_failing_stage_stops_the_chain_with_its_code(self):
        self.assertEqual(self.release_with("audit-flags", 1), 1)
        calls = self.calls()
        self.assertEqual(calls[-1], "audit-flags")
        self.assertNotIn("gate", calls)

    def test_the_audit_and_the_gate_are_check_stages(self):
        self.assertLessEqual({"audit-flags", "io-mock-test", "gate"}, set(CHECKS))

    def test_every_stage_passing_exits_0_in_the_declared_order(self):
        self.assertEqual(self.release_with("none", 0), 0)
        programs = [Path(s.command[0]).name for s in self.chain()]
        self.assertEqual(self.calls(), programs)
        self.assertEqual(programs[0], "check-debian")
        self.assertEqual(programs[-1], "gate")

    def test_a_check_stage_that_passed_is_skipped_on_the_same_inputs(self):
        self.assertEqual(self.release_with("none", 0), 0)
        self.calls()
        self.assertEqual(self.release_with("none", 0), 0)
        calls = self.calls()
        # the long stages run again and skip their own work; the check stages are not run
        self.assertIn("build-release", calls)
        self.assertEqual([c for c in CHECKS if c in calls], [])
        record = paths.reports("release") / "audit-flags" / "stamp.json"
        self.assertTrue(record.is_file(), "a pass is recorded by produce() in the stage's own directory")
        # other packages: every check stage runs again
        self.debs_stamp.write_text('{"inputs": "another build"}\n')
        self.assertEqual(self.release_with("none", 0), 0)
        calls = self.calls()
        self.assertEqual([c for c in CHECKS if c in calls], CHECKS)

    def test_packages_built_during_the_release_are_checked_again(self):
        self.assertEqual(self.release_with("none", 0), 0)
        self.calls()
        # build-release makes other packages in this run: the keys are made after it, not when the release starts
        with mock.patch.dict(os.environ, {"NEW_BUILD": '{"inputs": "second build"}'}):
            self.assertEqual(self.release_with("none", 0), 0)
        calls = self.calls()
        self.assertEqual([c for c in CHECKS if c in calls], CHECKS)

    def test_a_failed_check_stage_is_not_recorded_as_passed(self):
        for code in (1, 2):
            self.assertEqual(self.release_with("io-mock-test", code), code)
            self.assertFalse((paths.reports("release") / "io-mock-test" / "stamp.json").exists())
            self.calls()
        self.assertEqual(self.release_with("none", 0), 0)
        calls = self.calls()
        self.assertIn("io-mock-test", calls, "a stage that failed runs again")
        self.assertNotIn("audit-flags", calls, "the stage before it passed on these inputs")

    def test_gate_arguments_reach_the_gate_and_its_up_to_date_key(self):
        args = ("--candidate-conf", "debug-20.conf")
        gate = {s.name: s for s in self.chain(args)}["gate"]
        default = {s.name: s for s in self.chain()}["gate"]
        self.assertEqual(gate.command[-2:], list(args))
        # its own report directory and record: the default gate's are not overwritten
        self.assertNotEqual(gate.out, default.out)
        self.assertNotEqual(gate.record, default.record)
        self.assertNotEqual(gate.key(), default.key())
        self.assertEqual(self.release_with("none", 0), 0)
        self.calls()
        # the default gate passed; the same release with other gate arguments runs its gate again
        self.assertEqual(self.release_with("gate", 1, args), 1)
        self.assertEqual(self.calls().count("gate"), 1)
        # and the default one is still recorded as passed
        self.assertEqual(self.release_with("none", 0), 0)
        self.assertNotIn("gate", self.calls())

    def test_one_stage_runs_alone_as_the_release_runs_it(self):
        chain = self.chain()
        with mock.patch("sys.argv", ["release", "--stage", "audit-flags"]), \
                mock.patch.object(pipeline, "steps", return_value=chain):
            self.assertEqual(release.execute(), 0)
            self.assertEqual(self.calls(), ["audit-flags"])
            self.assertEqual(release.execute(), 0)
            self.assertEqual(self.calls(), [], "passed on the same inputs: skipped")


class ReleaseFlagCasesTest(unittest.TestCase):
    def check_flags_command(self, build_profiles: str) -> list[str]:
        [step] = [s for s in pipeline.steps("osd-only", build_profiles=build_profiles) if s.name == "check-flags"]
        return step.command[1:]

    def test_the_release_checks_the_compile_commands_of_its_build_profiles(self):
        # by default the release is built with LTO and PGO
        self.assertEqual(self.check_flags_command(""), ["a", "b", "c", "a-lto-pgo"])
        self.assertEqual(self.check_flags_command("pkg.ceph.lto pkg.ceph.pgo"), ["a", "b", "c", "a-lto-pgo"])
        self.assertEqual(self.check_flags_command("pkg.ceph.nopgo"), ["a", "b", "c", "a-lto"])
        self.assertEqual(self.check_flags_command("pkg.ceph.nolto"), ["a", "b", "c"])
        self.assertEqual(self.check_flags_command("pkg.ceph.nolto pkg.ceph.nopgo"), ["a", "b", "c"])


if __name__ == "__main__":
    unittest.main()
