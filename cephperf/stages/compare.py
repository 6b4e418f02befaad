"""bench/compare: judge two reports of existing clusters against each other.

  bench/compare BASELINE/report.json CANDIDATE/report.json [--rules FILE] [--out DIR] [--strict]

Each report is one `bench/gate --cluster ...` run (its rounds measured
against one existing cluster, no verdict). As CBT's compare.py judges two
archives, this pairs the two runs' rounds by their order (round i of one
with round i of the other) and judges them with the gate's rules and
statistics; the report goes to --out (default: a new directory under
build/reports/compare/). Rounds measured at different times pair less well
than the gate's own ABBA rounds: drift between the two runs is not cancelled.

Exit 0 pass, 1 regression, 2 could not run, 3 (--strict) nothing shown.
"""
import argparse
import json
from pathlib import Path

from cephperf import paths
from cephperf.bench.verdict import host_environment, judge_report, load_rules, new_run_dir, publish
from cephperf.common import EXIT_ERROR, StageError, main_wrapper


def external_rounds(path: Path, side: str) -> tuple[dict, list[dict]]:
    try:
        rep = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise StageError(f"{path}: not a JSON report: {e}", EXIT_ERROR)
    records = rep.get("records") or []
    if not records or any(r.get("side") != "external" for r in records):
        raise StageError(f"{path}: not a report of `bench/gate --cluster` rounds", EXIT_ERROR)
    return rep, [{**r, "side": side, "pair": i + 1} for i, r in enumerate(records)]


def execute():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("baseline", type=Path)
    p.add_argument("candidate", type=Path)
    p.add_argument("--rules", type=Path, default=paths.RULES / "default.toml")
    p.add_argument("--out", type=Path)
    p.add_argument("--strict", action="store_true")
    args = p.parse_args()
    base, base_recs = external_rounds(args.baseline, "baseline")
    cand, cand_recs = external_rounds(args.candidate, "candidate")
    if base.get("profile") != cand.get("profile"):
        raise StageError(f"the reports ran different profiles ({base.get('profile')} and {cand.get('profile')})",
                         EXIT_ERROR)
    rep = {"profile": base["profile"], "description": "existing clusters", "variant": "-",
           "rounds": min(len(base_recs), len(cand_recs)),
           "sides": {"baseline": {"source": f"{base.get('cluster')} ({args.baseline})"},
                     "candidate": {"source": f"{cand.get('cluster')} ({args.candidate})"}},
           "records": base_recs + cand_recs, "environment": {"host": host_environment()}}
    out = args.out or new_run_dir("compare", base["profile"])
    rep = judge_report(rep, load_rules(args.rules), args.rules)
    return publish(rep, out, args.strict, link_latest=args.out is None)


def main():
    main_wrapper(execute)
