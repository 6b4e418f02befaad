"""ceph-osd alone, built exactly as the release builds it: from the release's
source package, configured by its own debian/rules (dpkg-buildpackage -T
override_dh_auto_configure) with the release's DEB_BUILD_OPTIONS and
DEB_BUILD_PROFILES, so with LTO and the pinned PGO counts, at the release's
fixed path (GCC names each object's counts by it), then make's ceph-osd
target as debian/rules' build makes it. What it leaves out is what ceph-osd
does not link (ceph-fuse, the tools, the store test) and the packaging
(install, strip, the -dbg, lintian): a release-equivalent OSD for
`bench/gate --candidate DIR` in less time than a release.
"""
import shutil
import time
from pathlib import Path

from .. import paths
from ..common import EXIT_ERROR, EXIT_FAIL, StageError, hash_inputs, load_pins, log
from ..imports import code_inputs
from ..stage import produce
from . import pgo
from .buildlog import build_in_root
from .dpkg_build import build_environment, what_is_built
from .release_build import BUILD_PATH, KEPT_TREE, KEPT_TREE_SCRIPT, REDO_MINUTES, check_counts_fit, default_dsc
from .roots import Root
from .source_tree import assembled_tree

BUILD = paths.RUNTIME / "scripts" / "build-osd-release.sh"


def build(dsc: Path, build_env: dict, new: Path) -> dict:
    tree_dir = new / KEPT_TREE
    resuming = (tree_dir / ".unpacked").is_file()
    tree_dir.mkdir(exist_ok=True)
    tree, _ = assembled_tree()  # the build root is made from its Build-Depends
    jobs = next(o.split("=", 1)[1] for o in build_env["DEB_BUILD_OPTIONS"].split() if o.startswith("parallel="))
    log(f"{'resumed' if resuming else 'cold'} build of ceph-osd from {dsc.name} as the release builds it, "
        f"DEB_BUILD_PROFILES=\"{build_env['DEB_BUILD_PROFILES']}\"; whole log: {new / 'build.log'}")
    t0 = time.monotonic()
    with open(new / "build.log", "a" if resuming else "w") as logf:
        build_in_root(Root("build", tree), BUILD,
                      {"DSC": str(dsc), "OUT": str(new), "JOBS": jobs, "REDO_MINUTES": str(REDO_MINUTES),
                       **build_env}, logf, "build-osd",
                      f"the build of ceph-osd from {dsc.name} failed; the next run goes on from where it "
                      f"stopped (or remove {new} to start afresh)", EXIT_FAIL,
                      binds=[dsc.parent, new], mounts={tree_dir: BUILD_PATH})
    seconds = round(time.monotonic() - t0)
    # as the release's check: an OSD built with counts that do not fit is not the release's
    check_counts_fit(new, build_env)
    log(f"ceph-osd built as the release builds it in {seconds} s{' (this run of a resumed build)' if resuming else ''}")
    shutil.rmtree(tree_dir)
    return {"dsc": dsc.name, **build_env, "seconds": seconds, "resumed": resuming}


def osd_key(dsc: Path, build_env: dict) -> str:
    """What an OSD built before is taken over by (and a kept tree resumed
    by). This module and dpkg_build decide how the source package reaches
    dpkg-buildpackage, as they do for the release's build: a fix to either
    must not leave an OSD built without it counted as the release's. Not
    the closure of this module: through release_build it would take in the
    release's lintian and blhc readers, and a fix to those does not change
    an OSD."""
    own = Path(__file__).resolve()
    return hash_inputs([("dsc", dsc), ("environment", what_is_built(build_env)), ("script", BUILD),
                        ("kept tree", KEPT_TREE_SCRIPT), (f"code {own.relative_to(paths.REPO)}", own),
                        *code_inputs("cephperf.packaging.dpkg_build")])


def release_equivalent_osd(dsc: Path | None, environ: dict, jobs: int | None, out: Path) -> Path:
    """`out` holding ceph-osd built from `dsc` (default: the release's source
    package) as the osd-only release builds it under environ's
    DEB_BUILD_OPTIONS and DEB_BUILD_PROFILES (ci/pgo-train's instrumented
    build is this under pkg.ceph.pgo-generate), building it unless current."""
    dsc = (dsc or default_dsc()).resolve()
    if not dsc.is_file():
        raise StageError(f"{dsc}: no such source package", EXIT_ERROR)
    build_env = build_environment(environ, "osd-only", jobs)
    pgo.require_counts(load_pins(), build_env["DEB_BUILD_PROFILES"])
    key = osd_key(dsc, build_env)
    produce(out, key, lambda new: build(dsc, build_env, new), resumable=True,
            valid=lambda stamp: (out / "ceph-osd").is_file())
    return out
