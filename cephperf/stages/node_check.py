"""The node checks of a candidate's OSD, one stage for all of them.

ci/io-mock-test, ci/onode-cache-test and ci/rados-model-test are thin entry
points that call main() with their own name; cmake/node-checks.toml says
what each runs, where it reports, which options it takes beyond --debs DIR
and --out DIR, and its --help. Each installs the candidate's ceph-osd .deb
over Debian's stock packages in a throwaway overlay of the trixie runtime
root, brings up a one-OSD cluster and runs its node-side module there.

Exit 0 on pass, 1 when a step fails (named), 2 when the check could not run
(and for bad arguments, named on one line).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from cephperf import paths
from cephperf.bench.rados_workload import load_workload
from cephperf.common import EXIT_ERROR, StageError, log, main_wrapper
from cephperf.node_checks import NodeCheck, node_check, osd_conf, pass_line, run_node_check


def positive(text: str) -> int:
    if not text.isdigit() or int(text) == 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return int(text)


def parser(check: NodeCheck) -> argparse.ArgumentParser:
    """The check's command line: --debs and --out, and the options its table grants."""
    p = argparse.ArgumentParser(description=check.help, formatter_class=argparse.RawDescriptionHelpFormatter)
    side = p.add_mutually_exclusive_group()
    side.add_argument("--debs", type=Path, default=paths.debs_out("osd-only"))
    if check.stock:
        side.add_argument("--stock", action="store_true", help="Debian's stock packages, as the runtime root has them")
    if check.osd_conf:
        p.add_argument("--osd-conf", type=Path, help="ceph.conf sections set from mkfs on (bench/conf/*.conf)")
        p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="an [osd] option from mkfs on")
    if check.workload:
        p.add_argument("--ops", type=positive, help="ceph_test_rados' ops (default: the workload file's)")
        p.add_argument("--workload", type=Path, default=paths.REPO / check.workload)
    p.add_argument("--out", type=Path, default=paths.reports(check.report))
    return p


def execute(name: str, argv: list[str] | None = None) -> int:
    check = node_check(name)
    args = parser(check).parse_args(argv)
    # every argument is checked before a root or a cluster is touched
    workload = load_workload(args.workload, args.ops) if check.workload else None
    conf = osd_conf(args.osd_conf, args.conf) if check.osd_conf else None
    debs = None if getattr(args, "stock", False) else args.debs.resolve()
    if debs is not None and not debs.is_dir():
        raise StageError(f"--debs {args.debs}: no such directory", EXIT_ERROR)
    result = run_node_check(check, debs, args.out, conf, workload)
    log(pass_line(check, result, conf))
    return 0


def main(name: str):
    main_wrapper(lambda: execute(name))
