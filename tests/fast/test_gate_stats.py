"""The gate's default rules on synthetic paired rounds: noise passes, a real regression fails."""
import random
import unittest

from tests.helpers import REPO

from cephperf.bench.paired import judge_paired as judge
from cephperf.common import load_toml

RULES = load_toml(REPO / "bench" / "rules" / "default.toml")


def rounds(base_iops, cand_iops, base_cpu, cand_cpu):
    recs = []
    for pair, (b, c, bc, cc) in enumerate(zip(base_iops, cand_iops, base_cpu, cand_cpu), 1):
        recs += [{"pair": pair, "side": "baseline", "iops": b, "osd_cpu_us_per_op": bc},
                 {"pair": pair, "side": "candidate", "iops": c, "osd_cpu_us_per_op": cc}]
    return recs


class VerdictTest(unittest.TestCase):
    def test_same_build_with_8_percent_noise_passes(self):
        # wall-clock rounds on these machines: about 8% SD between neighbours.
        # A two-sided 95% interval lets noise cross on the bad side 2.5% of
        # the time at most; the tolerance must be crossed too for a regression.
        rng = random.Random(7)
        fails = 0
        for _ in range(200):
            noise = lambda v: [v * rng.gauss(1, 0.08) for _ in range(5)]  # noqa: E731
            fails += not judge(rounds(noise(6000), noise(6000), noise(150), noise(150)), RULES)["ok"]
        self.assertLessEqual(fails, 200 * 0.05)

    def test_halved_iops_fails(self):
        j = judge(rounds([6000, 6300, 5800, 6100, 5900], [3000, 3100, 2900, 3050, 2950],
                         [150] * 5, [150] * 5), RULES)
        self.assertFalse(j["ok"])
        iops = next(r for r in j["rules"] if r["metric"] == "iops")
        self.assertEqual(iops["verdict"], "regression")
        self.assertLess(iops["ci"][1], 1)

    def test_more_cpu_per_op_fails(self):
        j = judge(rounds([6000] * 5, [6000] * 5, [150, 152, 149, 151, 150], [200, 205, 198, 202, 201]), RULES)
        cpu = next(r for r in j["rules"] if r["metric"] == "osd_cpu_us_per_op")
        self.assertEqual(cpu["verdict"], "regression")
        self.assertFalse(j["ok"])

    def test_one_round_per_side_is_not_judged(self):
        j = judge(rounds([6000], [3000], [150], [300]), RULES)
        self.assertFalse(j["judged"])
        measured = [r for r in j["rules"] if r["verdict"] != "not measured"]  # no instruction-counted rounds here
        self.assertEqual([r["metric"] for r in measured], ["iops", "osd_cpu_us_per_op"])
        self.assertTrue(all(r["verdict"].startswith("not judged") for r in measured))

    def test_instruction_rule_applies_to_counted_rounds(self):
        recs = [{**r, "mode": "callgrind", "osd_instructions_per_op": 208_000 * (1.03 if r["side"] == "candidate" else 1)
                 * (1 + 0.001 * r["pair"])} for r in rounds([6000] * 4, [6000] * 4, [150] * 4, [150] * 4)]
        j = judge(recs, RULES)
        rule = next(r for r in j["rules"] if r["metric"] == "osd_instructions_per_op")
        self.assertEqual(rule["verdict"], "regression")
        self.assertFalse(j["ok"])

    def test_missing_metric_is_not_a_pass(self):
        recs = [{"side": "baseline", "iops": 1}, {"side": "candidate", "iops": 1}]
        self.assertFalse(judge(recs, RULES)["ok"])


if __name__ == "__main__":
    unittest.main()
