"""ci/source: assemble the patched source tree and print its path.

  orig tarball + Debian's debian/ + our debian/ delta + our patches,
  the whole quilt series applied with fuzz 0.

Output: $CEPH_PERF_BUILD/source/ (default build/source/) holding the tree and
stamp.json. A re-run with unchanged inputs does nothing; a changed pin, patch
or tool rebuilds; a failed or interrupted run leaves the previous output (or
none) and no half-written tree.
"""
import argparse
from pathlib import Path

from cephperf import paths
from cephperf.common import log, main_wrapper, read_stamp
from cephperf.packaging.source_tree import Sources, assembled_tree


def execute():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--from", dest="from_dir", type=Path,
                   help="directory holding the pinned tarballs (air-gapped hosts); nothing is downloaded")
    p.add_argument("--patches", type=Path, default=paths.PATCHES, help=argparse.SUPPRESS)
    p.add_argument("--debian", type=Path, default=paths.DEBIAN, help=argparse.SUPPRESS)
    args = p.parse_args()
    tree, _ = assembled_tree(Sources(args.from_dir, args.patches, args.debian))
    stamp = read_stamp(tree.parent / "stamp.json")
    log(f"{len(stamp['quilt_applied'])} patches applied; changelog tops at {stamp['version']}")
    print(tree)
    return 0


def main():
    main_wrapper(execute)
