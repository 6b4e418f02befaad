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
from cephperf.common import log, main_wrapper
from cephperf.nodes import check_osd_debs


def execute():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--debs", type=Path, default=paths.debs_out("osd-only"))
    p.add_argument("--out", type=Path, default=paths.reports("onode-cache"))
    args = p.parse_args()
    result = check_osd_debs("onode_cache", args.debs.resolve(), args.out, 2, ["osd/log"], "onode cache test")
    log(f"PASS: the onode lookup options behave as documented ({result['candidate']})")
    return 0


def main():
    main_wrapper(execute)
