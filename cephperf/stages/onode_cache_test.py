"""ci/onode-cache-test: the onode lookup patch on a one-OSD cluster, with the built packages.

  ci/onode-cache-test [--debs DIR] [--out DIR]

DIR holds the candidate's ceph-osd .deb (default: ci/build-debs' osd-only
output); it is installed over Debian's stock packages in a throwaway overlay
of the trixie runtime root. What is checked is listed in
cephperf/runtime/onode_cache.py: absent objects remembered in the onode cache
(bluestore_onode_cache_absent, on and off at run time), and writes, removes,
a copy through a temporary object and a snapshot's clone reading back as
written, before and after an OSD restart.
Exit 0 on pass, 1 when a step fails (named), 2 when the test could not run.
The result goes to --out (default build/reports/onode-cache/result.json).
"""
import argparse
from pathlib import Path

from cephperf import paths
from cephperf.common import StageError, EXIT_ERROR, log, main_wrapper, rmtree
from cephperf.nodes import free_port, run_check
from cephperf.runtime.spec import NodeSpec


def execute():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--debs", type=Path, default=paths.debs_out("osd-only"))
    p.add_argument("--out", type=Path, default=paths.reports("onode-cache"))
    args = p.parse_args()
    debs_dir = args.debs.resolve()
    debs = sorted(d for d in debs_dir.glob("ceph-osd_*.deb"))
    if not debs:
        raise StageError(f"{debs_dir}: no ceph-osd_*.deb; build it with ci/build-debs --profile osd-only "
                         "or name a directory with --debs", EXIT_ERROR)
    state = paths.bench_state("onode-cache-test")
    spec = NodeSpec(state_dir=str(state), spare_ports=[free_port() for _ in range(2)], debs=[str(d) for d in debs])
    log(f"onode cache test with {', '.join(d.name for d in debs)}")
    result = run_check("onode_cache", spec, [debs_dir], args.out, ["osd/log"], "onode cache test")
    log(f"PASS: the onode lookup options behave as documented ({result['candidate']})")
    rmtree(state)
    return 0


def main():
    main_wrapper(execute)
