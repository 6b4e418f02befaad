# Sourced by build-release.sh and build-osd-release.sh: enter the stage's kept
# tree, /build/ceph-perf (in the persistent cache), and its unpacked source.
# A build of the same inputs that stopped goes on in it, because a
# profile-guided build compiles without ccache (GCC's counts are not in
# ccache's key) and takes hours here. Needs DSC and REDO_MINUTES; sets
# KEPT_TREE_RESUMED to 1 when it goes on in an earlier tree, else 0.

enter_kept_tree() {
  cd /build/ceph-perf
  if [ -f .unpacked ]; then
    # An output being written when the build stopped may be cut short yet
    # newer than its inputs, so make would take it. Each is written within
    # seconds (a link's output at its end); those written in the last
    # $REDO_MINUTES minutes before the newest file of the tree are made again.
    local newest since dropped=0
    newest=$(find src/obj-* -type f -printf '%T@\n' 2>/dev/null | sort -n | tail -n 1)
    if [ -n "$newest" ]; then
      since=$(( ${newest%.*} - REDO_MINUTES * 60 ))
      dropped=$(find src/obj-* -type f \( -name '*.o' -o -name '*.a' -o -name '*.so' -o -name '*.so.*' \
        -o -path '*/bin/*' \) -newermt "@$since" -print -delete | wc -l)
    fi
    # dh configures again when it goes on; with the earlier configure's
    # cache that is not what a clean build configures: upstream's
    # src/common/options reads WITH_EC_ISA_PLUGIN before src/erasure-code
    # caches it, so the default of osd_erasure_code_plugins would become
    # "jerasure lrc isa" where a clean build (and Debian's) has "jerasure lrc",
    # and the options header nearly every object includes would change
    # (+perf14's first resumed build compiled everything again for it).
    # Without the cache, cmake configures as the first time did.
    rm -f src/obj-*/CMakeCache.txt
    echo "ceph-perf: resuming the build of $(basename "$DSC") in its kept tree;" \
      "$dropped output(s) of its last $REDO_MINUTES minutes are made again"
    KEPT_TREE_RESUMED=1
  else
    # empty, or an unpack that stopped half-way
    find . -mindepth 1 -delete
    # the source package as it was made (the .dsc and the tarballs it names)
    cp -p "$DSC" "$(dirname "$DSC")"/*.tar.* .
    dpkg-source -x "$(basename "$DSC")" src
    touch .unpacked
    KEPT_TREE_RESUMED=0
  fi
  cd src
}
