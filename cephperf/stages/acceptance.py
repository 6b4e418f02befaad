"""bench/acceptance: does the gate give verdicts that hold on this machine?

  bench/acceptance [--runs N] [--packages SRC] [--regress-conf FILE]
                   [--small-conf FILE] [--mode MODE] [--out DIR]

Runs the default gate N times A/A (SRC against itself: every run must pass)
and N times A/B (SRC against SRC with --regress-conf on the candidate side,
default bench/conf/debug-20.conf: every run must fail with exit 1), one after
the other. With --small-conf FILE, N runs more with FILE on the baseline side
(bench/conf/op-tracker-off.conf makes the candidate's OSD do about 2% more
instructions per op, a small known regression that only instruction-counted
rounds can see: give --mode counted or both, passed on to the gate). The
summary states the A/A false-fail rate, each regression's detection rate and
the time per run. After each run it checks that nothing was left behind: none of
the bench's daemons or rados processes, no mount of a root run.
Writes summary.json and summary.md in --out (default build/reports/acceptance),
each gate's report under it. summary.json is rewritten after every run, so an
interrupted acceptance resumes at the first run it has no result for (same
plan only; --fresh starts over). Exit 0 when every run gave its expected verdict
within the time limit and left nothing behind, 1 otherwise, 2 when it could
not start (bench processes already running).
"""
import argparse
import json
import subprocess
import time
from pathlib import Path

from cephperf import paths
from cephperf.bench.rounds import read_conf_file
from cephperf.common import EXIT_ERROR, StageError, log, main_wrapper, rmtree, write_atomic
from cephperf.leftovers import our_daemons, run_mounts

TIME_LIMIT_SECONDS = 20 * 60  # a default gate run, native and instruction-counted rounds (issue #14)
KINDS = {"aa": "A/A (must pass)", "ab": "A/B, --regress-conf (must fail)", "small": "A/B, --small-conf (must fail)"}


def leftovers() -> list[str]:
    return [f"process {p}" for p in our_daemons()] + [f"mount {m}" for m in run_mounts()]


def gate(program: Path, name: str, args: list[str], out: Path) -> dict:
    t0 = time.monotonic()
    rc = subprocess.run([str(program), *args, "--out", str(out / name)]).returncode
    seconds = round(time.monotonic() - t0)
    report = out / name / "report.json"
    ratios = {}
    if report.exists():
        for r in json.loads(report.read_text())["judgement"]["rules"]:
            if r.get("ci"):
                ratios[r["metric"]] = {"ratio": round(r["ratio"], 3), "ci": [round(x, 3) for x in r["ci"]]}
    return {"name": name, "exit": rc, "seconds": seconds, "ratios": ratios, "leftovers": leftovers()}


def render(runs: list[dict]) -> str:
    lines = ["# Gate acceptance", "", "| run | expected | exit | minutes | IOPS ratio [95% CI] | CPU/op ratio [95% CI] | left behind |",
             "|---|---|---|---|---|---|---|"]
    for r in runs:
        def cell(metric):
            m = r["ratios"].get(metric)
            return f"{m['ratio']} [{m['ci'][0]}, {m['ci'][1]}]" if m else "-"
        lines.append(f"| {r['name']} | {r['expected']} | {r['exit']} | {r['seconds'] / 60:.1f} | {cell('iops')} | "
                     f"{cell('osd_cpu_us_per_op')} | {', '.join(r['leftovers']) or 'nothing'} |")
    good = sum(r["ok"] for r in runs)
    lines += ["", f"{good} of {len(runs)} runs as expected "
              f"(A/A exit 0, A/B exit 1, each within {TIME_LIMIT_SECONDS // 60} min, nothing left).", ""]
    return "\n".join(lines + rates(runs)) + "\n"


