"""bench/diagnose: the cause of a slow run, named with its numbers.

  bench/diagnose REPORT.json [--rules FILE]

Reads a gate report's native rounds and states, per round, what
bench/rules/diagnose.toml calls a finding: unaligned overwrites (BlueStore's
penalty reads per write), a saturated OSD thread, debug gather levels above
their defaults, a full or near-full device, deferred writes piling up. Each
finding gives the numbers behind it. Every native gate round records what
this needs (cephperf/runtime/diagnostics.py).

Exit 0 with no finding, 1 with one or more, 2 when the report cannot be read.
"""
import argparse
import json
from pathlib import Path

from cephperf import paths
from cephperf.bench.diagnose import findings
from cephperf.common import StageError, EXIT_ERROR, EXIT_FAIL, load_toml, main_wrapper

DEFAULT_RULES = paths.RULES / "diagnose.toml"


def diagnose_report(rep: dict, rules: dict) -> list[tuple[dict, list[dict]]]:
    """(round, its findings) of every round that recorded diagnostics."""
    return [(r, findings(r, rules)) for r in rep.get("records", []) if r.get("diagnostics")]


def execute():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("report", type=Path, help="a bench/gate report.json")
    p.add_argument("--rules", type=Path, default=DEFAULT_RULES)
    args = p.parse_args()
    try:
        rep = json.loads(args.report.read_text())
    except json.JSONDecodeError as e:
        raise StageError(f"{args.report}: not a JSON report: {e}", EXIT_ERROR)
    rounds = diagnose_report(rep, load_toml(args.rules))
    if not rounds:
        raise StageError(f"{args.report}: no round recorded diagnostics (native rounds of a gate "
                         "run by this version do)", EXIT_ERROR)
    found = 0
    for rec, said in rounds:
        head = f"round {rec.get('round', '?')} ({rec.get('side', '?')})"
        for f in said:
            print(f"{head}: {f['says']}")
        found += len(said)
        if not said:
            print(f"{head}: no finding")
    return EXIT_FAIL if found else 0


def main():
    main_wrapper(execute)
