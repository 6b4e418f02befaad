#!/bin/bash
# ci/build-osd, inside the build root: ceph-osd with the release flags our
# debian/rules gives (dpkg-buildflags with hardening, RelWithDebInfo with
# -DNDEBUG, the release guard), in the minimal tree.
set -eu
cd "$WORK/build"
if [ ! -f build.ninja ]; then
  . "$(dirname "$0")/dpkg-buildflags.sh"
  cmake -G Ninja -S "$WORK/src" -B . -C "$MINIMAL" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="$CFLAGS -DNDEBUG" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$CXXFLAGS -DNDEBUG" \
    -DCMAKE_PROJECT_ceph_INCLUDE="$WORK/src/debian/ceph-perf/release-guard.cmake"
fi
ccache --zero-stats >/dev/null
nice -n 10 ninja -j"$JOBS" $TARGETS
ccache --show-stats | sed -n '1,12p'
