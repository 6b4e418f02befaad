#!/bin/bash
# ci/patch-tests, inside the build root, cwd = the tree seen through a
# throwaway overlay. Configures, generates the options code (which checks
# every option a patch adds), then hands over to patch_tests_helper.py, which
# reads $PLAN (JSON) and writes $OUT/results.json; one log per step in $OUT.
# WITH_TESTS=ON as in Debian's build: it defines UNIT_TESTS_BUILT, which adds
# members to Messenger and AsyncConnection (the messenger's test interceptor),
# so tests built here share the stock library's class layouts. CephFS and
# FUSE are on over the minimal tree: the series touches ceph-fuse too.
set -u
export CMAKE_EXPORT_COMPILE_COMMANDS=ON   # cmake >= 3.17 reads it, RocksDB's configure too
B=/tmp/patch-tests-build
cmake -S . -B $B -G Ninja -C "$MINIMAL" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWITH_TESTS=ON \
  -DWITH_CEPHFS=ON -DWITH_LIBCEPHFS=ON -DWITH_FUSE=ON \
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON > "$OUT/configure.log" 2>&1 || { echo "configure failed"; exit 3; }
ninja -C $B legacy-option-headers > "$OUT/options.log" 2>&1
echo $? > "$OUT/options.rc"
# RocksDB's compile commands too: the series touches the bundled RocksDB
. "$(dirname "$0")/rocksdb-configure.sh"
configure_rocksdb > "$OUT/rocksdb-configure.log" 2>&1 || { echo "RocksDB's configure step failed"; exit 3; }
exec python3 "$(dirname "$0")/../patch_tests_helper.py" "$B"
