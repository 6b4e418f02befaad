"""cephperf.stage.produce: an output is swapped in whole and stamped; an
interrupted stage leaves no half-written output; a resumable one is taken up
again only by a run with the same inputs."""
import tempfile
import unittest
from pathlib import Path

from cephperf.stage import RESUME_MARK, produce


class Interrupted(Exception):
    pass


def two_steps(calls: list, fail_at_check: bool):
    """A make() with a long first step that leaves a marker, and a check."""
    def make(new: Path) -> dict:
        if not (new / "built").is_file():
            calls.append("build")
            (new / "result").write_text("made")
            (new / "built").write_text("")
        calls.append("check")
        if fail_at_check:
            raise Interrupted()
        (new / "built").unlink()
        return {"ok": True}
    return make


class ProduceTest(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.out = Path(tmp.name) / "out"
        self.new = self.out.with_name(".out.new")

    def test_an_interrupted_stage_leaves_nothing_and_starts_over(self):
        calls = []
        with self.assertRaises(Interrupted):
            produce(self.out, "k1", two_steps(calls, True))
        self.assertFalse(self.out.exists())
        self.assertFalse(self.new.exists())
        produce(self.out, "k1", two_steps(calls, False))
        self.assertEqual(calls, ["build", "check", "build", "check"])

    def test_a_resumable_stage_is_taken_up_at_its_marker_with_the_same_inputs(self):
        calls = []
        with self.assertRaises(Interrupted):
            produce(self.out, "k1", two_steps(calls, True), resumable=True)
        self.assertFalse(self.out.exists())
        self.assertEqual((self.new / RESUME_MARK).read_text(), "k1")
        stamp = produce(self.out, "k1", two_steps(calls, False), resumable=True)
        self.assertEqual(calls, ["build", "check", "check"])
        self.assertEqual(stamp["inputs"], "k1")
        self.assertEqual((self.out / "result").read_text(), "made")
        self.assertFalse((self.out / RESUME_MARK).exists())
        self.assertFalse(self.new.exists())
        # up to date now: nothing is made
        produce(self.out, "k1", two_steps(calls, False), resumable=True)
        self.assertEqual(len(calls), 3)

    def test_other_inputs_or_force_discard_an_unfinished_output(self):
        for second in ({"key": "k2", "force": False}, {"key": "k1", "force": True}):
            with self.subTest(**second):
                calls = []
                with self.assertRaises(Interrupted):
                    produce(self.out, "k1", two_steps(calls, True), resumable=True)
                produce(self.out, second["key"], two_steps(calls, False), resumable=True, force=second["force"])
                self.assertEqual(calls, ["build", "check", "build", "check"])

    def test_a_change_to_what_only_the_checks_read_resumes_at_the_checks(self):
        calls = []
        with self.assertRaises(Interrupted):
            produce(self.out, "build1+rules1", two_steps(calls, True), resumable=True, resume_key="build1")
        self.assertEqual((self.new / RESUME_MARK).read_text(), "build1")
        stamp = produce(self.out, "build1+rules2", two_steps(calls, False), resumable=True, resume_key="build1")
        self.assertEqual(calls, ["build", "check", "check"])
        self.assertEqual(stamp["inputs"], "build1+rules2")
        # other inputs of the long step start over
        with self.assertRaises(Interrupted):
            produce(self.out, "build2+rules2", two_steps(calls, True), resumable=True, resume_key="build2")
        produce(self.out, "build3+rules2", two_steps(calls, False), resumable=True, resume_key="build3")
        self.assertEqual(calls, ["build", "check", "check", "build", "check", "build", "check"])

    def test_an_unfinished_output_without_the_mark_is_never_resumed(self):
        self.new.mkdir(parents=True)
        (self.new / "built").write_text("")  # left by a run of a non-resumable version
        calls = []
        produce(self.out, "k1", two_steps(calls, False), resumable=True)
        self.assertEqual(calls, ["build", "check"])


if __name__ == "__main__":
    unittest.main()
