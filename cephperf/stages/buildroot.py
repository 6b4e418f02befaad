"""ci/buildroot: the trixie build root.

  ci/buildroot create            make (or find cached) the root tarball
  ci/buildroot run -- CMD...     run CMD inside it
  ci/buildroot shell             an interactive shell inside it
  ci/buildroot path              print the cached tarball's path

The root holds the Build-Depends of the assembled debian/control plus the
packages in cmake/roots.toml [build]. It is cached as
$CEPH_PERF_CACHE/roots/build-<hash>.tar, the hash covering everything that
goes into it. Inside, the work tree and $CEPH_PERF_CACHE are at their host
paths, and CCACHE_DIR is $CEPH_PERF_CACHE/ccache.
"""
import argparse
from pathlib import Path

from cephperf.common import StageError, EXIT_ERROR, main_wrapper
from cephperf.packaging.roots import Root
from cephperf.packaging.source_tree import assembled_tree


def execute():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kind", default="build", help="section of cmake/roots.toml (default: build)")
    p.add_argument("--tree", type=Path, help="assembled tree (default: from ci/source)")
    p.add_argument("--bind", type=Path, action="append", default=[],
                   help="extra host directory to make visible inside, at the same path")
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("create")
    sub.add_parser("path")
    sub.add_parser("shell")
    r = sub.add_parser("run")
    r.add_argument("argv", nargs=argparse.REMAINDER)
    args = p.parse_args()

    tree = args.tree
    if tree is None and args.kind == "build":
        tree, _ = assembled_tree()
    root = Root(args.kind, tree)
    if args.cmd == "create":
        root.create()
        print(root.tarball)
        return 0
    if args.cmd == "path":
        print(root.tarball)
        return 0 if root.tarball.exists() else 1
    if args.cmd == "shell":
        return root.run(["/bin/bash", "-l"], binds=args.bind, interactive=True)
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    if not argv:
        raise StageError("run needs a command: ci/buildroot run -- CMD...", EXIT_ERROR)
    return root.run(argv, binds=args.bind)



def main():
    main_wrapper(execute)
