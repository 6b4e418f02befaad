"""Rules files that extend another: bench/rules/replicated.toml judges the
gate's default rules and its own per-role ones, without copying the former."""
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from cephperf import paths
from cephperf.bench import verdict
from cephperf.bench.verdict import load_rules
from cephperf.common import StageError, load_toml


class ExtendsTest(unittest.TestCase):
    def test_replicated_judges_the_default_rules_then_each_role(self):
        default = load_toml(paths.RULES / "default.toml")
        replicated = load_rules(paths.RULES / "replicated.toml")
        self.assertEqual(replicated["stats"], default["stats"])
        self.assertEqual(replicated["rule"][:len(default["rule"])], default["rule"])
        self.assertEqual([r["metric"] for r in replicated["rule"][len(default["rule"]):]],
                         ["primary_instructions_per_op", "primary_est_cycles_per_op",
                          "replica_instructions_per_op", "replica_est_cycles_per_op"])
        self.assertNotIn("extends", replicated)

    def test_own_stats_win_and_a_file_without_extends_is_as_written(self):
        with tempfile.TemporaryDirectory() as tmp:
            rules = Path(tmp)
            (rules / "base.toml").write_text('[stats]\nconfidence = 0.95\nmin_pairs = 3\n'
                                            '[[rule]]\nmetric = "iops"\n')
            (rules / "child.toml").write_text('extends = "base"\n[stats]\nmin_pairs = 5\n'
                                             '[[rule]]\nmetric = "p99"\n')
            with mock.patch.object(verdict.paths, "RULES", rules):
                child = load_rules(rules / "child.toml")
                self.assertEqual(load_rules(rules / "base.toml"), load_toml(rules / "base.toml"))
        self.assertEqual(child["stats"], {"confidence": 0.95, "min_pairs": 5})
        self.assertEqual([r["metric"] for r in child["rule"]], ["iops", "p99"])

    def test_a_missing_parent_or_a_loop_is_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            rules = Path(tmp)
            (rules / "orphan.toml").write_text('extends = "gone"\n')
            (rules / "a.toml").write_text('extends = "b"\n')
            (rules / "b.toml").write_text('extends = "a"\n')
            with mock.patch.object(verdict.paths, "RULES", rules):
                with self.assertRaisesRegex(StageError, r"orphan\.toml: extends = \"gone\", but there is no .*gone\.toml"):
                    load_rules(rules / "orphan.toml")
                with self.assertRaisesRegex(StageError, r"extends itself .*a\.toml -> .*b\.toml -> .*a\.toml"):
                    load_rules(rules / "a.toml")


if __name__ == "__main__":
    unittest.main()
