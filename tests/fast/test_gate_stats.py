"""The gate's verdict on synthetic rounds: noise passes, a real regression fails."""
import random
import unittest

from tests.helpers import REPO

from cephperf.bench.stats import judge
from cephperf.common import load_toml

RULES = load_toml(REPO / "bench" / "rules" / "default.toml")


def rounds(base_iops, cand_iops, base_cpu, cand_cpu):
    recs = []
    for b, c, bc, cc in zip(base_iops, cand_iops, base_cpu, cand_cpu):
        recs += [{"side": "baseline", "iops": b, "osd_cpu_us_per_op": bc},
                 {"side": "candidate", "iops": c, "osd_cpu_us_per_op": cc}]
    return recs


class VerdictTest(unittest.TestCase):
    def test_same_build_with_10_percent_noise_passes(self):
        rng = random.Random(7)
        for trial in range(50):
            noise = lambda v: [v * rng.uniform(0.9, 1.1) for _ in range(5)]  # noqa: E731
            j = judge(rounds(noise(6000), noise(6000), noise(150), noise(150)), RULES)
            self.assertTrue(j["ok"], (trial, j["rules"]))

    def test_halved_iops_fails(self):
        j = judge(rounds([6000, 6300, 5800, 6100, 5900], [3000, 3100, 2900, 3050, 2950],
                         [150] * 5, [150] * 5), RULES)
        self.assertFalse(j["ok"])
        iops = next(r for r in j["rules"] if r["metric"] == "iops")
        self.assertEqual(iops["verdict"], "regression")
        self.assertLess(iops["ci"][1], 0.95)

    def test_more_cpu_per_op_fails(self):
        j = judge(rounds([6000] * 5, [6000] * 5, [150, 152, 149, 151, 150], [200, 205, 198, 202, 201]), RULES)
        cpu = next(r for r in j["rules"] if r["metric"] == "osd_cpu_us_per_op")
        self.assertEqual(cpu["verdict"], "regression")
        self.assertFalse(j["ok"])

    def test_one_round_per_side_is_not_judged(self):
        j = judge(rounds([6000], [3000], [150], [300]), RULES)
        self.assertFalse(j["judged"])
        self.assertTrue(all(r["verdict"].startswith("not judged") for r in j["rules"]))

    def test_missing_metric_is_not_a_pass(self):
        recs = [{"side": "baseline", "iops": 1}, {"side": "candidate", "iops": 1}]
        self.assertFalse(judge(recs, RULES)["ok"])


if __name__ == "__main__":
    unittest.main()
