"""Every location ceph-perf reads or writes, named once.

Two roots: the persistent cache (downloads, roots, ccache, long build
directories, built packages, bench state), which lives outside the work tree
so that wiping a checkout loses no hours of compiling, and the build
directory (the assembled tree and the reports), which is safe to wipe.
"""
from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Configuration: data files in the tree.
CMAKE, PATCHES, DEBIAN, BENCH = (REPO / d for d in ("cmake", "patches", "debian", "bench"))
PROFILES, RULES, BENCH_CONF = (BENCH / d for d in ("profiles", "rules", "conf"))
ROOTS_TOML, AUDIT_RULES, RELEASE_GUARD, LTO_LINK_EXCEPTIONS, OSD_MINIMAL, PGO_PIN = (
    CMAKE / f for f in ("roots.toml", "audit-rules.toml", "release-guard.cmake", "lto-link-exceptions.cmake",
                        "osd-minimal.cmake", "pgo.toml"))
# The pinned training counts, committed beside their pin: a fresh machine
# builds pkg.ceph.pgo from them without the instrumented build and training
# (about 40 minutes on 2 cores from a cold ccache) that ci/pgo-train spends
# making them.
PGO_COUNTS = CMAKE / "pgo-profile.tar.xz"
# What ci/pgo-train runs on the instrumented OSD.
PGO_TRAINING = BENCH / "pgo-training.toml"
UNIT_TESTS = PATCHES / "unit-tests.toml"
# The release's stages, declared once (cephperf/pipeline.py reads it).
PIPELINE = CMAKE / "pipeline.toml"
# The node checks of a candidate's OSD (cephperf/node_checks.py reads it).
NODE_CHECKS = CMAKE / "node-checks.toml"
# Code that runs inside the roots (stdlib only), as files: scripts and the node side.
RUNTIME = REPO / "cephperf" / "runtime"
TEST_SUPPORT = REPO / "cephperf" / "packaging" / "test-support"
# The negative control of check-flags: BuildRocksDB.cmake in its pre-fix form.
ROCKSDB_PREFIX_FIXTURE = REPO / "cephperf" / "packaging" / "controls" / "rocksdb-prefix-flags.patch"


def cache_dir() -> Path:
    return Path(os.environ.get("CEPH_PERF_CACHE", "/var/cache/ceph-perf"))


def build_dir() -> Path:
    return Path(os.environ.get("CEPH_PERF_BUILD", REPO / "build"))


def pins_path() -> Path:
    return Path(os.environ.get("CEPH_PERF_PINS", CMAKE / "pins.toml"))


def local_toml() -> Path:
    return Path(os.environ.get("CEPH_PERF_LOCAL", REPO / "local.toml"))


def downloads_dir() -> Path:
    return cache_dir() / "downloads"


def apt_dir(suite: str, kind: str) -> Path:
    return cache_dir() / "apt" / f"{suite}-{kind}"


def roots_dir() -> Path:
    return cache_dir() / "roots"


def ccache_dir() -> Path:
    return cache_dir() / "ccache"


def debs_work(kind: str) -> Path:
    """ci/build-debs' long-lived tree and build directory of one profile (osd-only, full, source)."""
    return cache_dir() / "builds" / f"debs-{kind}"


def debs_out(kind: str) -> Path:
    return debs_work(kind) / "out"


def release_out(profile: str) -> Path:
    """ci/build-release's output: a clean build of the source package."""
    return cache_dir() / "builds" / f"release-{profile}" / "out"


def pgo_generate_out() -> Path:
    """ci/pgo-train's instrumented build (pkg.ceph.pgo-generate): never released."""
    return cache_dir() / "builds" / "pgo-generate" / "out"


def pgo_train_out() -> Path:
    """ci/pgo-train's output: the packed training counts, their stamp and pin."""
    return cache_dir() / "builds" / "pgo-train" / "out"


def osd_build() -> Path:
    return cache_dir() / "builds" / "osd"


def osd_release_out() -> Path:
    """ci/build-osd --release's output: ceph-osd built as the release builds it."""
    return cache_dir() / "builds" / "osd-release" / "out"


def scratch_dir() -> Path:
    """Room for throwaway files a root run is given (the tests' packages, a
    build's copy of its scripts), under the persistent cache like everything
    else it sees. Made on first use: a fresh machine has no cache yet."""
    d = cache_dir() / "scratch"
    d.mkdir(parents=True, exist_ok=True)
    return d


def repo_dir() -> Path:
    return cache_dir() / "repo"


def throwaway_gnupg() -> Path:
    return cache_dir() / "throwaway-gnupg"


def stock_library_dir(version: str) -> Path:
    return downloads_dir() / "stock-libceph-common" / version


def bench_state(name: str) -> Path:
    """State of one node-side run of a ci/ check (upgrade-test, io-mock-test)."""
    return cache_dir() / "bench" / name


def cluster_state(name: str) -> Path:
    return cache_dir() / "bench" / "clusters" / name


def runs_root() -> Path:
    return cache_dir() / "bench" / "runs"


def source_dir() -> Path:
    """ci/source's output: the assembled tree and its stamp."""
    return build_dir() / "source"


def reports(stage: str) -> Path:
    return build_dir() / "reports" / stage
