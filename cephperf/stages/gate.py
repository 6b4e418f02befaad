"""bench/gate: single-OSD rados bench A/B with a verdict noise does not decide.

  bench/gate --baseline SRC --candidate SRC [--profile NAME] [--variant NAME] [--layout NAME]
             [--mode native|counted|both] [--rounds N] [--counted-rounds N] [--seconds S]
             [--baseline-conf FILE] [--candidate-conf FILE] [--rules FILE] [--out DIR]
  bench/gate --cluster CONF --keyring K --pool P [--profile NAME] [--rounds N]

SRC: 'debian' (Debian trixie's stock packages), a directory of .debs laid over
them, an apt line ('deb [trusted=yes] URL trixie main'), or a directory
holding a built ceph-osd (and lib/) used in place of the stock one.

  bench/gate --rejudge REPORT.json [--rules FILE] [--out DIR] [--strict]

--layout NAME (bench/layouts.toml, default hdd): the OSD's device layout,
hdd (BlueStore's file-backed device on this host's rotational disk) or
flash (a loop device that says it is non-rotational); every round reads
back from the running OSD the layout it had, and fails if it is not the one
asked for. --profile and --layout may each name several, comma-separated
(the release gate: --profile 4k-write,4k-write-d1 --layout hdd,flash): one
run per profile and layout, each judged alone, its report in
OUT/PROFILE-LAYOUT; the exit code is the worst run's.

Baseline and candidate run in ABBA blocks (A B, B A, A B, ...), each round on
a fresh mon and OSD inside the cached trixie runtime root. Each rule of the
rules file (default bench/rules/default.toml) is judged on the log ratios of
adjacent pairs with a t-interval: "regression" when the interval excludes 1 on
the bad side and the estimate is beyond the rule's tolerance, "gain" when it
excludes 1 on the good side, otherwise "no difference shown", with the
smallest regression the run would have failed (its tolerance included).
Reports (report.json with an environment block, report.md, chart.svg) go to
--out, by default a new directory under build/reports/gate/ for every run
(`latest` points at it).
--rejudge judges a saved report's rounds again, running nothing.

Exit 0: pass. 1: regression. 2: the gate could not run (the cause is named),
or a rule it judges had no data. 3: with --strict, a rule was not judged or
showed no difference.
The last line says which.
"""
import argparse
import json
import shutil
import signal
import time
from pathlib import Path

from cephperf import paths
from cephperf.bench.layouts import DEFAULT as DEFAULT_LAYOUT, layout_names, load_layout
from cephperf.bench.report import SCHEMA_VERSION, round_summary
from cephperf.bench.rounds import (load_profile, merge_conf, parse_source, read_conf_file, round_spec, run_node,
                                   runs_dir)
from cephperf.bench.verdict import (EXIT_PASS, EXIT_REGRESSION, EXIT_UNPROVEN, host_environment, judge_report,
                                    load_rules, new_run_dir, publish)
from cephperf.packaging.roots import Root
from cephperf.common import EXIT_ERROR, StageError, log, main_wrapper, rmtree, write_atomic


DEFAULT_RULES = paths.RULES / "default.toml"
# Pairs per mode by default: an even number, so that the ABBA blocks are whole
# (A B, B A) and a drift linear in time cancels between their two pairs. Four,
# not six: five of each took 16 minutes here, and bench/acceptance holds a
# default run to 20. Counted rounds spread with an SD of 0.12-0.37% (4k-write's
# profile): four pairs' 95% half-width is then at most 0.83%, inside the
# counted rule's 1% tolerance, which is what bounds the regression it fails.
DEFAULT_PAIRS = 4


