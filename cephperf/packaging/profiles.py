"""What a build's DEB_BUILD_PROFILES turn on, as our debian/rules reads them
(debian/delta/whole-program-profile.patch, profile-guided-profile.patch).

The release is the fast build: link-time and profile-guided optimisation are
on unless a profile turns them off. pkg.ceph.nolto turns off both (the
training counts fit code compiled with -flto only), pkg.ceph.nopgo the
second; pkg.ceph.pgo-generate builds instrumented code instead of using the
counts. pkg.ceph.lto and pkg.ceph.pgo, the opt-in names before +perf8, change
nothing.
"""
from __future__ import annotations

NOLTO, NOPGO, PGO_GENERATE = "pkg.ceph.nolto", "pkg.ceph.nopgo", "pkg.ceph.pgo-generate"


def lto(profiles: str) -> bool:
    """Whether the build links with LTO."""
    return NOLTO not in profiles.split()


def pgo(profiles: str) -> bool:
    """Whether the build compiles with the pinned training counts (-fprofile-use)."""
    return not {NOLTO, NOPGO, PGO_GENERATE} & set(profiles.split())
