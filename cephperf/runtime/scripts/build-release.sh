#!/bin/bash
# ci/build-release, inside a throwaway overlay of the build root: the source
# package unpacked afresh and built whole, as a buildd builds it; nothing of
# the development tree is used. The path is fixed so that the compile
# commands, and with them ccache's keys and GCC's names for the training
# counts, are the same from one release build to the next.
# DEB_BUILD_OPTIONS, DEB_BUILD_PROFILES and $ARGS come from the stage; the
# results are copied to $OUT.
# /build/ceph-perf is the stage's kept tree (kept-tree.sh).
set -eu
export DEB_BUILD_OPTIONS DEB_BUILD_PROFILES
. "$(dirname "$0")/kept-tree.sh"
# the default 5 GiB would evict a resumed build's objects (debug info)
ccache --max-size=20G >/dev/null
ccache --zero-stats >/dev/null
enter_kept_tree
if [ "$KEPT_TREE_RESUMED" = 1 ]; then
  # -nc: the tree's earlier outputs are what a resumed build goes on from
  nice -n 10 dpkg-buildpackage -us -uc -nc $ARGS
else
  nice -n 10 dpkg-buildpackage -us -uc $ARGS
fi
# the .changes of the release: the unchanged source package, the .buildinfo
# and the binaries (a binary build's .changes lists no source)
changes=$(ls ../*.changes)
dpkg-genchanges --build=full -sa -O"$changes"
# upstream's store test, built with the release (not shipped), for ci/store-test
if [ -x obj-x86_64-linux-gnu/bin/ceph_test_objectstore ]; then
  mkdir -p "$OUT/tests"
  cp -p obj-x86_64-linux-gnu/bin/ceph_test_objectstore "$OUT/tests/"
fi
cd ..
cp -p ./*.deb ./*.changes ./*.buildinfo ./*.dsc ./*.tar.* "$OUT"/
ccache --show-stats | sed -n '1,12p'
