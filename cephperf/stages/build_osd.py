"""ci/build-osd: a development build of ceph-osd from the assembled tree.

A long job (about 55 minutes on 2 cores with a cold ccache, minutes warm),
so everything lives in the persistent cache and a re-run resumes:
  $CEPH_PERF_CACHE/builds/osd/src/     snapshot of the assembled tree (rsync,
                                       mtimes kept, so unchanged files do not
                                       rebuild; the work tree may change meanwhile)
  $CEPH_PERF_CACHE/builds/osd/build/   the ninja build directory
  $CEPH_PERF_CACHE/ccache/             compiler cache
  $CEPH_PERF_CACHE/builds/osd/out/     ceph-osd (unstripped) + stamp.json

Flags are the release ones our debian/rules gives: dpkg-buildflags with
hardening, RelWithDebInfo with -DNDEBUG, the release guard; the tree is the
minimal one of cmake/osd-minimal.cmake. `bench/gate --candidate DIR` takes
the out/ directory as a development build laid over Debian's packages.
"""
import argparse
import time
from pathlib import Path

from cephperf import paths
from cephperf.common import StageError, EXIT_ERROR, hash_inputs, log, main_wrapper, run
from cephperf.packaging.roots import Root
from cephperf.packaging.source_tree import assembled_tree
from cephperf.stage import produce

BUILD = paths.RUNTIME / "scripts" / "build-osd.sh"


def build(tree: Path, tree_key: str, targets: str, jobs: int, new: Path) -> dict:
    work = paths.osd_build()
    (work / "build").mkdir(parents=True, exist_ok=True)
    log(f"syncing the tree into {work / 'src'}")
    run(["rsync", "-a", "--delete", "--exclude=/.pc", f"{tree}/", f"{work / 'src'}/"], "syncing the tree")
    t0 = time.monotonic()
    rc = Root("build", tree).run(["bash", str(BUILD)], env={"WORK": str(work), "MINIMAL": str(paths.OSD_MINIMAL),
                                                            "JOBS": str(jobs), "TARGETS": targets})
    if rc != 0:
        raise StageError(f"the build failed (exit {rc}); re-run ci/build-osd to resume", EXIT_ERROR)
    run(["cp", "-a", work / "build" / "bin" / "ceph-osd", new / "ceph-osd"], "copying ceph-osd")
    log(f"built in {time.monotonic() - t0:.0f} s")
    return {"tree_inputs": tree_key, "seconds": round(time.monotonic() - t0), "targets": targets}


def execute():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--targets", default="ceph-osd", help="ninja targets (default: ceph-osd)")
    p.add_argument("--jobs", type=int, default=2)
    args = p.parse_args()
    tree, tree_key = assembled_tree()
    out = paths.osd_build() / "out"
    key = hash_inputs([("tree", tree_key), ("targets", args.targets), ("minimal", paths.OSD_MINIMAL),
                       ("script", BUILD), ("buildflags", BUILD.with_name("dpkg-buildflags.sh"))])
    produce(out, key, lambda new: build(tree, tree_key, args.targets, args.jobs, new),
            valid=lambda st: (out / "ceph-osd").exists())
    print(out)
    return 0


def main():
    main_wrapper(execute)
