"""bench/diagnose: the cause of a slow run, named with its numbers.

  bench/diagnose REPORT.json [--rules FILE]
  bench/diagnose --cluster CONF --keyring K --pool P [--profile NAME] [--seconds S] [--rules FILE]

Reads a gate report's native rounds and states, per round, what
bench/rules/diagnose.toml calls a finding: unaligned overwrites (BlueStore's
penalty reads per write), a saturated OSD thread, debug gather levels above
their defaults, a full or near-full device, deferred writes piling up. Each
finding gives the numbers behind it. Every native gate round records what
this needs (cephperf/runtime/diagnostics.py).

With --cluster it diagnoses an existing cluster: one round of the profile
(bench/gate --cluster, which writes its report under build/reports/), read
through `ceph tell` on every OSD and `ceph osd df` where a mgr runs; the
OSDs' threads are not visible from a client, so that finding is not made.

Exit 0 with no finding, 1 with one or more, 2 when the report cannot be read.
"""
import argparse
import json
import subprocess
from pathlib import Path

from cephperf import paths
from cephperf.bench.diagnose import findings
from cephperf.bench.verdict import new_run_dir
from cephperf.common import StageError, EXIT_ERROR, EXIT_FAIL, load_toml, main_wrapper

DEFAULT_RULES = paths.RULES / "diagnose.toml"


def diagnose_report(rep: dict, rules: dict) -> list[tuple[dict, list[dict]]]:
    """(round, its findings) of every round that recorded diagnostics."""
    return [(r, findings(r, rules)) for r in rep.get("records", []) if r.get("diagnostics")]


def measure_cluster(args) -> Path:
    """One round of the profile against the cluster, by bench/gate --cluster; its report."""
    if not (args.keyring and args.pool):
        raise StageError("--cluster needs --keyring and --pool", EXIT_ERROR)
    out = new_run_dir("diagnose", args.profile)
    r = subprocess.run([str(paths.BENCH / "gate"), "--cluster", str(args.cluster), "--keyring", str(args.keyring),
                        "--pool", args.pool, "--profile", args.profile, "--rounds", "1",
                        "--seconds", str(args.seconds), "--out", str(out)])
    if r.returncode != 0:
        raise StageError(f"measuring {args.cluster} failed (bench/gate exit {r.returncode}; its output is above)",
                         EXIT_ERROR)
    return out / "report.json"


def execute():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("report", type=Path, nargs="?", help="a bench/gate report.json")
    p.add_argument("--rules", type=Path, default=DEFAULT_RULES)
    p.add_argument("--cluster", type=Path, help="an existing cluster's ceph.conf")
    p.add_argument("--keyring", type=Path)
    p.add_argument("--pool")
    p.add_argument("--profile", default="4k-write")
    p.add_argument("--seconds", type=int, default=30)
    args = p.parse_args()
    if args.cluster:
        args.report = measure_cluster(args)
    elif not args.report:
        p.error("give a report.json, or --cluster CONF --keyring K --pool P")
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
