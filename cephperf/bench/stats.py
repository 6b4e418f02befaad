"""Verdicts that noise does not decide: medians and bootstrap confidence intervals."""
from __future__ import annotations

import random
import statistics


def bootstrap_ratio_ci(base: list[float], cand: list[float], confidence: float, resamples: int,
                       seed: int) -> tuple[float, float]:
    """CI of median(cand) / median(base), resampling each side's rounds."""
    rng = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        b = statistics.median(rng.choices(base, k=len(base)))
        c = statistics.median(rng.choices(cand, k=len(cand)))
        if b:
            ratios.append(c / b)
    ratios.sort()
    lo_i = int((1 - confidence) / 2 * len(ratios))
    hi_i = min(len(ratios) - 1, int((1 + confidence) / 2 * len(ratios)))
    return ratios[lo_i], ratios[hi_i]


def judge(records: list[dict], rules: dict) -> dict:
    """Apply the rules to per-round records of both sides."""
    st = rules.get("stats", {})
    conf, n, seed = st.get("confidence", 0.95), st.get("resamples", 4000), st.get("seed", 1)
    min_rounds = st.get("min_rounds", 3)
    metrics, verdicts = {}, []
    for rule in rules["rule"]:
        m = rule["metric"]
        base = [r[m] for r in records if r["side"] == "baseline" and r.get(m) is not None]
        cand = [r[m] for r in records if r["side"] == "candidate" and r.get(m) is not None]
        if not base or not cand:
            verdicts.append({**rule, "verdict": "no data", "ok": False})
            continue
        bm, cm = statistics.median(base), statistics.median(cand)
        ratio = cm / bm if bm else float("inf")
        lo, hi = bootstrap_ratio_ci(base, cand, conf, n, seed)
        metrics[m] = {"baseline_median": bm, "candidate_median": cm, "ratio": ratio, "ci": [lo, hi],
                      "rounds": [len(base), len(cand)]}
        if min(len(base), len(cand)) < min_rounds:
            # One or two rounds give no interval worth the name: noise would decide.
            verdicts.append({**rule, "ratio": ratio, "ci": [lo, hi], "ok": True,
                             "verdict": f"not judged: fewer than {min_rounds} rounds per side"})
            continue
        tol = rule["tolerance"]
        if rule["better"] == "higher":
            regressed = hi < 1 - tol
            inconclusive = not regressed and lo < 1 - tol
        else:
            regressed = lo > 1 + tol
            inconclusive = not regressed and hi > 1 + tol
        verdict = "regression" if regressed else ("pass (inconclusive: the interval crosses the threshold)"
                                                  if inconclusive else "pass")
        verdicts.append({**rule, "ratio": ratio, "ci": [lo, hi], "verdict": verdict, "ok": not regressed})
    return {"metrics": metrics, "rules": verdicts, "confidence": conf,
            "judged": not any(v["verdict"].startswith("not judged") for v in verdicts),
            "ok": all(v["ok"] for v in verdicts)}
