"""From rounds to a kept report and an exit code: judging (paired), the
environment block, the report files, and the gate's last line.

Run and judge are apart: a saved report.json holds every round, so it can
be judged again with other rules (bench/gate --rejudge) without running
anything, and two reports of existing clusters can be judged against each
other (bench/compare).
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from .. import paths
from ..common import EXIT_ERROR, StageError, load_toml, write_atomic
from .diagnose import findings
from .functions import tables
from .paired import judge_paired
from .report import SCHEMA_VERSION, markdown, svg_chart

EXIT_PASS, EXIT_REGRESSION, EXIT_UNPROVEN = 0, 1, 3


def load_rules(path: Path, seen: tuple = ()) -> dict:
    """A rules file, with the rules of the file it names in `extends` (a name
    under bench/rules/, without .toml) before its own, and its [stats] over
    that file's: a variant's rules add to the gate's instead of copying them."""
    path = Path(path)
    if path.resolve() in seen:
        chain = " -> ".join(str(s) for s in (*seen, path.resolve()))
        raise StageError(f"{path}: extends itself ({chain}); remove the loop", EXIT_ERROR)
    rules = load_toml(path)
    parent_name = rules.pop("extends", None)
    if parent_name is None:
        return rules
    parent_path = paths.RULES / f"{parent_name}.toml"
    if not parent_path.is_file():
        raise StageError(f"{path}: extends = \"{parent_name}\", but there is no {parent_path}; "
                         "name a file of bench/rules/ without .toml", EXIT_ERROR)
    parent = load_rules(parent_path, (*seen, path.resolve()))
    return {**parent, **rules, "stats": {**parent.get("stats", {}), **rules.get("stats", {})},
            "rule": parent.get("rule", []) + rules.get("rule", [])}


def host_environment() -> dict:
    """What the numbers were taken on, beyond the packages (the rounds carry those)."""
    r = subprocess.run(["git", "-C", str(paths.REPO), "rev-parse", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(paths.REPO), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "unknown")
    return {"ceph_perf_commit": (r.stdout.strip() + ("+changes" if dirty else "")) if r.returncode == 0 else None,
            "kernel": os.uname().release, "cpu_model": cpu, "cores": os.cpu_count()}


def side_environment(records: list[dict], side: str) -> dict:
    first = next((r for r in records if r.get("side") == side), {})
    return {k: first.get(k) for k in ("versions", "osd_metadata", "layout")}


def new_run_dir(kind: str, label: str) -> Path:
    """A directory of its own for each run's report, never over an older one."""
    base = paths.reports(kind) / f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{label}"
    out, n = base, 1
    while out.exists():
        n += 1
        out = base.with_name(f"{base.name}.{n}")
    return out


def overall(j: dict) -> str:
    verdicts = [r["verdict"] for r in j["rules"] if r["verdict"] != "not measured"]
    # A regression shown stands even where another rule lacks data. A rule
    # without data, or a run in which no rule had rounds of its mode, is no
    # verdict at all: the gate could not measure what it judges.
    if "regression" in verdicts:
        return "regression"
    if "no data" in verdicts or not verdicts:
        return "no data"
    if not j["judged"]:
        return "not judged (smoke)"
    if all(v == "gain" for v in verdicts):
        return "gain"
    if "no difference shown" in verdicts:
        return "gain in part" if "gain" in verdicts else "no difference shown"
    return "within tolerance"


def judge_report(rep: dict, rules: dict, rules_file: Path) -> dict:
    """rep with its judgement and verdict (re)made from its rounds."""
    j = judge_paired(rep["records"], rules)
    diagnose_rules = load_toml(paths.RULES / "diagnose.toml")
    found = {f"round {r['round']} ({r['side']})": said for r in rep["records"]
             if r.get("diagnostics") and (said := findings(r, diagnose_rules))}
    return {**rep, "schema_version": SCHEMA_VERSION, "rules_file": str(rules_file), "judgement": j,
            "verdict": overall(j), "functions": tables(rep["records"]), "findings": found,
            "environment": {**rep.get("environment", {}),
                            "sides": {s: side_environment(rep["records"], s) for s in ("baseline", "candidate")}}}


def write_report(rep: dict, out: Path, link_latest: bool) -> None:
    """The report's files in `out`; link_latest (for a directory of new_run_dir's)
    points the `latest` beside it at it."""
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "report.json", json.dumps(rep, indent=2) + "\n")
    write_atomic(out / "report.md", markdown(rep))
    write_atomic(out / "chart.svg", svg_chart(rep))
    latest = out.parent / "latest"
    if link_latest and (latest.is_symlink() or not latest.exists()):
        latest.unlink(missing_ok=True)
        latest.symlink_to(out.name)


def finish(rep: dict, out: Path, strict: bool) -> int:
    """Print the rules' lines and the gate's last line; the exit code."""
    j = rep["judgement"]
    pairs = min((r.get("pairs", 0) for r in j["rules"] if r["verdict"] != "not measured"), default=0)
    for r in j["rules"]:
        if r.get("ratio") is not None:
            # the smallest regression this run fails at the rules' power, its tolerance included
            mde = f"; smallest detectable {r['mde']:.1%}" if r.get("mde") is not None else ""
            print(f"{r['metric']}: candidate/baseline {r['ratio']:.4f} [{r['ci'][0]:.4f}, {r['ci'][1]:.4f}] "
                  f"over {r['pairs']} pair(s){mde}: {r['verdict']}")
        elif r["verdict"] == "no data":
            print(f"{r['metric']}: no data (no pair of {r.get('mode', 'native')} rounds measured it)")
    v = rep["verdict"]
    where = f"({out}/report.md)"
    if v == "regression":
        print(f"gate: REGRESSION ({v}) {where}")
        return EXIT_REGRESSION
    if v == "no data":
        missing = [r["metric"] for r in j["rules"] if r["verdict"] == "no data"]
        print(f"gate: ERROR (could not run): no data for {', '.join(missing) if missing else 'any rule'} "
              f"(no round measured it) {where}")
        return EXIT_ERROR
    if v == "not judged (smoke)":
        print(f"gate: PASS (not judged: {pairs} round(s) per side is a smoke run; the rules need "
              f"{j['min_pairs']} for a verdict) {where}")
    else:
        print(f"gate: PASS ({v}) {where}")
    unproven = any(r["verdict"] == "no difference shown" or r["verdict"].startswith("not judged") for r in j["rules"])
    return EXIT_UNPROVEN if strict and unproven else EXIT_PASS


def publish(rep: dict, out: Path, strict: bool, link_latest: bool) -> int:
    """Write the report, show it, and give the gate's last line and exit code."""
    write_report(rep, out, link_latest)
    print((out / "report.md").read_text())
    return finish(rep, out, strict)
