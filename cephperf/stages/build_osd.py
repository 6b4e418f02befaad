"""ci/build-osd: a development build of ceph-osd from the assembled tree,
or (--release) ceph-osd alone built exactly as the release builds it.

  ci/build-osd [--targets T] [--jobs N]
  ci/build-osd --release [--dsc FILE] [--jobs N] [--out DIR]

A long job (about 55 minutes on 2 cores with a cold ccache, minutes warm),
so everything lives in the persistent cache and a re-run resumes:
  $CEPH_PERF_CACHE/builds/osd/src/     snapshot of the assembled tree (rsync
                                       by content, so only files whose bytes
                                       changed rebuild; the work tree may
                                       change meanwhile; a changed file of
                                       the bundled RocksDB runs its own
                                       build again)
  $CEPH_PERF_CACHE/builds/osd/build/   the ninja build directory
  $CEPH_PERF_CACHE/ccache/             compiler cache
  $CEPH_PERF_CACHE/builds/osd/out/     ceph-osd (unstripped) + stamp.json

Flags are the release ones our debian/rules gives: dpkg-buildflags with
hardening, RelWithDebInfo with -DNDEBUG, the release guard; the tree is the
minimal one of cmake/osd-minimal.cmake. `bench/gate --candidate DIR` takes
the out/ directory as a development build laid over Debian's packages, with
`--candidate-conf bench/conf/debian-plugin-dirs.conf` (the build has CMake's
default prefix, so it would look for plugins under /usr/local).

--release builds ceph-osd from the release's source package (FILE, default
ci/build-debs --source-only's, the .dsc ci/release builds) with the
release's own debian/rules configure, build options and profiles (LTO and
the pinned PGO counts unless DEB_BUILD_PROFILES turns them off), at the
release build's path, and only make's ceph-osd target: no ccache under PGO,
no other program, no packaging. Output: DIR (default
$CEPH_PERF_CACHE/builds/osd-release/out) with ceph-osd, build.log and the
stamp, for `bench/gate --candidate DIR`. An interrupted build goes on in its
kept tree, as ci/build-release's does.
"""
import argparse
import os
import time
from pathlib import Path

from cephperf import paths
from cephperf.common import StageError, EXIT_ERROR, hash_inputs, log, main_wrapper, run
from cephperf.imports import code_inputs
from cephperf.packaging.release_osd import release_equivalent_osd
from cephperf.packaging.roots import Root
from cephperf.packaging.source_tree import assembled_tree
from cephperf.stage import produce

BUILD = paths.RUNTIME / "scripts" / "build-osd.sh"


# The bundled RocksDB is a CMake ExternalProject whose build step runs once
# and is then marked done by this stamp: ninja never looks at RocksDB's
# sources again, so a patch to them would leave the old library linked.
ROCKSDB_BUILD_STAMP = Path("src/rocksdb_ext-prefix/src/rocksdb_ext-stamp/rocksdb_ext-build")


def sync_by_content(tree: Path, dest: Path) -> list[str]:
    """Make dest the tree (quilt's .pc/ aside), touching only files whose bytes differ.

    Every assembly of the tree applies the whole series again, so each file a
    patch touches comes out with a new mtime even when its bytes are those
    of the last build; with mtimes copied, adding one patch rebuilt all that
    includes any patched header. Compared by checksum and without -t, a file
    whose bytes changed gets the time of the sync (newer than its objects)
    and an unchanged one keeps the time it was built with.

    Returns the paths, relative to dest, of the files written or removed."""
    r = run(["rsync", "-rlpgoD", "--checksum", "--delete", "--exclude=/.pc", "--itemize-changes",
             f"{tree}/", f"{dest}/"], "syncing the tree")
    changed = []
    for line in r.stdout.splitlines():
        change, _, path = line.partition(" ")
        if change.startswith(">f") or change == "*deleting":
            changed.append(path.strip())
    return changed


def forget_rocksdb_build(changed: list[str], build_dir: Path) -> bool:
    """Have ninja run RocksDB's own (incremental) build again when a file of
    RocksDB changed: removes the ExternalProject's build stamp. Done before
    the build, so an interrupted build still rebuilds RocksDB when resumed."""
    if not any(p.startswith("src/rocksdb/") for p in changed):
        return False
    (build_dir / ROCKSDB_BUILD_STAMP).unlink(missing_ok=True)
    return True


def build(tree: Path, tree_key: str, targets: str, jobs: int, new: Path) -> dict:
    work = paths.osd_build()
    (work / "build").mkdir(parents=True, exist_ok=True)
    log(f"syncing the tree into {work / 'src'}")
    changed = sync_by_content(tree, work / "src")
    if forget_rocksdb_build(changed, work / "build"):
        log("RocksDB's sources changed: its build runs again")
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
    p.add_argument("--release", action="store_true", help="ceph-osd alone, built as the release builds it")
    p.add_argument("--dsc", type=Path, help="with --release: the source package (default: the release's)")
    p.add_argument("--out", type=Path, help="with --release: the output directory")
    args = p.parse_args()
    if args.release:
        print(release_equivalent_osd(args.dsc, dict(os.environ), args.jobs, args.out or paths.osd_release_out()))
        return 0
    if args.dsc or args.out:
        raise StageError("--dsc and --out go with --release", EXIT_ERROR)
    tree, tree_key = assembled_tree()
    out = paths.osd_build() / "out"
    # the code is keyed too: a fix to how the tree reaches ninja (the RocksDB
    # stamp) must not leave a ceph-osd built without it counted as current
    key = hash_inputs([("tree", tree_key), *code_inputs(__name__), ("targets", args.targets),
                       ("minimal", paths.OSD_MINIMAL),
                       ("script", BUILD), ("buildflags", BUILD.with_name("dpkg-buildflags.sh"))])
    produce(out, key, lambda new: build(tree, tree_key, args.targets, args.jobs, new),
            valid=lambda st: (out / "ceph-osd").exists())
    print(out)
    return 0


def main():
    main_wrapper(execute)
