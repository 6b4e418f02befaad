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
if [ ! -f "$B/.ceph-perf-configured" ]; then
  # the release's configure, with the environment dpkg-buildpackage gives it
  dpkg-buildpackage -T override_dh_auto_configure --no-sign -nc
  touch "$B/.ceph-perf-configured"
fi
# debian/rules exports this under PGO (its comment says why); make runs
# outside debian/rules here
export CCACHE_DISABLE=1
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