def external(args) -> int:
    """Measure the profile against an existing cluster; no bring-up, no verdict."""
    prof = load_profile(args.profile, "defaults")
    args.rounds = args.rounds or DEFAULT_PAIRS
    out = args.out or new_run_dir("gate-external", prof["name"])
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
        records.append({**rec, "round": i + 1, "pair": i + 1, "side": "external"})
        log(f"round {i + 1}/{args.rounds}: {rec['iops']:.0f} IOPS")
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "report.json", json.dumps({"schema_version": SCHEMA_VERSION, "profile": args.profile,
                                                  "cluster": str(args.cluster), "records": records,
                                                  "environment": {"host": host_environment()}}, indent=2))
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
    p.add_argument("--profile", default="4k-write", help="bench/profiles/NAME.toml; several, comma-separated")
    p.add_argument("--variant", default="defaults")
    p.add_argument("--layout", default=DEFAULT_LAYOUT, help="the OSD's device layout (bench/layouts.toml: "
                   f"{', '.join(layout_names())}; default {DEFAULT_LAYOUT}); several, comma-separated")
    p.add_argument("--rounds", type=int,
                   help=f"native rounds per side (default: the variant's pairs, else {DEFAULT_PAIRS}; an even number "
                        "cancels a linear drift)")
    p.add_argument("--mode", choices=["native", "counted", "both"],
                   help="native rounds (wall clock), instruction-counted rounds (callgrind), or both (the default; "
                        "native for a variant of several OSDs)")
    p.add_argument("--counted-rounds", type=int, default=DEFAULT_PAIRS,
                   help=f"instruction-counted rounds per side (default {DEFAULT_PAIRS}; with --mode both, at most "
                        "--rounds)")
    p.add_argument("--seconds", type=int, help="override the profile's duration")
    p.add_argument("--rules", type=Path, help="rules file (default: the variant's, else bench/rules/default.toml; "
                                              "with --rejudge, the report's own if it is still there)")
    p.add_argument("--stall-seconds", type=int, default=20, help="no completed op for this long stops the gate")
    p.add_argument("--out", type=Path)
    p.add_argument("--progress", action="store_true", help="echo rados bench's per-second lines")
    p.add_argument("--cluster", type=Path, help="an existing cluster's ceph.conf (no bring-up)")
    p.add_argument("--keyring", type=Path)
    p.add_argument("--pool")
    p.add_argument("--rejudge", type=Path, metavar="REPORT", help="judge a saved report.json again; run nothing")
    p.add_argument("--strict", action="store_true", help="exit 3 unless every rule was judged and showed a difference")
    args = p.parse_args()
    if (args.rounds is not None and args.rounds < 1) or args.counted_rounds < 1:
        p.error("--rounds and --counted-rounds must be at least 1")
    try:
        if args.rejudge:
            return rejudge(args)
        if args.cluster:
            if not (args.keyring and args.pool):
                p.error("--cluster needs --keyring and --pool")
            return external(args)
        if not (args.baseline and args.candidate):
            p.error("give --baseline SRC and --candidate SRC (or --cluster CONF)")
        return each_run(args)
    except StageError as e:
        print(f"gate: ERROR (could not run): {e}")
        return 2
    except KeyboardInterrupt:
        print("gate: ERROR (could not run): interrupted; every round's processes and mounts are gone")
        return 2


def discard_device(state: Path) -> None:
    for f in (state / "osd").rglob("block*"):
        f.unlink(missing_ok=True)


def plan(args) -> list[tuple[str, int, str]]:
    """(mode, pair, side) of every round: each mode's pairs in ABBA order."""
    modes = {"native": [("native", args.rounds)], "counted": [("callgrind", args.counted_rounds)],
             "both": [("native", args.rounds), ("callgrind", min(args.counted_rounds, args.rounds))]}[args.mode]
    # A B, then B A: a drift over the run cancels between the pairs
    return [(mode, i + 1, side) for mode, pairs in modes for i in range(pairs)
            for side in (("baseline", "candidate") if i % 2 == 0 else ("candidate", "baseline"))]


def run_rounds(args, prof: dict, sides: dict, confs: dict, keep: Path) -> list[dict] | str:
    """Every round of the plan, a fresh OSD each; the records, or the message
    of the round that could not run. Counted rounds' callgrind dumps go to `keep`."""
    layout = load_layout(args.layout)
    Root("runtime").create()
    run_root = runs_dir()
    records, t0 = [], time.monotonic()
    rounds = plan(args)
    try:
        for n, (mode, pair, side) in enumerate(rounds, 1):
            # The same path for either side: its length shifts the OSD's memory
            # layout, and an A/A run counted 0.5% more instructions per op on
            # the side whose path was one character longer, in every pair.
            state = run_root / f"round-{n:02d}"
            conf = merge_conf(prof["conf"], confs[side])
            spec = round_spec(state, prof, sides[side], conf, args.seconds, args.stall_seconds, args.progress, mode,
                              layout)
            eta = "" if n == 1 else f", about {(time.monotonic() - t0) / (n - 1) * (len(rounds) - n + 1) / 60:.0f} min left"
            log(f"round {n}/{len(rounds)} ({side}, {mode}){eta}")
            rec = run_node("round", spec, [sides[side].get("bind")])
            if not rec.get("ok"):
                error = rec.get("error") or "no error recorded"
                print(f"round {n} ({side}) failed:\n{error}")
                return f"round {n} ({side}): {error.splitlines()[0]}"
            if rec.get("callgrind_file"):
                keep.mkdir(parents=True, exist_ok=True)
                rec["callgrind_file"] = str(shutil.move(rec["callgrind_file"], keep / f"round-{n:02d}-{side}.out"))
            rmtree(state)  # the device file is large; the record holds what matters
            rec.update(round=n, pair=pair, side=side, mode=mode)
            records.append(rec)
            log(f"round {n}/{len(rounds)} ({side}, {mode}): " + round_summary(rec))
    finally:
        # A failed or interrupted round keeps its logs for diagnosis, not its
        # multi-GiB device file: left behind, those filled this machine's disk.
        for state in run_root.glob("*"):
            discard_device(state)
    rmtree(run_root)
    return records


