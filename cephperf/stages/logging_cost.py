"""bench/logging-cost: what each subsystem's in-memory logging costs per op.

  bench/logging-cost [--packages SRC] [--subsystems a,b,...] [--out DIR] [--fresh]

For each subsystem of bench/conf/logging-cost.toml (or --subsystems) whose
default gather level is above 0, one instruction-counted gate run
(bench/gate --mode counted): SRC against SRC with that subsystem at 0/0 on the
candidate side. The candidate/baseline ratio of instructions per op, 1 minus
which is the subsystem's share at Debian's default levels, comes with its
interval; "all" sets every debug_* subsystem to 0/0. The defaults are read
from the runtime root's ceph-conf. Each run takes about 8 minutes.

Writes summary.json and summary.md in DIR (default build/reports/logging-cost)
and each run's gate report under it; rewritten after every run, so an
interrupted measurement resumes at its first missing run (--fresh starts over).
Exit 0 when every gate run completed, 1 when one could not run.
"""
import argparse
import json
import subprocess
import tempfile
from pathlib import Path

from cephperf import paths
from cephperf.bench.diagnose import gather_level
from cephperf.packaging.roots import Root
from cephperf.common import StageError, EXIT_ERROR, load_toml, log, main_wrapper, write_atomic

PLAN = paths.BENCH_CONF / "logging-cost.toml"
METRIC = "osd_instructions_per_op"
# the gate ran and judged (0 pass, 1 regression: more instructions with less logging); 2 is a failed run
COMPLETED = (0, 1)


def debug_defaults(show_config: Path | None) -> dict[str, str]:
    """Every debug_* option's default: from `ceph-conf --show-config` output in
    a file, else from the runtime root's ceph-conf."""
    if show_config:
        text = show_config.read_text()
    else:
        with tempfile.TemporaryFile("w+") as out:
            if Root("runtime").run(["ceph-conf", "--show-config"], stdout=out) != 0:
                raise StageError("ceph-conf --show-config failed in the runtime root", EXIT_ERROR)
            out.seek(0)
            text = out.read()
    pairs = (line.split(" = ", 1) for line in text.splitlines() if line.startswith("debug_") and " = " in line)
    return {k.strip(): v.strip() for k, v in pairs}


def runs(subsystems: list[str], defaults: dict, all_at_zero: bool) -> list[tuple[str, str, str]]:
    """(name, default, ceph.conf line) of every run: subsystems that gather at all."""
    out = []
    for sub in subsystems:
        default = defaults.get(f"debug_{sub}")
        if default is None:
            raise StageError(f"debug_{sub}: no such option in this ceph (bench/conf/logging-cost.toml)", EXIT_ERROR)
        if (gather_level(default) or 0) > 0:
            out.append((sub, default, f"debug_{sub} = 0/0"))
    if all_at_zero:
        out.append(("all", "-", "debug_* = 0/0"))
    return out


def measure(gate: Path, packages: str, name: str, conf_line: str, out: Path) -> dict:
    conf = out / f"{name}.conf"
    conf.write_text(f"[global]\n{conf_line}\n")
    rc = subprocess.run([str(gate), "--mode", "counted", "--baseline", packages, "--candidate", packages,
                         "--candidate-conf", str(conf), "--out", str(out / name)]).returncode
    report = out / name / "report.json"
    rule = next((r for r in json.loads(report.read_text())["judgement"]["rules"] if r["metric"] == METRIC), {}) \
        if report.exists() else {}
    return {"name": name, "exit": rc, "ratio": rule.get("ratio"), "ci": rule.get("ci"), "verdict": rule.get("verdict")}


def render(results: list[dict], defaults: dict) -> str:
    lines = ["# Logging cost at Debian's default levels (instructions per op, 4k-write, counted rounds)", "",
             "| subsystem | default | candidate/baseline [95% CI] | share of the OSD's instructions | verdict |",
             "|---|---|---|---|---|"]
    for r in sorted(results, key=lambda r: r["ratio"] or 2):
        ci = f" [{r['ci'][0]:.4f}, {r['ci'][1]:.4f}]" if r.get("ci") else ""
        share = f"{1 - r['ratio']:.1%}" if r.get("ratio") else "-"
        ratio = f"{r['ratio']:.4f}" if r.get("ratio") else f"gate exit {r['exit']}"
        lines.append(f"| {r['name']} | {defaults.get('debug_' + r['name'], '-')} | {ratio}{ci} | {share} | "
                     f"{r.get('verdict') or '-'} |")
    return "\n".join(lines) + "\n"


def execute():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--packages", default="debian")
    p.add_argument("--subsystems", help="comma-separated, \"all\" for every subsystem at once "
                                        "(default: bench/conf/logging-cost.toml)")
    p.add_argument("--out", type=Path, default=paths.reports("logging-cost"))
    p.add_argument("--gate", type=Path, default=paths.BENCH / "gate", help="the gate program (tests put a stand-in here)")
    p.add_argument("--fresh", action="store_true")
    p.add_argument("--defaults", type=Path, help="`ceph-conf --show-config` output to read the defaults from "
                                                 "(default: the runtime root's ceph-conf)")
    args = p.parse_args()
    plan_file = load_toml(PLAN)
    subsystems = args.subsystems.split(",") if args.subsystems else plan_file["subsystems"]
    # "all" among --subsystems asks for the every-subsystem run by name
    all_at_zero = "all" in subsystems if args.subsystems else plan_file.get("all_at_zero", False)
    defaults = debug_defaults(args.defaults)
    plan = runs([s for s in subsystems if s != "all"], defaults, all_at_zero)
    identity = {"packages": args.packages, "runs": [name for name, _, _ in plan], "gate": str(args.gate.resolve())}
    summary = args.out / "summary.json"
    earlier = json.loads(summary.read_text()) if summary.exists() and not args.fresh else {}
    done = {r["name"]: r for r in earlier.get("results", [])} if earlier.get("plan") == identity else {}
    args.out.mkdir(parents=True, exist_ok=True)
    results = []
    for name, default, line in plan:
        if name in done and done[name]["exit"] in COMPLETED:
            results.append(done[name])
            continue
        log(f"{name} (default {default}): `{line}` on the candidate side")
        results.append(measure(args.gate, args.packages, name, line, args.out))
        write_atomic(summary, json.dumps({"plan": identity, "results": results}, indent=2) + "\n")
        write_atomic(args.out / "summary.md", render(results, defaults))
    print(render(results, defaults))
    return 0 if all(r["exit"] in COMPLETED for r in results) else 1


def main():
    main_wrapper(execute)
