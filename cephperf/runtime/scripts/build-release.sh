#!/bin/bash
# ci/build-release, inside a throwaway overlay of the build root: the source
# package unpacked afresh and built whole, as a buildd builds it; nothing of
# the development tree is used. The path is fixed so that the compile
# commands, and with them ccache's keys and GCC's names for the training
# counts, are the same from one release build to the next.
# DEB_BUILD_OPTIONS, DEB_BUILD_PROFILES and $ARGS come from the stage; the
# results are copied to $OUT.
# /build/ceph-perf is the stage's kept tree (in the persistent cache): a build
# of the same inputs that stopped before it finished goes on in it, because a
# profile-guided release compiles without ccache (GCC's counts are not in
# ccache's key) and takes hours here.
set -eu
export DEB_BUILD_OPTIONS DEB_BUILD_PROFILES
cd /build/ceph-perf
# the default 5 GiB would evict a resumed build's objects (debug info)
ccache --max-size=20G >/dev/null
ccache --zero-stats >/dev/null
if [ -f .unpacked ]; then
  # An output being written when the build stopped may be cut short yet newer
  # than its inputs, so make would take it. Each is written within seconds
  # (a link's output at its end); those written in the last $REDO_MINUTES
  # minutes before the newest file of the tree are made again.
  newest=$(find src/obj-* -type f -printf '%T@\n' 2>/dev/null | sort -n | tail -n 1)
  dropped=0
  if [ -n "$newest" ]; then
    since=$(( ${newest%.*} - REDO_MINUTES * 60 ))
    dropped=$(find src/obj-* -type f \( -name '*.o' -o -name '*.a' -o -name '*.so' -o -name '*.so.*' \
      -o -path '*/bin/*' \) -newermt "@$since" -print -delete | wc -l)
  fi
  echo "ceph-perf: resuming the build of $(basename "$DSC") in its kept tree;" \
    "$dropped output(s) of its last $REDO_MINUTES minutes are made again"
  cd src
  nice -n 10 dpkg-buildpackage -us -uc -nc $ARGS
else
  # empty, or an unpack that stopped half-way
  find . -mindepth 1 -delete
  # the source package as it was made (the .dsc and the tarballs it names)
  cp -p "$DSC" "$(dirname "$DSC")"/*.tar.* .
  dpkg-source -x "$(basename "$DSC")" src
  touch .unpacked
  cd src
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
