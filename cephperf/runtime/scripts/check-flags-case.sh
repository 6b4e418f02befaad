#!/bin/bash
# ci/check-flags, inside the build root, cwd = the tree (seen through an
# overlay): configure one case and leave ceph.json and rocksdb.json (the
# compile commands the build would run) in $OUT.
set -eu
export CMAKE_EXPORT_COMPILE_COMMANDS=ON   # cmake >= 3.17 reads it, RocksDB's configure too
case "$CASE" in
  a|a-debian|a-lto|a-lto-pgo|a-pgo-generate)
    if [ "$CASE" = a-debian ]; then patch -R -p1 -s --fuzz=0 < "$RULES_DELTA"; fi
    # pkg.ceph.pgo's configure unpacks the training counts, which a configure
    # never reads: a tree that carries none (ci/source without a trained
    # profile) gets an empty archive in this throwaway overlay.
    if [ "$CASE" = a-lto-pgo ] && [ ! -f debian/ceph-perf/pgo-profile.tar.xz ]; then
      tar -cJf debian/ceph-perf/pgo-profile.tar.xz -T /dev/null
    fi
    # $PROFILES and $LINKED_TARGETS come from ci/check-flags' table of cases
    dpkg-buildpackage -T override_dh_auto_configure --no-sign -nc ${PROFILES:+--build-profiles=$PROFILES}
    B=obj-$(dpkg-architecture -qDEB_HOST_GNU_TYPE)
    # the link commands of the binaries the osd-only packages ship (dh's
    # cmake build system writes Makefiles: one link.txt per target)
    for t in $LINKED_TARGETS; do
      link=$(find "$B/src" -path "*/CMakeFiles/$t.dir/link.txt" -print -quit)
      [ -n "$link" ] || { echo "no link command for $t under $B/src" >&2; exit 3; }
      cp "$link" "$OUT/link-$t.txt"
    done ;;
  b)
    env -u CFLAGS -u CXXFLAGS -u CPPFLAGS -u LDFLAGS \
      cmake -S . -B /tmp/b -G Ninja -C "$MINIMAL" -DCMAKE_BUILD_TYPE=RelWithDebInfo
    B=/tmp/b ;;
  c)
    patch -p1 -s --fuzz=0 < "$FIXTURE"
    . "$(dirname "$0")/dpkg-buildflags.sh"
    cmake -S . -B /tmp/c -G Ninja -C "$MINIMAL" -DCMAKE_BUILD_TYPE=None
    B=/tmp/c ;;
esac
. "$(dirname "$0")/rocksdb-configure.sh"
configure_rocksdb || exit 3
cp "$B/compile_commands.json" "$OUT/ceph.json"
cp "$B/src/rocksdb/compile_commands.json" "$OUT/rocksdb.json"
