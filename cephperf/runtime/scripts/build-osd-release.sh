#!/bin/bash
# ci/build-osd --release, inside a throwaway overlay of the build root:
# ceph-osd alone, configured by the release's own debian/rules from the
# release's source package, at the release's fixed path, with the release's
# DEB_BUILD_OPTIONS and DEB_BUILD_PROFILES (so with LTO and the pinned PGO
# counts): the release build without the other targets and the packaging.
# /build/ceph-perf is the stage's kept tree (kept-tree.sh).
set -eu
export DEB_BUILD_OPTIONS DEB_BUILD_PROFILES
. "$(dirname "$0")/kept-tree.sh"
enter_kept_tree
B=obj-$(dpkg-architecture -qDEB_HOST_GNU_TYPE)
# configured once; again when resumed, since kept-tree.sh removes the cache
if [ ! -f "$B/.ceph-perf-configured" ] || [ ! -f "$B/CMakeCache.txt" ]; then
  # the release's configure, with the environment dpkg-buildpackage gives it
  dpkg-buildpackage -T override_dh_auto_configure --no-sign -nc
  touch "$B/.ceph-perf-configured"
fi
# make runs outside debian/rules here, so it gets from debian/rules what the
# release's make gets: CCACHE_DISABLE, exported when the build uses training
# counts (ccache would key an object without them), not when it writes them
# (pkg.ceph.pgo-generate, ci/pgo-train's build, which goes through ccache)
CCACHE_DISABLE=$(make -s --no-print-directory -f debian/rules \
  --eval='ceph-perf-print-ccache-disable: ; @echo "$$CCACHE_DISABLE"' ceph-perf-print-ccache-disable)
if [ -n "$CCACHE_DISABLE" ]; then
  export CCACHE_DISABLE
  echo "ceph-perf: ccache off, as debian/rules has it for DEB_BUILD_PROFILES=\"$DEB_BUILD_PROFILES\""
else
  unset CCACHE_DISABLE
  echo "ceph-perf: ccache on, as debian/rules has it for DEB_BUILD_PROFILES=\"$DEB_BUILD_PROFILES\""
fi
# dpkg-buildpackage exports the changelog's date to everything the release
# build runs; make runs outside it here, and the bundled RocksDB is
# configured at make time and stamps that date into ceph-osd
# (rocksdb_build_date), so without it the .rodata differs from the release's
export SOURCE_DATE_EPOCH
SOURCE_DATE_EPOCH=$(dpkg-parsechangelog -STimestamp)
# the targets and order of debian/rules' override_dh_auto_build; VERBOSE as
# dh_auto_build makes it, so the log shows each compile command
nice -n 10 make -C "$B" -j"$JOBS" VERBOSE=1 legacy-option-headers
nice -n 10 make -C "$B" -j"$JOBS" VERBOSE=1 ceph-osd
cp -p "$B/bin/ceph-osd" "$OUT/"
