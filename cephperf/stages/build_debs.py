"""ci/build-debs: dpkg-buildpackage on the assembled tree, inside the build root.

  --profile osd-only  (default) DEB_BUILD_PROFILES=pkg.ceph.osd-only: only the
                      ceph-osd and ceph-osd-dbg packages, installable over
                      Debian's stock 18.2.7 set (debian/delta/osd-only-profile.patch).
                      About an hour on 2 cores with a cold ccache.
  --profile full      every binary package: the drop-in set. Many hours.
  --source-only       the source package (dpkg-buildpackage -S) and lintian on it.

A long job, so it lives in the persistent cache and a re-run resumes:
  $CEPH_PERF_CACHE/builds/debs-PROFILE/ceph-VERSION/  the tree, synced from the
        assembled one with rsync (mtimes kept, so unchanged files do not
        rebuild); its obj-*/ build dir is kept across runs
  $CEPH_PERF_CACHE/ccache/                           compiler cache
  $CEPH_PERF_CACHE/builds/debs-PROFILE/out/          .deb, .buildinfo, .changes
                                                     and stamp.json
dpkg-buildpackage runs with -nc (no pre-clean): the make build resumes where an
interrupted run stopped. The whole log is kept in build.log beside out/.
Release builds keep Debian's WITH_TESTS=ON in the full profile (ceph-test is
part of the drop-in set); nocheck is set because Debian's rules run no tests.
"""
import argparse
import os
import shutil
import subprocess
import time
from pathlib import Path

from cephperf import paths
from cephperf.common import StageError, EXIT_ERROR, hash_inputs, load_pins, log, main_wrapper, pinned_file, run
from cephperf.build.roots import Root
from cephperf.stage import produce
from cephperf.stages.source import assembled

PROFILES = {"osd-only": ["-b", "--build-profiles=pkg.ceph.osd-only"], "full": ["-b"], "source": ["-S", "-d"]}
BUILD = paths.RUNTIME / "scripts" / "build-debs.sh"
LINTIAN = paths.RUNTIME / "scripts" / "lintian-source.sh"
PRODUCED = (".deb", ".ddeb", ".buildinfo", ".changes", ".dsc")


def dpkg_buildpackage(root: Root, kind: str, src: Path, work: Path, jobs: int) -> None:
    """The build itself, resumable: its whole log appended to build.log (beside out/)."""
    log_path = work / "build.log"
    log(f"dpkg-buildpackage {' '.join(PROFILES[kind])} in the build root; log: {log_path}")
    with open(log_path, "a") as logf:
        logf.write(f"\n===== {time.strftime('%Y-%m-%d %H:%M:%S')} ci/build-debs --profile {kind}\n")
        logf.flush()
        tee = subprocess.Popen(["tee", "-a", str(log_path)], stdin=subprocess.PIPE)
        try:
            # stdbuf keeps make's progress lines flowing through the pipe as they are printed
            rc = root.run(["stdbuf", "-oL", "-eL", "bash", str(BUILD)], stdout=tee.stdin,
                          env={"TREE": str(src), "JOBS": str(jobs), "ARGS": " ".join(PROFILES[kind])})
        finally:
            tee.stdin.close()
            tee.wait()
    if rc != 0:
        raise StageError(f"dpkg-buildpackage failed (exit {rc}); the last lines of {log_path} say why. "
                         f"Re-run ci/build-debs{' --source-only' if kind == 'source' else ' --profile ' + kind} "
                         "to resume.", EXIT_ERROR)


def build(tree: Path, tree_key: str, kind: str, jobs: int, new: Path) -> dict:
    """Sync the tree into the long-lived work directory, build there, move what was produced into `new`."""
    work = paths.debs_work(kind)
    src = work / tree.name
    t0 = time.monotonic()
    log(f"syncing the tree into {src}")
    # obj-*/ is the build dir, kept so that a re-run resumes the build;
    # everything else, debian/'s build state included, follows the tree.
    run(["rsync", "-a", "--delete", "--exclude=/obj-*/", f"{tree}/", f"{src}/"], "syncing the tree")
    for old in work.glob("*.*deb"):
        old.unlink()
    if kind == "source":
        orig = pinned_file(load_pins(), "orig")
        link = work / orig["name"]
        if not link.exists():
            os.link(paths.downloads_dir() / orig["name"], link)
    root = Root("build", tree)
    dpkg_buildpackage(root, kind, src, work, jobs)
    produced = [f for f in work.iterdir() if f.is_file() and f.suffix in PRODUCED or f.name.endswith(".debian.tar.xz")]
    if kind == "source":
        dsc = next(f.name for f in produced if f.suffix == ".dsc")
        log(f"lintian {dsc}")
        rc = root.run(["bash", str(LINTIAN)], env={"WORK": str(work), "DSC": dsc})
        if rc != 0:
            raise StageError(f"lintian reports errors on {dsc} (exit {rc})", EXIT_ERROR)
    for f in produced:
        shutil.move(str(f), new / f.name)
    names = sorted(f.name for f in produced)
    log(f"built in {time.monotonic() - t0:.0f} s: {', '.join(names)}")
    return {"tree_inputs": tree_key, "profile": kind, "seconds": round(time.monotonic() - t0), "files": names}


def execute():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--profile", choices=["osd-only", "full"], default="osd-only")
    p.add_argument("--source-only", action="store_true", help="build the source package and run lintian on it")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = p.parse_args()
    kind = "source" if args.source_only else args.profile
    tree, tree_key = assembled()
    key = hash_inputs([("tree", tree_key), ("kind", kind), ("args", " ".join(PROFILES[kind])),
                       ("script", BUILD.read_text() + LINTIAN.read_text())])
    out = paths.debs_out(kind)
    produce(out, key, lambda new: build(tree, tree_key, kind, args.jobs, new))
    print(out)
    return 0


def main():
    main_wrapper(execute)
