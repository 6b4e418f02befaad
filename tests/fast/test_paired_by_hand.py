"""The gate's paired statistics pinned to numbers worked out by hand: the
interval of the ratio, the degrees of freedom, and the smallest regression a
run fails (its power term and its tolerance). Each case's working is beside
it; the t quantiles are the tables' (t(0.975, 2) = 4.302653, t(0.975, 3) =
3.182446; t(0.80, 2) = 1.060660, t(0.80, 3) = 0.978472). A gate that took n
for n - 1 degrees of freedom, the population SD for the sample's, or left
out the power term gets other numbers, several decimals off."""
import json
import math
import subprocess
import tempfile
import unittest
from pathlib import Path

from tests.helpers import REPO

from cephperf.bench.paired import judge_paired
from cephperf.common import load_toml

RULES = load_toml(REPO / "bench" / "rules" / "default.toml")  # 95%, 80% power; IOPS 5%, instructions 1%
# Noise the two rounds of a pair share (the machine's state at the time): it
# moves both sides, and the pair's log ratio keeps only its own part.
SHARED = (0.004, -0.006, 0.0, 0.003)


def rounds(metric: str, mode: str, log_ratios: list[float], level: float) -> list[dict]:
    """Rounds in ABBA order whose pairs have exactly these log ratios
    (candidate/baseline), around `level`, each pair moved by SHARED noise."""
    recs = []
    for i, d in enumerate(log_ratios):
        base = level * math.exp(SHARED[i % len(SHARED)])
        sides = {"baseline": base, "candidate": base * math.exp(d)}
        for side in (("baseline", "candidate") if i % 2 == 0 else ("candidate", "baseline")):
            recs.append({"round": len(recs) + 1, "pair": i + 1, "side": side, "mode": mode, metric: sides[side]})
    return recs


def rule(records: list[dict], metric: str) -> dict:
    return next(r for r in judge_paired(records, RULES)["rules"] if r["metric"] == metric)


COUNTED = "osd_instructions_per_op"

# Case A, a regression in instructions per op (lower is better, tolerance 1%):
#   log ratios d = 0.020, 0.035, 0.005, 0.020 (n = 4)
#   mean = 0.080 / 4 = 0.020; ratio = e^0.020 = 1.020201
#   deviations 0, 0.015, -0.015, 0; sum of squares 0.00045
#   sample SD s = sqrt(0.00045 / 3) = 0.0122474 (population SD: sqrt(0.00045 / 4) = 0.0106066)
#   se = s / sqrt(4) = 0.0061237
#   t(0.975, 3) = 3.182446; half-width = 3.182446 * 0.0061237 = 0.0194884
#   interval e^(0.020 -+ 0.0194884) = [e^0.0005116, e^0.0394884] = [1.000512, 1.040278]
#   (with 4 degrees of freedom, t = 2.776445: lower end 1.003002; with the population SD 1.003127)
#   the interval lies above 1 and the ratio beyond 1.01: a regression
#   smallest failed regression: max(half-width 0.0194884, ln 1.01 = 0.0099503) = 0.0194884,
#   plus the power term t(0.80, 3) * se = 0.978472 * 0.0061237 = 0.0059919: 0.0254803;
#   e^0.0254803 - 1 = 0.025808 (without the power term: 0.019680)
CASE_A = [0.020, 0.035, 0.005, 0.020]

# Case B, three pairs: 2 degrees of freedom, where n's would give 3 (instructions, 1%):
#   d = 0.01, 0.02, 0.06; mean 0.03; ratio e^0.03 = 1.030455
#   deviations -0.02, -0.01, 0.03; sum of squares 0.0014
#   s = sqrt(0.0014 / 2) = 0.0264575; se = s / sqrt(3) = 0.0152753
#   t(0.975, 2) = 4.302653; half-width = 0.0657241
#   interval [e^-0.0357241, e^0.0957241] = [0.964906, 1.100455]: holds 1, no difference shown
#   (t(0.975, 3) = 3.182446 would give a lower end of 0.981559)
#   smallest failed regression: 0.0657241 + t(0.80, 2) * se = 0.0657241 + 1.060660 * 0.0152753
#   = 0.0819260; e^0.0819260 - 1 = 0.085375
CASE_B = [0.01, 0.02, 0.06]

