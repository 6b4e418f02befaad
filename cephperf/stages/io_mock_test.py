"""ci/io-mock-test: bluestore_io_mock on a one-OSD cluster, with the built packages.

  ci/io-mock-test [--debs DIR] [--out DIR]

DIR holds the candidate's ceph-osd .deb (default: ci/build-debs' osd-only
output); it is installed over Debian's stock packages in a throwaway overlay
of the trixie runtime root. What is checked is listed in
cephperf/runtime/io_mock.py: the health warning, reads and listings of mocked
writes, a snapshot's clone of a mocked object, a restart that refuses (with
the option on and off), the refusal on an OSD that holds data, the forced
switch, and the mode set in the monitors' central configuration refused.
Exit 0 on pass, 1 when a step fails (named), 2 when the test could not run.
The result goes to --out (default build/reports/io-mock/result.json).
"""
import argparse
from pathlib import Path

from cephperf import paths
from cephperf.common import log, main_wrapper
from cephperf.nodes import check_osd_debs


def execute():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--debs", type=Path, default=paths.debs_out("osd-only"))
    p.add_argument("--out", type=Path, default=paths.reports("io-mock"))
    args = p.parse_args()
    result = check_osd_debs("io_mock", args.debs.resolve(), args.out, 6, ["mocked/log", "with-data/log", "central/log"],
                            "IO-mock test")
    log(f"PASS: bluestore_io_mock behaves as documented ({result['candidate']})")
    return 0


def main():
    main_wrapper(execute)
