#!/usr/bin/env python3
"""Stands in for bench/gate in tests/fast/test_acceptance.py: logs its call,
writes a report, and exits as the environment says. An honest gate fails the
regressed candidate (exit 1; --candidate-conf or --baseline-conf makes one);
a blind one passes everything.
STAND_IN_INTERRUPT_AT=N interrupts acceptance itself (SIGINT, as Ctrl-C
would) during the Nth call."""
import json, os, signal, sys
from pathlib import Path
args = sys.argv[1:]
out = Path(args[args.index("--out") + 1])
log = Path(os.environ["STAND_IN_LOG"])
with open(log, "a") as f:
    f.write(out.name + "\n")
calls = len(log.read_text().split())
if calls == int(os.environ.get("STAND_IN_INTERRUPT_AT", "0")):
    os.kill(os.getppid(), signal.SIGINT)
    sys.exit(130)
regressed = "--candidate-conf" in args or "--baseline-conf" in args
out.mkdir(parents=True)
ratio = 0.8 if regressed else 1.0
counted = 1.02 if regressed else 1.0
(out / "report.json").write_text(json.dumps({"judgement": {"rules": [
    {"metric": "iops", "ratio": ratio, "ci": [ratio - 0.05, ratio + 0.05]},
    {"metric": "osd_instructions_per_op", "ratio": counted, "ci": [counted - 0.005, counted + 0.005],
     "spread": {"baseline": 0.004, "candidate": 0.007}}]}}))
sys.exit(1 if regressed and os.environ["STAND_IN_MODE"] == "honest" else 0)
