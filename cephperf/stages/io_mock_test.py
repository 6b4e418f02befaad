"""ci/io-mock-test: bluestore_io_mock on a one-OSD cluster, with the built packages.

  ci/io-mock-test [--debs DIR] [--out DIR]

DIR holds the candidate's ceph-osd .deb (default: ci/build-debs' osd-only
output); it is installed over Debian's stock packages in a throwaway overlay
of the trixie runtime root. What is checked is listed in
cephperf/runtime/io_mock.py: the health warning, reads and listings of mocked
writes, a restart that refuses (with the option on and off), the refusal on
an OSD that holds data, and the forced switch.
Exit 0 on pass, 1 when a step fails (named), 2 when the test could not run.
The result goes to --out (default build/reports/io-mock/result.json).
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
    p.add_argument("--out", type=Path, default=paths.reports("io-mock"))
    args = p.parse_args()
    debs_dir = args.debs.resolve()
    debs = sorted(d for d in debs_dir.glob("ceph-osd_*.deb"))
    if not debs:
        raise StageError(f"{debs_dir}: no ceph-osd_*.deb; build it with ci/build-debs --profile osd-only "
                         "or name a directory with --debs", EXIT_ERROR)
    state = paths.bench_state("io-mock-test")
    spec = NodeSpec(state_dir=str(state), spare_ports=[free_port() for _ in range(4)], debs=[str(d) for d in debs])
    log(f"IO-mock test with {', '.join(d.name for d in debs)}")
    result = run_check("io_mock", spec, [debs_dir], args.out, ["mocked/log", "with-data/log"], "IO-mock test")
    log(f"PASS: bluestore_io_mock behaves as documented ({result['candidate']})")
    rmtree(state)
    return 0


def main():
    main_wrapper(execute)