def rates(runs: list[dict]) -> list[str]:
    """What the gate is worth: false fails, detections, time, per kind of run."""
    out = ["| runs | count | gate verdict as expected | minutes per run (mean, max) |", "|---|---|---|---|"]
    for kind, what in KINDS.items():
        mine = [r for r in runs if r["name"].rsplit("-", 1)[0] == kind]
        if mine:
            right = sum(r["exit"] == r["expected"] for r in mine)
            minutes = [r["seconds"] / 60 for r in mine]
            out.append(f"| {what} | {len(mine)} | {right} of {len(mine)} | "
                       f"{sum(minutes) / len(minutes):.1f}, {max(minutes):.1f} |")
    return out


def plan(args) -> list[tuple[str, int, list[str]]]:
    """(run name, expected exit, gate arguments) of every run, in order."""
    sides = ["--baseline", args.packages, "--candidate", args.packages, *(["--mode", args.mode] if args.mode else [])]
    kinds = [("aa", 0, []), ("ab", 1, ["--candidate-conf", str(args.regress_conf)])]
    if args.small_conf:
        kinds.append(("small", 1, ["--baseline-conf", str(args.small_conf)]))
    return [(f"{kind}-{i}", expected, [*sides, *extra]) for kind, expected, extra in kinds
            for i in range(1, args.runs + 1)]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--packages", default="debian")
    p.add_argument("--regress-conf", type=Path, default=paths.BENCH_CONF / "debug-20.conf")
    p.add_argument("--small-conf", type=Path, help="a small known regression, on the baseline side "
                                                   "(e.g. bench/conf/op-tracker-off.conf)")
    p.add_argument("--mode", choices=["native", "counted", "both"], help="passed on to the gate")
    p.add_argument("--out", type=Path, default=paths.reports("acceptance"))
    p.add_argument("--gate", type=Path, default=paths.BENCH / "gate",
                   help="the gate program (tests put a stand-in here)")
    p.add_argument("--fresh", action="store_true", help="discard the results of an earlier, interrupted acceptance")
    return p


def execute():
    args = parser().parse_args()
    for conf in (args.regress_conf, args.small_conf):
        read_conf_file(conf)  # a missing or malformed one is named now, not after the A/A runs
    if not args.gate.is_file():
        raise StageError(f"{args.gate}: no such gate program", EXIT_ERROR)
    # Daemons live only as long as the run that holds their namespaces, so any
    # found now belong to a bench or cluster still running: its load would
    # skew every round, and its processes would count as ours left behind.
    if running := our_daemons():
        raise StageError("bench processes are already running (another gate, or a `bench/cluster up` cluster; "
                         "stop it with `bench/cluster down` or wait for it):\n  " + "\n  ".join(running), EXIT_ERROR)
    identity = {"gate": str(args.gate.resolve()), "packages": args.packages,
                "regress_conf": str(args.regress_conf.resolve()), "runs": args.runs,
                "small_conf": str(args.small_conf.resolve()) if args.small_conf else None, "mode": args.mode}
    done = {}
    summary = args.out / "summary.json"
    if summary.exists() and not args.fresh:
        earlier = json.loads(summary.read_text())
        if earlier.get("plan") == identity:
            done = {r["name"]: r for r in earlier["runs"]}
            log(f"resuming: {len(done)} run(s) already done in {args.out} (--fresh to start over)")
    if not done:
        rmtree(args.out)
    args.out.mkdir(parents=True, exist_ok=True)
    runs = []
    for name, expected, gate_args in plan(args):
        if name in done:
            runs.append(done[name])
            continue
        log(f"{name}: expecting exit {expected}")
        rmtree(args.out / name)  # a run interrupted part-way is run again whole
        r = gate(args.gate, name, gate_args, args.out)
        r.update(expected=expected, ok=r["exit"] == expected and r["seconds"] <= TIME_LIMIT_SECONDS
                 and not r["leftovers"])
        runs.append(r)
        write_atomic(args.out / "summary.json", json.dumps({"schema": 1, "plan": identity, "runs": runs}, indent=2) + "\n")
        write_atomic(args.out / "summary.md", render(runs))
    print(render(runs))
    return 0 if all(r["ok"] for r in runs) else 1



def main():
    main_wrapper(execute)
