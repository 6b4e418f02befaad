"""ci/upgrade-test: install, upgrade and downgrade through our apt repository.

  ci/upgrade-test [--repo DIR] [--out DIR]

In a throwaway overlay of the trixie runtime root (Debian's archive, Debian's
stock ceph 18.2.7 installed) plus our repository (ci/publish-repo's output,
signed; its apt-line.txt says how to reach it):
  1. apt must pick our +perfN ceph-osd as the candidate;
  2. a one-OSD cluster is made with Debian's packages and objects of 1 B to
     4 MiB are written with known sha256 sums;
  3. ceph-osd is upgraded to ours with apt-get; every program it ships must
     find its shared libraries and symbols (ldd -r); the OSD restarts on the same
     store and every object must list and read back intact; more are written;
     with no ceph.conf, it must start with Debian's value of every option
     Debian's has (ours may add options, never change a default);
  4. ceph-osd is downgraded to Debian's with apt-get; every object, including
     those our OSD wrote, must read back intact.
Exit 0 on pass, 1 when a step fails (named), 2 when the test could not run.
The result goes to --out (default build/reports/upgrade/result.json).
"""
import argparse
from pathlib import Path

from cephperf import paths
from cephperf.common import StageError, EXIT_ERROR, log, main_wrapper
from cephperf.nodes import free_port, run_check
from cephperf.runtime.spec import NodeSpec


def execute():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repo", type=Path, default=paths.repo_dir())
    p.add_argument("--out", type=Path, default=paths.reports("upgrade"))
    args = p.parse_args()
    repo = args.repo.resolve()
    line_file = repo / "apt-line.txt"
    if not line_file.exists():
        raise StageError(f"{line_file}: missing; make the repository with ci/publish-repo first", EXIT_ERROR)
    spec = NodeSpec(state_dir=str(paths.bench_state("upgrade-test")), port=free_port(), v1_port=free_port(),
                    apt_line=line_file.read_text().strip())
    log(f"upgrade test against {repo}")
    result = run_check("upgrade", spec, [repo], args.out, ["log"], "upgrade test")
    log(f"PASS: {result['stock']} -> {result['candidate']} -> {result['stock']}, data intact")
    return 0


def main():
    main_wrapper(execute)
