# Targets linked without link-time optimisation in the pkg.ceph.lto profile.
# Included through CMAKE_PROJECT_INCLUDE (debian/rules passes it in that
# profile only; ci/source copies this file to debian/ceph-perf/ in the
# assembled tree), and applied once every target of Ceph's tree exists.
#
# Why ceph-osdomap-tool: GNU ld 2.44 (trixie) cannot LTO-link it. During the
# link's LTO rescan it extracts more members of libos.a, libblk.a and libkv.a
# and stops with "mapped section .debug_info has non-NULL buffer", followed by
# hundreds of undefined libstdc++ and Boost symbols. ceph-osd,
# ceph-bluestore-tool and ceph-objectstore-tool link from the same archives
# without trouble. The objects are fat (-ffat-lto-objects), so -fno-lto on
# this one link uses their ordinary code: the tool is built as Debian builds
# it, and only it loses LTO. Measured on the +perf4 tree: the LTO link fails
# the same way every time; with -fno-lto it links in 3 s.
#
# Why a project include rather than a patch to src/tools/CMakeLists.txt: it
# works around our toolchain, not a fault in Ceph, and applies only in our
# profile.
if(NOT PROJECT_NAME STREQUAL "ceph")
  return()
endif()
include_guard(GLOBAL)

set(CEPH_PERF_LINK_WITHOUT_LTO ceph-osdomap-tool)

function(ceph_perf_link_without_lto)
  foreach(target IN LISTS CEPH_PERF_LINK_WITHOUT_LTO)
    if(TARGET ${target})
      # Last -f[no-]lto on the driver's command line wins.
      set_property(TARGET ${target} APPEND PROPERTY LINK_OPTIONS -fno-lto)
      message(STATUS "ceph-perf: ${target} is linked without LTO (cmake/lto-link-exceptions.cmake)")
    endif()
  endforeach()
endfunction()

# Run at the end of the top-level CMakeLists.txt, when src/tools has been read.
cmake_language(DEFER CALL ceph_perf_link_without_lto)