def apply_variant_defaults(args, prof: dict) -> Path:
    """--mode and --rounds where not given, and the rules file: the command
    line's, else the variant's own (the cpu variant: native, 16 pairs,
    bench/rules/cpu.toml), else the gate's."""
    args.mode = args.mode or ("native" if prof["native_only"] else prof["default_mode"] or "both")
    args.rounds = args.rounds or prof["pairs"] or DEFAULT_PAIRS
    if prof["native_only"] and args.mode != "native":
        raise StageError(f"{prof['name']} ({args.variant}): {prof['native_only']}; give --mode native", EXIT_ERROR)
    return args.rules or (paths.RULES / f"{prof['rules']}.toml" if prof["rules"] else DEFAULT_RULES)


def ab(args) -> int:
    prof = load_profile(args.profile, args.variant)
    rules_file = apply_variant_defaults(args, prof)
    rules = load_rules(rules_file)
    sides = {"baseline": parse_source(args.baseline), "candidate": parse_source(args.candidate)}
    confs = {"baseline": read_conf_file(args.baseline_conf), "candidate": read_conf_file(args.candidate_conf)}
    for name, s in sides.items():
        s["conf"] = str(getattr(args, f"{name}_conf")) if getattr(args, f"{name}_conf") else None
    t0 = time.monotonic()
    layout = load_layout(args.layout)
    out = args.out or new_run_dir("gate", f"{prof['name']}-{prof['variant']}-{layout['name']}")
    records = run_rounds(args, prof, sides, confs, out / "callgrind")
    if isinstance(records, str):
        print(f"gate: ERROR (could not run): {records}")
        return 2
    rep = {"profile": prof["name"], "description": prof.get("description", ""), "variant": prof["variant"],
           "layout": layout,
           "rounds": args.rounds, "mode": args.mode, "seconds": args.seconds or prof["bench"]["seconds"],
           "sides": {k: {"source": v["source"], "conf": v.get("conf")} for k, v in sides.items()},
           "records": records, "wall_seconds": round(time.monotonic() - t0),
           "environment": {"host": host_environment(),
                           "workload": {"bench": prof["bench"], "device": prof["device"], "conf": prof["conf"],
                                        "runtime_conf": prof.get("runtime_conf", {}),
                                        # as round_spec caps it: --seconds shortens the warm-up too
                                        "warmup_seconds": min(prof["warmup_seconds"],
                                                              args.seconds or prof["warmup_seconds"]),
                                        "cpu_pinning": prof["cpu_pinning"],
                                        "poll_idle": prof["poll_idle"]}}}
    return publish(judge_report(rep, rules, rules_file), out, args.strict, link_latest=args.out is None)


# The worst first: the exit code of several runs is that of the worst.
SEVERITY = (EXIT_ERROR, EXIT_REGRESSION, EXIT_UNPROVEN, EXIT_PASS)


def each_run(args) -> int:
    """--profile and --layout may each name several, comma-separated: one A/B
    run for each profile in each layout, each judged alone, with its report
    in OUT/PROFILE-LAYOUT. The exit code is the worst run's; the last line
    names each run that did not pass."""
    profiles, layouts = args.profile.split(","), args.layout.split(",")
    if len(profiles) == 1 and len(layouts) == 1:
        return ab(args)
    out = args.out or new_run_dir("gate", f"{'+'.join(profiles)}-{'+'.join(layouts)}")
    codes = {}
    for profile in profiles:
        for layout in layouts:
            run = argparse.Namespace(**{**vars(args), "profile": profile, "layout": layout,
                                        "out": out / f"{profile}-{layout}"})
            log(f"gate: {profile} in the {layout} layout")
            codes[f"{profile} ({layout})"] = ab(run)
    worst = min(codes.values(), key=SEVERITY.index)
    failed = [f"{run}: exit {code}" for run, code in codes.items() if code != EXIT_PASS]
    word = {EXIT_PASS: "PASS", EXIT_REGRESSION: "REGRESSION", EXIT_UNPROVEN: "NOT SHOWN"}.get(worst, "ERROR")
    print(f"gate: {word} ({len(codes)} runs{': ' + '; '.join(failed) if failed else ', each passed'}) ({out})")
    return worst


def rejudge(args) -> int:
    """A saved report's rounds judged again, with its own rules file or --rules."""
    try:
        rep = json.loads(args.rejudge.read_text())
    except json.JSONDecodeError as e:
        raise StageError(f"{args.rejudge}: not a JSON report: {e}")
    if "records" not in rep or "sides" not in rep:
        raise StageError(f"{args.rejudge}: not a report of bench/gate's A/B rounds (no records or sides)")
    saved = Path(rep.get("rules_file", ""))
    rules_file = args.rules or (saved if saved.is_file() else DEFAULT_RULES)
    out = args.out or new_run_dir("gate", f"{rep['profile']}-{rep['variant']}-rejudged")
    return publish(judge_report(rep, load_rules(rules_file), rules_file), out, args.strict, link_latest=args.out is None)


def main():
    main_wrapper(execute)
