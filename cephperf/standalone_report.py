"""ci/upstream-standalone's report: each test's results and seconds per mode,
its verdict per mode, and per script the seconds each mode took."""
from __future__ import annotations

from .standalone import FAIL, KNOWN, MODES, PASS, UNJUDGED, judge, mixed_note

NOT_RUN = "not run: stock does not pass it"


def verdicts(tests: list[dict], results: dict[str, dict[str, dict]], modes: list[str],
             known: dict[tuple[str, str], str]) -> list[dict]:
    """One row per test: its result in each mode that ran and the verdict of
    each mode (stock's own, then each other mode's against stock)."""
    rows = []
    for t in tests:
        cause = known.get((t["script"], t["test"]))
        stock = results["stock"][t["id"]]
        row = {**t, "known_cause": cause, "results": {}, "verdicts": {}, "notes": []}
        for mode in ["stock", *modes]:
            got = results.get(mode, {}).get(t["id"])
            row["results"][mode] = got or {"result": NOT_RUN, "seconds": 0}
            row["verdicts"][mode] = judge(stock, None if mode == "stock" else got or row["results"][mode], cause)
        if cause and stock["result"] == "passed":
            row["notes"].append("listed as a known stock failure, yet passed on stock here: is the entry stale?")
        if "mixed" in modes and results.get("mixed", {}).get(t["id"]):
            row["notes"].append("mixed: " + mixed_note(results["mixed"][t["id"]].get("osd_calls", {})))
        ran = results.get("candidate", {}).get(t["id"])
        if "candidate" in modes and ran and not ran.get("osd_calls", {}).get("candidate", {}).get("run"):
            row["notes"].append("candidate: no OSD started through the wrapper (the test ran stock's or none)")
        rows.append(row)
    return rows


def script_seconds(rows: list[dict]) -> dict[str, dict[str, float]]:
    """Per script, per mode, the seconds its tests took (cached stock results count their recorded time)."""
    out: dict[str, dict[str, float]] = {}
    for r in rows:
        for mode, got in r["results"].items():
            out.setdefault(r["script"], {}).setdefault(mode, 0)
            out[r["script"]][mode] = round(out[r["script"]][mode] + got.get("seconds", 0), 1)
    return out


def cell(result: dict, verdict: str, mode: str) -> str:
    text = f"{result['result']}, {result['seconds']:.0f} s" if result.get("seconds") else result["result"]
    if result.get("cached"):
        text += " (cached)"
    if mode != "stock" and verdict not in (PASS, KNOWN):
        text = f"**{verdict.upper() if verdict == 'fail' else verdict}**: {text}"
    return text


def markdown(report: dict) -> str:
    modes = ["stock", *[m for m in MODES if m in report["modes"] and m != "stock"]]
    lines = [f"# upstream-standalone: {report['verdict'].upper()}", "",
             f"Upstream's qa/standalone from `{report['tree']}`, each TEST_ function alone, "
             f"list `{report['list']}`; {report['wall_seconds']} s in all.", ""]
    for mode, v in report["versions"].items():
        lines.append(f"- {mode}: `{v}`")
    if report.get("candidate"):
        lines.append(f"- candidate: `{report['candidate']['source']}` (sha256 {report['candidate']['sha256'][:16]}…)")
    lines += ["", "## Seconds per script", "", "| script | " + " | ".join(modes) + " |",
              "|---|" + "---|" * len(modes)]
    for script, secs in report["script_seconds"].items():
        lines.append(f"| {script} | " + " | ".join(f"{secs.get(m, 0):.0f}" for m in modes) + " |")
    lines += ["", "## Tests", "", "| test | " + " | ".join(modes) + " | verdict |", "|---|" + "---|" * (len(modes) + 1)]
    for r in report["tests"]:
        # the test's verdict: its worst in any mode
        verdict = next(v for v in (FAIL, UNJUDGED, KNOWN, PASS) if v in r["verdicts"].values())
        lines.append(f"| {r['id']} | " + " | ".join(cell(r["results"][m], r["verdicts"][m], m) for m in modes)
                     + f" | {verdict} |")
    notes = [(r["id"], n) for r in report["tests"] for n in r["notes"]]
    known = [r for r in report["tests"] if r["known_cause"]]
    if known:
        lines += ["", "## Known stock failures", ""] + [f"- {r['id']}: {r['known_cause']}" for r in known]
    if notes:
        lines += ["", "## Notes", ""] + [f"- {i}: {n}" for i, n in notes]
    failed = [(r["id"], m, r["results"][m]) for r in report["tests"] for m in modes if r["results"][m].get("tail")]
    for test, mode, got in failed:
        lines += ["", f"## {test} ({mode}): {got['result']}", "", "```", got["tail"][-3000:], "```",
                  f"(its output and the daemons' logs: logs/{mode}/{test}/)"]
    return "\n".join(lines) + "\n"
