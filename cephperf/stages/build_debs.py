"""ci/build-debs: dpkg-buildpackage on the assembled tree, inside the build root.

  --profile osd-only  (default) DEB_BUILD_PROFILES=pkg.ceph.osd-only: only the
                      packages our series changes, ceph-osd and ceph-fuse
                      (and their -dbg), installable over
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
part of the drop-in set). nocheck is left to the user: Debian's rules run no
tests, and without it the osd-only profile also builds upstream's store test
(ceph_test_objectstore), which ci/store-test runs and no package ships.
"""
import argparse
import os
import shutil
import time
from pathlib import Path

from cephperf import paths
from cephperf.common import StageError, EXIT_ERROR, hash_inputs, load_pins, log, main_wrapper, pinned_file, run
from cephperf.imports import code_inputs
from cephperf.packaging.buildlog import build_in_root
from cephperf.packaging.changelog import changelog_epoch
from cephperf.packaging.dpkg_build import ARGS, build_environment, dpkg_args, what_is_built
from cephperf.packaging.roots import Root
from cephperf.packaging.source_tree import assembled_tree
from cephperf.stage import produce

BUILD = paths.RUNTIME / "scripts" / "build-debs.sh"
LINTIAN = paths.RUNTIME / "scripts" / "lintian.sh"
PRODUCED = (".deb", ".ddeb", ".buildinfo", ".changes", ".dsc")


def pin_debian_mtimes(tree: Path) -> int:
    """Every file under debian/ gets the changelog's time. dpkg-source clamps
    the debian tarball's mtimes to SOURCE_DATE_EPOCH but keeps older ones, so
    without this the tarball, and the .dsc that names its checksum, would
    depend on when ci/source wrote the tree, and a re-run of the release would
    rebuild the same sources."""
    epoch = changelog_epoch(tree / "debian" / "changelog")
    for p in [tree / "debian", *(tree / "debian").rglob("*")]:
        os.utime(p, (epoch, epoch), follow_symlinks=False)
    return epoch


def build_key(tree_key: str, kind: str, build_env: dict) -> str:
    """What the packages are made from, and the code that makes them (the
    source package's bytes depend on pin_debian_mtimes, for one)."""
    return hash_inputs([("tree", tree_key), ("kind", kind), ("args", " ".join(ARGS[kind])),
                        ("environment", what_is_built(build_env)),
                        ("script", BUILD.read_text() + LINTIAN.read_text()), *code_inputs(__name__)])


def dpkg_buildpackage(root: Root, kind: str, src: Path, work: Path, build_env: dict) -> None:
    """The build itself, resumable: its whole log appended to build.log (beside
    out/), its progress and a heartbeat on the console."""
    log_path = work / "build.log"
    args = dpkg_args(kind, build_env)
    log(f"dpkg-buildpackage {' '.join(args)} in the build root, DEB_BUILD_OPTIONS=\"{build_env['DEB_BUILD_OPTIONS']}\"; "
        f"whole log: {log_path}")
    with open(log_path, "a") as logf:
        logf.write(f"\n===== {time.strftime('%Y-%m-%d %H:%M:%S')} ci/build-debs --profile {kind} {build_env}\n")
        logf.flush()
        build_in_root(root, BUILD, {"TREE": str(src), "ARGS": " ".join(args), **build_env}, logf, "build-debs",
                      f"dpkg-buildpackage failed; the whole log is {log_path}. Re-run ci/build-debs"
                      f"{' --source-only' if kind == 'source' else ' --profile ' + kind} to resume", EXIT_ERROR)


def build(tree: Path, tree_key: str, kind: str, build_env: dict, new: Path) -> dict:
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
        pin_debian_mtimes(src)
        orig = pinned_file(load_pins(), "orig")
        link = work / orig["name"]
        if not link.exists():
            os.link(paths.downloads_dir() / orig["name"], link)
    root = Root("build", tree)
    dpkg_buildpackage(root, kind, src, work, build_env)
    produced = [f for f in work.iterdir() if f.is_file() and f.suffix in PRODUCED or f.name.endswith(".debian.tar.xz")]
    if kind == "source":
        dsc = next(f.name for f in produced if f.suffix == ".dsc")
        log(f"lintian {dsc}")
        rc = root.run(["bash", str(LINTIAN)], env={"WORK": str(work), "TARGET": dsc})
        if rc != 0:
            raise StageError(f"lintian reports errors on {dsc} (exit {rc})", EXIT_ERROR)
    for f in produced:
        shutil.move(str(f), new / f.name)
    if kind == "source":
        # the source package whole beside its .dsc, so that it unpacks from there
        # (ci/build-release): the orig tarball is hard-linked, never copied
        os.link(link, new / link.name)
    names = sorted(f.name for f in new.iterdir())
    log(f"built in {time.monotonic() - t0:.0f} s: {', '.join(names)}")
    return {"tree_inputs": tree_key, "profile": kind, **build_env, "seconds": round(time.monotonic() - t0),
            "files": names}


def execute():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--profile", choices=["osd-only", "full"], default="osd-only")
    p.add_argument("--source-only", action="store_true", help="build the source package and run lintian on it")
    p.add_argument("--jobs", type=int, help="parallel jobs (default: parallel= of $DEB_BUILD_OPTIONS, else every core)")
    args = p.parse_args()
    kind = "source" if args.source_only else args.profile
    build_env = build_environment(os.environ, kind, args.jobs, development=True)
    tree, tree_key = assembled_tree()
    key = build_key(tree_key, kind, build_env)
    out = paths.debs_out(kind)
    produce(out, key, lambda new: build(tree, tree_key, kind, build_env, new))
    print(out)
    return 0


def main():
    main_wrapper(execute)
