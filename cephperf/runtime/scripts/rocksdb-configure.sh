# Sourced by check-flags-case.sh and patch-tests.sh: run the bundled RocksDB's
# own configure step in the configured build dir $B, through the generator
# dh or we chose (dh's cmake build system writes Makefiles, we use Ninja).
# RocksDB is an ExternalProject, so its compile commands land in
# $B/src/rocksdb/compile_commands.json, apart from Ceph's.
configure_rocksdb() {
  local stamp mk
  if [ -f "$B/build.ninja" ]; then
    stamp=$(ninja -C "$B" -t targets all | sed -n 's/^\([^:]*rocksdb_ext-configure\):.*/\1/p' | head -n1)
    [ -n "$stamp" ] || { echo "no rocksdb_ext configure step in $B"; return 3; }
    ninja -C "$B" "$stamp"
  else
    mk=src/CMakeFiles/rocksdb_ext.dir/build.make
    stamp=$(sed -n 's/^\([^: ]*rocksdb_ext-stamp\/rocksdb_ext-configure\):.*/\1/p' "$B/$mk" | head -n1)
    [ -n "$stamp" ] || { echo "no rocksdb_ext configure step in $B/$mk"; return 3; }
    (cd "$B" && make -f "$mk" "$stamp")
  fi
}
