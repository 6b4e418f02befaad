"""bench/gate: single-OSD rados bench A/B with a verdict noise does not decide.

  bench/gate --baseline SRC --candidate SRC [--profile NAME] [--variant NAME]
             [--rounds N] [--seconds S] [--baseline-conf FILE] [--candidate-conf FILE]
             [--rules FILE] [--out DIR]
  bench/gate --cluster CONF --keyring K --pool P [--profile NAME] [--rounds N]

SRC: 'debian' (Debian trixie's stock packages), a directory of .debs laid over
them, an apt line ('deb [trusted=yes] URL trixie main'), or a directory
holding a built ceph-osd (and lib/) used in place of the stock one.

Baseline and candidate alternate round by round (A B A B ...), each round on a
fresh mon and OSD inside the cached trixie runtime root. The rules file
(default bench/rules/default.toml) is judged on medians with a bootstrap
confidence interval. Reports: report.json, report.md, chart.svg in --out.

Exit 0: pass. 1: regression. 2: the gate could not run (the cause is named).
The last line says which.
"""
import argparse
import json
import signal
import time
from pathlib import Path

from cephperf import paths
from cephperf.bench.report import SCHEMA_VERSION, markdown, svg_chart
from cephperf.bench.rounds import (load_profile, merge_conf, parse_source, read_conf_file, round_spec, run_node,
                                   runs_dir)
from cephperf.bench.stats import judge
from cephperf.build.roots import Root
from cephperf.common import StageError, load_toml, log, main_wrapper, rmtree, write_atomic


def external(args) -> int:
    """Measure the profile against an existing cluster; no bring-up, no verdict."""
    prof = load_profile(args.profile, "defaults")
    out = args.out or paths.reports("gate-external")
    records = []
    for i in range(args.rounds):
        state = runs_dir() / f"{i + 1:02d}-external"
        spec = round_spec(state, prof, {}, {}, args.seconds, args.stall_seconds, args.progress)
        spec.external = {"conf": str(args.cluster.resolve()), "keyring": str(args.keyring.resolve()),
                         "pool": args.pool}
        rec = run_node("external", spec, [str(args.cluster.resolve().parent), str(args.keyring.resolve().parent)])
        rmtree(state)
        if not rec.get("ok"):
            print(f"gate: ERROR (could not run): {rec.get('error')}")
            return 2
        records.append({**rec, "round": i + 1, "side": "external"})
        log(f"round {i + 1}/{args.rounds}: {rec['iops']:.0f} IOPS")
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "report.json", json.dumps({"schema_version": SCHEMA_VERSION, "profile": args.profile,
                                                  "cluster": str(args.cluster), "records": records}, indent=2))
    print(f"gate: MEASURED {len(records)} round(s) against {args.cluster} (no baseline, no verdict); report in {out}")
    return 0


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def execute():
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGHUP, _interrupt)
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--baseline")
    p.add_argument("--candidate")
    p.add_argument("--baseline-conf", type=Path)
    p.add_argument("--candidate-conf", type=Path)
    p.add_argument("--profile", default="4k-write")
    p.add_argument("--variant", default="defaults")
    p.add_argument("--rounds", type=int, default=5, help="rounds per side (default 5)")
    p.add_argument("--seconds", type=int, help="override the profile's duration")
    p.add_argument("--rules", type=Path, default=paths.RULES / "default.toml")
    p.add_argument("--stall-seconds", type=int, default=20, help="no completed op for this long stops the gate")
    p.add_argument("--out", type=Path)
    p.add_argument("--progress", action="store_true", help="echo rados bench's per-second lines")
    p.add_argument("--cluster", type=Path, help="an existing cluster's ceph.conf (no bring-up)")
    p.add_argument("--keyring", type=Path)
    p.add_argument("--pool")
    args = p.parse_args()
    if args.rounds < 1:
        p.error("--rounds must be at least 1")
    try:
        if args.cluster:
            if not (args.keyring and args.pool):
                p.error("--cluster needs --keyring and --pool")
            return external(args)
        if not (args.baseline and args.candidate):
            p.error("give --baseline SRC and --candidate SRC (or --cluster CONF)")
        return ab(args)
    except StageError as e:
        print(f"gate: ERROR (could not run): {e}")
        return 2
    except KeyboardInterrupt:
        print("gate: ERROR (could not run): interrupted; every round's processes and mounts are gone")
        return 2


