"""How dpkg-buildpackage is run for each kind of build (osd-only, full,
source): its arguments, and DEB_BUILD_OPTIONS and DEB_BUILD_PROFILES, the
user's with ours added. ci/build-debs (the development loop), ci/build-release
and ci/pgo-train's instrumented build all take them from here, so that the
three build the same way and key their packages on the same things.
"""
import json
import os

# dpkg-buildpackage's arguments and our build profiles, per kind of build
ARGS = {"osd-only": ["-b"], "full": ["-b"], "source": ["-S", "-d"]}
OUR_PROFILES = {"osd-only": ["pkg.ceph.osd-only"], "full": [], "source": []}
# Profiles that say how the optimisations are wanted; without one of them, the
# development loop (ci/build-debs) turns LTO and PGO off, for a quick build.
OPTIMISATION_PROFILES = {"pkg.ceph.lto", "pkg.ceph.pgo", "pkg.ceph.nolto", "pkg.ceph.nopgo", "pkg.ceph.pgo-generate"}


def build_environment(environ: dict, kind: str, jobs: int | None, development: bool = False) -> dict:
    """DEB_BUILD_OPTIONS and DEB_BUILD_PROFILES for the build: the user's, with
    ours appended. A user's parallel=N stands unless --jobs was given; without
    either, every core. nocheck is the user's: Debian's rules for ceph run no
    tests, and without it our osd-only profile builds upstream's store test
    (ceph_test_objectstore, for ci/store-test). A release is built with LTO
    and PGO unless the user's profiles turn them off; `development` (ci/build-debs)
    builds without them unless the user's profiles name them."""
    options = environ.get("DEB_BUILD_OPTIONS", "").split()
    parallel = [o for o in options if o.startswith("parallel=")]
    if jobs is not None or not parallel:
        options = [o for o in options if not o.startswith("parallel=")] + [f"parallel={jobs or os.cpu_count() or 2}"]
    profiles = environ.get("DEB_BUILD_PROFILES", "").split() if kind != "source" else []
    profiles += [p for p in OUR_PROFILES[kind] if p not in profiles]
    if development and kind != "source" and not OPTIMISATION_PROFILES & set(profiles):
        profiles.append("pkg.ceph.nolto")
    return {"DEB_BUILD_OPTIONS": " ".join(options), "DEB_BUILD_PROFILES": " ".join(profiles)}


def what_is_built(build_env: dict) -> str:
    """The options and profiles that change what is built (nodoc, a profile
    that drops a package, noopt), for an up-to-date key: packages built with
    others are not up to date. parallel= changes how, not what."""
    what = {**build_env, "DEB_BUILD_OPTIONS": " ".join(o for o in build_env["DEB_BUILD_OPTIONS"].split()
                                                       if not o.startswith("parallel="))}
    return json.dumps(what, sort_keys=True)


def dpkg_args(kind: str, build_env: dict) -> list[str]:
    """dpkg-buildpackage's arguments; --build-profiles would override
    DEB_BUILD_PROFILES, so it carries the whole list."""
    return ARGS[kind] + ([f"--build-profiles={build_env['DEB_BUILD_PROFILES'].replace(' ', ',')}"]
                         if build_env["DEB_BUILD_PROFILES"] else [])
