"""ci/build-release: the release build, from the source package in a clean root.

  ci/build-release [--profile osd-only|full] [--dsc FILE] [--jobs N] [--out DIR]

Debian's buildds build each upload from its .dsc in a fresh chroot (sbuild,
in unshare mode on an mmdebstrap tarball). This does the same with the cached
build root: the .dsc (default: ci/build-debs --source-only's, which lintian
has checked) is unpacked with dpkg-source -x inside a throwaway overlay of the
root and built whole with dpkg-buildpackage; nothing of the development tree
or its build directory is used, and the overlay is gone afterwards. The
unpack path is fixed, so ccache serves one release build from the last
(except under PGO, whose counts ccache cannot key on).
The tree is kept in the unfinished output until the build is done: a build
interrupted (or failed) before dpkg-buildpackage finished goes on in it with
the same inputs, making again what was written in its last minutes; one
interrupted after it finished resumes at its checks, as the build takes hours
here and the checks minutes. Remove the unfinished output (the path is in
the log) to start afresh.

Then the checks of what was built, as Debian's QA runs them, and ours:
  - blhc on the build log: every compile and link line carries the flags
    dpkg-buildflags gives; a warning not explained in cmake/blhc.toml fails;
  - no -Wodr or -Wlto-type-mismatch warning (LTO's One Definition Rule
    checks) that cmake/lto-warnings.toml does not explain;
  - lintian on the .changes (source, .buildinfo, binaries): no errors;
  - under PGO (the default), no coverage-mismatch warning: the training counts fit
    every function they are used for.
A change to the checks' rules alone re-judges a finished build (its files
are taken over) instead of building again.

Writes DIR (default $CEPH_PERF_CACHE/builds/release-PROFILE/out): the .debs,
.changes and .buildinfo, build.log, blhc.json, lto-warnings.json and
lintian.txt, tests/ceph_test_objectstore (upstream's store test built with
the release, for ci/store-test; not shipped), and a stamp keyed on the .dsc,
DEB_BUILD_OPTIONS and DEB_BUILD_PROFILES (ci/build-debs explains how those
are taken) and the checks' rules. The resumable ci/build-debs stays the
development loop.
"""
import argparse
import os
from pathlib import Path

from cephperf import paths
from cephperf.common import main_wrapper
from cephperf.packaging.release_build import built_release


def execute():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--profile", choices=["osd-only", "full"], default="osd-only")
    p.add_argument("--dsc", type=Path, help="the source package (default: ci/build-debs --source-only's)")
    p.add_argument("--jobs", type=int, help="parallel jobs (default: parallel= of $DEB_BUILD_OPTIONS, else every core)")
    p.add_argument("--out", type=Path, help="default $CEPH_PERF_CACHE/builds/release-PROFILE/out")
    args = p.parse_args()
    out = built_release(args.dsc, args.profile, os.environ, args.jobs, args.out or paths.release_out(args.profile))
    print(out)
    return 0


def main():
    main_wrapper(execute)