def discard_device(state: Path) -> None:
    for f in (state / "osd").rglob("block"):
        f.unlink(missing_ok=True)


def run_rounds(args, prof: dict, sides: dict, confs: dict) -> list[dict] | str:
    """Baseline and candidate alternating, a fresh OSD each round; the records,
    or the message of the round that could not run."""
    Root("runtime").create()
    run_root = runs_dir()
    records, t0 = [], time.monotonic()
    total = 2 * args.rounds
    try:
        for i in range(args.rounds):
            for side in ("baseline", "candidate"):
                n = len(records) + 1
                state = run_root / f"{n:02d}-{side}"
                conf = merge_conf(prof["conf"], confs[side])
                spec = round_spec(state, prof, sides[side], conf, args.seconds, args.stall_seconds, args.progress)
                eta = "" if n == 1 else f", about {(time.monotonic() - t0) / (n - 1) * (total - n + 1) / 60:.0f} min left"
                log(f"round {n}/{total} ({side}){eta}")
                rec = run_node("round", spec, [sides[side].get("bind")])
                if not rec.get("ok"):
                    error = rec.get("error") or "no error recorded"
                    print(f"round {n} ({side}) failed:\n{error}")
                    return f"round {n} ({side}): {error.splitlines()[0]}"
                rmtree(state)  # the device file is large; the record holds what matters
                rec.update(round=n, pair=i + 1, side=side)
                records.append(rec)
                log(f"round {n}/{total} ({side}): {rec['iops']:.0f} IOPS, "
                    f"{rec.get('osd_cpu_us_per_op') or 0:.1f} µs CPU/op, peak RSS {rec.get('osd_peak_rss_mib')} MiB")
    finally:
        # A failed or interrupted round keeps its logs for diagnosis, not its
        # multi-GiB device file: left behind, those filled this machine's disk.
        for state in run_root.glob("*"):
            discard_device(state)
    rmtree(run_root)
    return records


def ab(args) -> int:
    prof = load_profile(args.profile, args.variant)
    rules = load_toml(args.rules)
    sides = {"baseline": parse_source(args.baseline), "candidate": parse_source(args.candidate)}
    confs = {"baseline": read_conf_file(args.baseline_conf), "candidate": read_conf_file(args.candidate_conf)}
    for name, s in sides.items():
        s["conf"] = str(getattr(args, f"{name}_conf")) if getattr(args, f"{name}_conf") else None
    t0 = time.monotonic()
    records = run_rounds(args, prof, sides, confs)
    if isinstance(records, str):
        print(f"gate: ERROR (could not run): {records}")
        return 2
    j = judge(records, rules)
    verdict = ("pass" if j["ok"] else "regression") if j["judged"] else "not judged (smoke)"
    rep = {"schema_version": SCHEMA_VERSION, "verdict": verdict, "profile": prof["name"],
           "description": prof.get("description", ""), "variant": prof["variant"], "rounds": args.rounds,
           "seconds": args.seconds or prof["bench"]["seconds"], "rules_file": str(args.rules),
           "sides": {k: {"source": v["source"], "conf": v.get("conf")} for k, v in sides.items()},
           "judgement": j, "records": records, "wall_seconds": round(time.monotonic() - t0)}
    out = args.out or paths.reports("gate")
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "report.json", json.dumps(rep, indent=2) + "\n")
    write_atomic(out / "report.md", markdown(rep))
    write_atomic(out / "chart.svg", svg_chart(rep))
    print((out / "report.md").read_text())
    return verdict_exit(j, rules, args.rounds, out)


def verdict_exit(j: dict, rules: dict, rounds: int, out: Path) -> int:
    for r in j["rules"]:
        if r.get("ratio") is not None:
            print(f"{r['metric']}: candidate/baseline {r['ratio']:.3f} [{r['ci'][0]:.3f}, {r['ci'][1]:.3f}] "
                  f"over {rounds} round(s) per side: {r['verdict']}")
    if not j["judged"]:
        print(f"gate: PASS (not judged: {rounds} round(s) per side is a smoke run; the rules need "
              f"{rules.get('stats', {}).get('min_rounds', 3)} for a verdict) ({out}/report.md)")
        return 0
    print(f"gate: {'PASS' if j['ok'] else 'REGRESSION'} ({out}/report.md)")
    return 0 if j["ok"] else 1


def main():
    main_wrapper(execute)
