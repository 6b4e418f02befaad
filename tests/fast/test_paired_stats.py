"""The paired verdict logic on synthetic rounds: a 3% regression under paired
noise fails, noise alone passes, a gain is named, and a run that shows nothing
states the smallest effect it could have detected."""
import math
import random
import unittest
from argparse import Namespace

from cephperf.bench.paired import judge_paired, log_ratios, t_quantile
from cephperf.stages.gate import DEFAULT_PAIRS, plan

RULES = {"stats": {"confidence": 0.95, "power": 0.8, "min_pairs": 3},
         "rule": [{"metric": "instructions_per_op", "better": "lower", "tolerance": 0.01}]}


def abba(rng: random.Random, pairs: int, effect: float, noise: float, drift: float = 0.0) -> list[dict]:
    """Rounds in ABBA order around 208,000 instructions per op, each with
    multiplicative noise, the whole run drifting by `drift` per round."""
    recs, n = [], 0
    for pair in range(1, pairs + 1):
        order = ("baseline", "candidate") if pair % 2 else ("candidate", "baseline")
        for side in order:
            level = 208_000 * (1 + effect if side == "candidate" else 1) * (1 + drift * n)
            recs.append({"pair": pair, "side": side, "instructions_per_op": level * rng.gauss(1, noise)})
            n += 1
    return recs


def verdict(recs):
    return judge_paired(recs, RULES)["rules"][0]


class PairedVerdictTest(unittest.TestCase):
    def test_t_quantiles(self):
        for df, p, want in ((4, 0.975, 2.776), (9, 0.975, 2.262), (4, 0.8, 0.941), (1, 0.975, 12.706)):
            self.assertAlmostEqual(t_quantile(p, df), want, places=3)

    def test_a_3_percent_regression_with_paired_noise_fails(self):
        rng = random.Random(3)
        verdicts = [verdict(abba(rng, 5, 0.03, 0.006, drift=0.002))["verdict"] for _ in range(300)]
        self.assertGreaterEqual(verdicts.count("regression"), 297, verdicts)

    def test_noise_alone_passes(self):
        rng = random.Random(4)
        results = [verdict(abba(rng, 5, 0.0, 0.006, drift=0.002)) for _ in range(300)]
        self.assertLessEqual(sum(r["verdict"] == "regression" for r in results), 3)
        self.assertTrue(all(r["ok"] for r in results if r["verdict"] != "regression"))

    def test_drift_cancels_between_pairs(self):
        # 1% per round of drift, no noise: ABBA leaves the estimate at 1 within rounding
        r = verdict(abba(random.Random(5), 6, 0.0, 0.0, drift=0.01))
        self.assertAlmostEqual(r["ratio"], 1.0, delta=0.005)

    def test_the_gates_default_plan_cancels_a_linear_drift(self):
        # The gate's own order of rounds, each mode's round k at e^(0.01 k), no
        # effect: a pair in A B order gives +0.01, one in B A order -0.01, and
        # whole ABBA blocks (an even number of pairs) sum to 0: a ratio of 1.
        args = Namespace(mode="both", rounds=DEFAULT_PAIRS, counted_rounds=DEFAULT_PAIRS)
        rounds = plan(args)
        recs = [{"pair": pair, "side": side, "mode": mode, "instructions_per_op": 208_000 * math.exp(0.01 * k)}
                for mode in ("native", "callgrind")
                for k, (_, pair, side) in enumerate(r for r in rounds if r[0] == mode)]
        for mode in ("native", "callgrind"):
            d = log_ratios(recs, "instructions_per_op", mode)
            self.assertEqual(len(d), DEFAULT_PAIRS)
            self.assertAlmostEqual(sum(d), 0.0, places=12, msg=f"{mode}: pairs' log ratios {d}")

    def test_a_gain_is_named(self):
        r = verdict(abba(random.Random(6), 5, -0.10, 0.006))
        self.assertEqual(r["verdict"], "gain")
        self.assertLess(r["ci"][1], 1)

    def test_no_difference_states_the_detectable_effect(self):
        r = verdict(abba(random.Random(7), 5, 0.0, 0.006))
        self.assertEqual(r["verdict"], "no difference shown")
        self.assertGreater(r["mde"], 0.003)
        self.assertLess(r["mde"], 0.03)

    def test_a_small_effect_within_tolerance_is_not_a_regression(self):
        # significant, but within the 1% tolerance
        r = verdict(abba(random.Random(8), 8, 0.005, 0.0005))
        self.assertLess(r["ci"][1], 1.01)
        self.assertEqual(r["verdict"], "within tolerance")
        self.assertTrue(judge_paired(abba(random.Random(8), 8, 0.005, 0.0005), RULES)["ok"])

    def test_too_few_pairs_are_not_judged(self):
        j = judge_paired(abba(random.Random(9), 2, 0.5, 0.0), RULES)
        self.assertFalse(j["judged"])
        self.assertTrue(j["ok"])

    def test_pairs_need_both_sides(self):
        recs = abba(random.Random(10), 3, 0.0, 0.0)
        self.assertEqual(len(log_ratios(recs[:-1], "instructions_per_op")), 2)
        self.assertAlmostEqual(math.exp(log_ratios(recs, "instructions_per_op")[0]), 1.0)

    def test_a_rule_pairs_only_its_own_modes_rounds(self):
        # a default gate runs native and counted rounds; both carry IOPS, and
        # the counted ones (under callgrind) must not enter the native rule
        native = [{"mode": "native", "pair": 1, "side": "baseline", "iops": 6000.0},
                  {"mode": "native", "pair": 1, "side": "candidate", "iops": 6000.0}]
        counted = [{"mode": "callgrind", "pair": 1, "side": "baseline", "iops": 100.0},
                   {"mode": "callgrind", "pair": 1, "side": "candidate", "iops": 50.0}]
        self.assertEqual(log_ratios(native + counted, "iops"), [0.0])
        self.assertAlmostEqual(math.exp(log_ratios(native + counted, "iops", "callgrind")[0]), 0.5)


if __name__ == "__main__":
    unittest.main()
