#!/usr/bin/env python3
"""Stands in for bench/gate in tests/fast/test_acceptance.py and
test_logging_cost.py: the rounds are made up, the judging is the gate's own.

No cluster runs. Each round's values come from a model the gate's arguments
drive: every line of --baseline-conf or --candidate-conf that
STAND_IN_EFFECTS lists (JSON: {"key = value": {metric: factor}}) scales that
side's metrics by its factors, and every pair carries the same fixed noise
(SHARED by both rounds of a pair, OWN to the candidate's). The rounds follow
the real gate's plan (ABBA order, --mode, --rounds, --counted-rounds); the
real gate's code judges them with bench/rules/default.toml, writes the report
and gives the exit code. STAND_IN_MODE=blind is a gate that does not see the
confs: no line has an effect.

Every call appends its --out's name to STAND_IN_LOG.
STAND_IN_INTERRUPT_AT=N interrupts the caller (SIGINT, as Ctrl-C would)
during the Nth call."""
import argparse
import json
import math
import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from cephperf import paths  # noqa: E402
from cephperf.bench.rounds import read_conf_file  # noqa: E402
from cephperf.bench.verdict import judge_report, publish  # noqa: E402
from cephperf.common import StageError, load_toml  # noqa: E402
from cephperf.stages.gate import DEFAULT_PAIRS, plan  # noqa: E402

LEVELS = {"native": {"iops": 6000.0, "osd_cpu_us_per_op": 150.0}, "callgrind": {"osd_instructions_per_op": 208_000.0,
                                                                               "osd_est_cycles_per_op": 354_000.0}}
# log noise of pair i (cycling): both sides' rounds, and the candidate's alone
SHARED = (0.004, -0.004, 0.0, 0.0)
OWN = (0.001, -0.002, 0.003, -0.002)


def factors(conf: Path | None, effects: dict) -> dict:
    """metric -> factor: the product of the effects of the conf's lines."""
    out: dict[str, float] = {}
    for section in read_conf_file(conf).values():
        for key, value in section.items():
            for metric, f in effects.get(f"{key} = {value}", {}).items():
                out[metric] = out.get(metric, 1.0) * f
    return out


def main() -> int:
    p = argparse.ArgumentParser()
    for opt in ("--baseline", "--candidate", "--mode"):
        p.add_argument(opt)
    p.add_argument("--baseline-conf", type=Path)
    p.add_argument("--candidate-conf", type=Path)
    p.add_argument("--rounds", type=int, default=DEFAULT_PAIRS)
    p.add_argument("--counted-rounds", type=int, default=DEFAULT_PAIRS)
    p.add_argument("--out", type=Path, required=True)
    args, _ = p.parse_known_args()
    log = Path(os.environ["STAND_IN_LOG"])
    with open(log, "a") as f:
        f.write(args.out.name + "\n")
    if len(log.read_text().split()) == int(os.environ.get("STAND_IN_INTERRUPT_AT", "0")):
        os.kill(os.getppid(), signal.SIGINT)
        return 130
    effects = json.loads(os.environ.get("STAND_IN_EFFECTS", "{}")) if os.environ["STAND_IN_MODE"] != "blind" else {}
    try:
        side_factors = {"baseline": factors(args.baseline_conf, effects),
                        "candidate": factors(args.candidate_conf, effects)}
    except StageError as e:
        print(f"gate: ERROR (could not run): {e}")
        return 2
    args.mode = args.mode or "both"
    records = []
    for mode, pair, side in plan(args):
        i = (pair - 1) % len(SHARED)
        noise = math.exp(SHARED[i] + (OWN[i] if side == "candidate" else 0.0))
        records.append({"round": len(records) + 1, "pair": pair, "side": side, "mode": mode,
                        **{m: v * noise * side_factors[side].get(m, 1.0) for m, v in LEVELS[mode].items()}})
    rep = {"profile": "4k-write", "description": "stand-in rounds", "variant": "defaults", "rounds": args.rounds,
           "mode": args.mode, "records": records,
           "sides": {s: {"source": getattr(args, s), "conf": str(c) if (c := getattr(args, f"{s}_conf")) else None}
                     for s in ("baseline", "candidate")}}
    rules_file = paths.RULES / "default.toml"
    return publish(judge_report(rep, load_toml(rules_file), rules_file), args.out, False, link_latest=False)


if __name__ == "__main__":
    sys.exit(main())
