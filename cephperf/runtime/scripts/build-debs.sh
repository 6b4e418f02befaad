#!/bin/bash
# ci/build-debs, inside the build root: dpkg-buildpackage on $TREE.
# DEB_BUILD_OPTIONS and DEB_BUILD_PROFILES (the user's, with ours appended) and
# $ARGS (whole options, e.g. --build-profiles=X: dpkg-buildpackage takes no
# value from the next word) come from the stage.
set -eu
cd "$TREE"
export DEB_BUILD_OPTIONS DEB_BUILD_PROFILES
# the default 5 GiB would evict a resumed build's objects (debug info)
ccache --max-size=20G >/dev/null
ccache --zero-stats >/dev/null
# dh configures again in the reused tree; without the earlier cache it
# configures as a clean build does (kept-tree.sh says why)
rm -f obj-*/CMakeCache.txt
nice -n 10 dpkg-buildpackage -us -uc -nc $ARGS
ccache --show-stats | sed -n '1,12p'