# Case C, steady counted rounds: the tolerance, not the interval, bounds what fails:
#   d = 0.001, -0.002, 0.003, -0.002; mean 0; sum of squares 18e-6
#   s = sqrt(18e-6 / 3) = 0.0024495; se = 0.0012247
#   half-width = 3.182446 * 0.0012247 = 0.0038977: interval [0.996110, 1.003905]
#   smallest failed regression: max(0.0038977, ln 1.01 = 0.0099503) + 0.978472 * 0.0012247
#   = 0.0099503 + 0.0011984 = 0.0111487; e^0.0111487 - 1 = 0.011211
#   (without the power term: exactly the tolerance, 0.010000; with the population SD 0.011049)
CASE_C = [0.001, -0.002, 0.003, -0.002]

# Case D, IOPS (higher is better, tolerance 5%), wall-clock noise:
#   d = 0.05, -0.10, 0.02, -0.07; mean -0.025; ratio e^-0.025 = 0.975310
#   deviations 0.075, -0.075, 0.045, -0.045; sum of squares 0.0153
#   s = sqrt(0.0153 / 3) = 0.0714143; se = 0.0357071
#   half-width = 3.182446 * 0.0357071 = 0.1136361; interval [e^-0.1386361, e^0.0886361] = [0.870545, 1.092683]
#   smallest failed drop: max(0.1136361, -ln 0.95 = 0.0512933) + 0.978472 * 0.0357071
#   = 0.1485745; 1 - e^-0.1485745 = 0.138064 (without the power term 0.107417)
CASE_D = [0.05, -0.10, 0.02, -0.07]


class HandComputedTest(unittest.TestCase):
    def assertInterval(self, r: dict, ratio: float, lo: float, hi: float):
        self.assertAlmostEqual(r["ratio"], ratio, places=5)
        self.assertAlmostEqual(r["ci"][0], lo, places=5, msg=f"interval {r['ci']}")
        self.assertAlmostEqual(r["ci"][1], hi, places=5, msg=f"interval {r['ci']}")

    def test_interval_of_a_regression(self):
        r = rule(rounds(COUNTED, "callgrind", CASE_A, 208_000), COUNTED)
        self.assertEqual(r["pairs"], 4)
        self.assertAlmostEqual(r["pair_sd"], 0.0122474, places=6)  # the sample SD
        self.assertInterval(r, 1.020201, 1.000512, 1.040278)
        self.assertEqual(r["verdict"], "regression")

    def test_smallest_failed_regression_includes_the_power_term(self):
        r = rule(rounds(COUNTED, "callgrind", CASE_A, 208_000), COUNTED)
        self.assertAlmostEqual(r["mde"], 0.025808, places=5)

    def test_three_pairs_have_two_degrees_of_freedom(self):
        r = rule(rounds(COUNTED, "callgrind", CASE_B, 208_000), COUNTED)
        self.assertEqual(r["pairs"], 3)
        self.assertInterval(r, 1.030455, 0.964906, 1.100455)
        self.assertEqual(r["verdict"], "no difference shown")
        self.assertAlmostEqual(r["mde"], 0.085375, places=5)

    def test_steady_rounds_fail_the_tolerance_plus_the_power_term(self):
        r = rule(rounds(COUNTED, "callgrind", CASE_C, 208_000), COUNTED)
        self.assertInterval(r, 1.0, 0.996110, 1.003905)
        self.assertEqual(r["verdict"], "no difference shown")
        self.assertAlmostEqual(r["mde"], 0.011211, places=5)

    def test_a_higher_is_better_rule_counts_its_regression_as_a_drop(self):
        r = rule(rounds("iops", "native", CASE_D, 6000), "iops")
        self.assertInterval(r, 0.975310, 0.870545, 1.092683)
        self.assertEqual(r["verdict"], "no difference shown")
        self.assertAlmostEqual(r["mde"], 0.138064, places=5)

    def test_the_gate_prints_them(self):
        """bench/gate --rejudge on case A's rounds: the rule's line and the exit code."""
        with tempfile.TemporaryDirectory() as tmp:
            report = Path(tmp) / "report.json"
            report.write_text(json.dumps({
                "profile": "4k-write", "description": "hand-computed rounds", "variant": "defaults", "rounds": 4,
                "sides": {"baseline": {"source": "debian"}, "candidate": {"source": "debian"}},
                "records": rounds(COUNTED, "callgrind", CASE_A, 208_000)}))
            r = subprocess.run([str(REPO / "bench" / "gate"), "--rejudge", str(report),
                                "--out", str(Path(tmp) / "out")], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        said = [line for line in r.stdout.splitlines() if line.startswith(f"{COUNTED}: ")]
        self.assertEqual(said, [f"{COUNTED}: candidate/baseline 1.0202 [1.0005, 1.0403] over 4 pair(s); "
                                "smallest detectable 2.6%: regression"])


if __name__ == "__main__":
    unittest.main()
