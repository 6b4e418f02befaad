"""Paired statistics for the gate: per-pair log ratios, a t-interval, and
the smallest regression a run would have failed.

Rounds run in ABBA blocks (A B, B A, A B, ...): each adjacent
baseline/candidate pair gives one log ratio, and drift over the run cancels
between pairs that run in opposite orders. The interval of the mean log
ratio uses Student's t with n-1 degrees of freedom; the stdlib has no t
distribution, so its quantiles come from the regularised incomplete beta
function (a continued fraction, as in Numerical Recipes) by bisection.
"""
from __future__ import annotations

import math
import statistics


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1 + aa * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < 1e-12:
            break
    return h


def _betai(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b)."""
    if x <= 0 or x >= 1:
        return max(0.0, min(1.0, x))
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1 - x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1 - front * _betacf(b, a, 1 - x) / b


def t_cdf(t: float, df: int) -> float:
    tail = 0.5 * _betai(df / 2, 0.5, df / (df + t * t))
    return 1 - tail if t > 0 else tail


def t_quantile(p: float, df: int) -> float:
    """The t value below which lies probability p (bisection on the CDF)."""
    lo, hi = -1e3, 1e3
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_cdf(mid, df) < p else (lo, mid)
    return (lo + hi) / 2


def log_ratios(records: list[dict], metric: str, mode: str = "native") -> list[float]:
    """log(candidate / baseline) of each pair of `mode`'s rounds that has the
    metric on both sides. Rounds of the other mode are not this rule's, even
    where they carry the metric: IOPS under callgrind are some 60 times lower."""
    by_pair: dict[int, dict[str, float]] = {}
    for r in records:
        v = r.get(metric)
        if isinstance(v, (int, float)) and v > 0 and "pair" in r and r.get("mode", "native") == mode:
            by_pair.setdefault(r["pair"], {})[r["side"]] = v
    return [math.log(p["candidate"] / p["baseline"]) for _, p in sorted(by_pair.items())
            if "baseline" in p and "candidate" in p]


def spread_from_median(records: list[dict], metric: str, mode: str) -> dict[str, float]:
    """Per side, the largest relative distance of one round's value from the
    side's median over the rounds of `mode`: how steady the instrument was."""
    out = {}
    for side in ("baseline", "candidate"):
        vals = [r[metric] for r in records if r.get("side") == side and r.get("mode", "native") == mode
                and isinstance(r.get(metric), (int, float)) and r[metric] > 0]
        if vals:
            med = statistics.median(vals)
            out[side] = max(abs(v / med - 1) for v in vals)
    return out


def paired_interval(d: list[float], confidence: float, power: float, tolerance: float = 0.0,
                    better: str = "lower") -> dict:
    """Ratio (the geometric mean of the pairs' ratios), its t-interval, and
    the smallest regression the gate fails with the given power, as ratios."""
    n = len(d)
    mean = statistics.fmean(d)
    if n < 2:
        return {"ratio": math.exp(mean), "ci": [0.0, math.inf], "pairs": n, "pair_sd": None, "mde": None}
    sd = statistics.stdev(d)  # the sample SD (n - 1 in its denominator): the pairs are a sample
    se = sd / math.sqrt(n)
    t_ci = t_quantile((1 + confidence) / 2, n - 1)
    mde = smallest_failed_regression(se, t_ci, t_quantile(power, n - 1), tolerance, better)
    return {"ratio": math.exp(mean), "ci": [math.exp(mean - t_ci * se), math.exp(mean + t_ci * se)],
            "pairs": n, "pair_sd": sd, "mde": mde}


def smallest_failed_regression(se: float, t_ci: float, t_power: float, tolerance: float,
                               better: str) -> float | None:
    """The regression (a fraction of the baseline, in the rule's bad direction)
    that the gate fails with the power t_power stands for. The gate fails a
    rule when the mean log ratio lies beyond both the interval's half-width
    t_ci * se and the tolerance; a true effect that much plus t_power * se
    beyond 0 gets there with that power (Student's t for the normal, as the
    interval does). A run whose interval is narrower than the tolerance can
    fail nothing smaller than the tolerance, however steady its rounds.
    None where no regression can fail the rule (higher is better, and a
    tolerance of 100% or more)."""
    if better != "lower" and tolerance >= 1:
        return None
    bound = math.log1p(tolerance) if better == "lower" else -math.log1p(-tolerance)
    effect = max(t_ci * se, bound) + t_power * se
    # lower is better: the candidate higher by this much; higher is better: lower by it
    return math.expm1(effect) if better == "lower" else -math.expm1(-effect)


def verdict(rule: dict, est: dict) -> str:
    """regression: the interval excludes 1 on the bad side and the estimate is
    beyond the tolerance; gain: the interval excludes 1 on the good side;
    within tolerance: it excludes 1 on the bad side, the estimate within the
    tolerance (a difference shown, and allowed); no difference shown: the
    interval holds 1."""
    lo, hi = est["ci"]
    worse_is_up = rule["better"] == "lower"
    bad_side = lo > 1 if worse_is_up else hi < 1
    good_side = hi < 1 if worse_is_up else lo > 1
    beyond = est["ratio"] > 1 + rule["tolerance"] if worse_is_up else est["ratio"] < 1 - rule["tolerance"]
    if bad_side and beyond:
        return "regression"
    if good_side:
        return "gain"
    return "within tolerance" if bad_side else "no difference shown"


def judge_paired(records: list[dict], rules: dict) -> dict:
    """Every rule of the rules file on the paired rounds; the run's verdict."""
    st = rules.get("stats", {})
    conf, power, min_pairs = st.get("confidence", 0.95), st.get("power", 0.80), st.get("min_pairs", 3)
    out = []
    modes = {r.get("mode", "native") for r in records}
    for rule in rules["rule"]:
        if rule.get("mode", "native") not in modes:
            # that kind of round was not run (a native-only gate has no instruction counts)
            out.append({**rule, "verdict": "not measured", "ok": True})
            continue
        d = log_ratios(records, rule["metric"], rule.get("mode", "native"))
        if not d:
            out.append({**rule, "verdict": "no data", "ok": False})
            continue
        est = {**paired_interval(d, conf, power, rule["tolerance"], rule["better"]),
               "spread": spread_from_median(records, rule["metric"], rule.get("mode", "native"))}
        if len(d) < min_pairs:
            # One or two pairs give no interval worth the name: noise would decide.
            out.append({**rule, **est, "ok": True, "verdict": f"not judged: fewer than {min_pairs} pairs"})
            continue
        v = verdict(rule, est)
        out.append({**rule, **est, "verdict": v, "ok": v != "regression"})
    return {"rules": out, "confidence": conf, "power": power, "min_pairs": min_pairs,
            "judged": not any(r["verdict"].startswith("not judged") for r in out)
            and any(r["verdict"] != "not measured" for r in out),
            "ok": all(r["ok"] for r in out)}
