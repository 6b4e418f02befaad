"""ci/cluster-test: a rolling upgrade's cluster on one host, stock and candidate OSDs together.

  ci/cluster-test [--candidate SRC] [--plan FILE] [--ops N] [--phase NAME]... [--out DIR]

SRC is the candidate: a directory of .debs holding its ceph-osd .deb
(default: the release build's, $CEPH_PERF_CACHE/builds/release-osd-only/out),
a directory holding a built ceph-osd (ci/build-osd --release --out DIR), or
'debian' for Debian's stock ceph-osd, which must pass too (a check of the
test). Its ceph-osd runs beside Debian's stock packages in a throwaway
overlay of the trixie runtime root, where Debian's ceph-osd stays in place.

What runs (cephperf/runtime/cluster_test.py; FILE default
cmake/cluster-test.toml, which says what each phase runs and why): three
OSDs with a mgr, a size-3 replicated pool and a k=2 m=1 erasure-coded pool;
per phase, the OSDs of the phase's builds (first one stock OSD and two of
the candidate's, then all three the candidate's), ceph_test_rados on both
pools at once with the teuthology snaps mix, and meanwhile a candidate OSD
killed with SIGKILL and started again, an OSD marked out with PG logs held
short and in again (backfill), a pg_num increase; then every PG
active+clean and deep-scrubbed, finding nothing. At the end: no
[ERR]/[WRN]/[SEC] cluster-log line beyond the file's commented ignore list,
no assert, encode failure or CRC error in any daemon's log, and
ceph-bluestore-tool fsck --deep clean on each stopped store.
--ops N and --phase NAME shorten it (CI's smoke).

Exit 0 on pass, 1 when a phase or check fails (named), 2 when the test could
not run (and for bad arguments or a malformed plan, named on one line). The
report goes to --out (default build/reports/cluster-test/): report.json (the
node's record: each phase and check with its times), report.md, and on a
failure the cluster's logs (log/).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from cephperf import paths
from cephperf.bench.rounds import parse_source
from cephperf.common import EXIT_ERROR, StageError, load_toml, log, main_wrapper, rmtree, write_atomic
from cephperf.nodes import free_port, run_check
from cephperf.runtime.cluster_plan import PlanError, plan
from cephperf.runtime.spec import NodeSpec

PLAN = paths.REPO / "cmake" / "cluster-test.toml"


def positive(text: str) -> int:
    if not text.isdigit() or int(text) == 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return int(text)


def candidate_spec(src: str) -> tuple[dict, list]:
    """The candidate's part of the node contract, and what the root must see of it."""
    if src != "debian" and not src.startswith(("deb ", "deb[")) and not Path(src).is_dir():
        raise StageError(f"--candidate {src}: no such directory", EXIT_ERROR)
    side = parse_source(src)
    if side.get("apt_line"):
        raise StageError("--candidate: an apt line cannot run beside Debian's ceph-osd; name a directory",
                         EXIT_ERROR)
    if side.get("debs"):
        osd = [d for d in side["debs"] if Path(d).name.startswith("ceph-osd_")]
        if not osd:
            raise StageError(f"--candidate {src}: no ceph-osd_*.deb", EXIT_ERROR)
        return {"debs": osd[:1]}, [side["bind"]]
    if side.get("osd_binary"):
        return {"osd_binary": side["osd_binary"], "ld_library_path": side["ld_library_path"]}, [side["bind"]]
    return {}, []


def report_md(result: dict, candidate: str) -> str:
    """The report for people: the builds, each phase and check with its time, the verdict."""
    lines = ["# cluster-test", "",
             f"- candidate: {candidate}: {result.get('candidate', '?')} (build ID "
             f"{result.get('build_ids', {}).get('candidate', '?')})",
             f"- stock: ceph-osd {result.get('stock', '?')} (build ID {result.get('build_ids', {}).get('stock', '?')})",
             f"- verdict: {'PASS' if result.get('ok') else 'FAIL: ' + str(result.get('error'))}",
             f"- time: {result.get('seconds', '?')} s", "",
             "| step | seconds | what |", "|---|---|---|"]
    for entry in result.get("checks", []):
        what = entry.get("error") or "; ".join(
            f"{k} " + (", ".join(f"{a} {b}" for a, b in v.items()) if isinstance(v, dict) else str(v))
            for k, v in entry.items() if k in ("builds", "workload_seconds", "recovery_messages", "clean_seconds",
                                               "scrub_seconds", "scrub_requests_repeated", "scrubbed_pgs",
                                               "objects"))
        lines.append(f"| {entry['step']} | {entry.get('seconds', '')} | {what.replace('|', '/')} |")
    lines += ["", "Steps:", ""] + [f"- {s}" for s in result.get("steps", [])]
    for entry in result.get("checks", []):
        for ev in entry.get("events", []):
            lines.append(f"- {entry['step']}: {json.dumps(ev)}")
    return "\n".join(lines) + "\n"


def execute() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--candidate", default=str(paths.release_out("osd-only")))
    p.add_argument("--plan", type=Path, default=PLAN)
    p.add_argument("--ops", type=positive, help="each ceph_test_rados run's ops (default: the plan's)")
    p.add_argument("--phase", action="append", help="run only this phase of the plan (repeatable)")
    p.add_argument("--out", type=Path, default=paths.reports("cluster-test"))
    args = p.parse_args()
    # every argument is checked before a root or a cluster is touched
    try:
        the_plan = plan(load_toml(args.plan), args.ops, args.phase)
    except PlanError as e:
        raise StageError(f"{args.plan}: {e}", EXIT_ERROR)
    fields, binds = candidate_spec(args.candidate)
    state = paths.bench_state("cluster-test")
    spec = NodeSpec(state_dir=str(state), port=free_port(), v1_port=free_port(), bench=the_plan, **fields)
    rmtree(args.out / "log")  # an earlier run's logs and report
    for name in ("report.json", "report.md"):
        (args.out / name).unlink(missing_ok=True)
    log(f"cluster test: candidate {args.candidate}, phases "
        f"{', '.join(ph['name'] for ph in the_plan['phase'])}, {the_plan['test_rados']['ops']} ops per pool and phase")
    try:
        result = run_check("cluster_test", spec, binds, args.out, ["cluster/log"], "cluster test", "report.json")
    finally:
        if (args.out / "report.json").exists():
            write_atomic(args.out / "report.md",
                         report_md(json.loads((args.out / "report.json").read_text()), args.candidate))
    rmtree(state)
    log(f"PASS: cluster test ({result['candidate']} beside {result['stock']}, in {result['seconds']} s)")
    return 0


def main():
    main_wrapper(execute)
