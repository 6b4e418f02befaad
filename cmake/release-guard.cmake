# Release guard, run right after Ceph's project(ceph) through
# CMAKE_PROJECT_ceph_INCLUDE (our debian/rules passes it; ci/source copies this
# file to debian/ceph-perf/ in the assembled tree).
#
# Why a project include rather than a patch to Ceph's CMakeLists.txt: it is a
# packaging policy, not a code change we would forward upstream; it runs
# before any of Ceph's own build-type logic, so nothing in the tree can
# default the type behind its back; and developer builds of the same tree,
# which do not pass it, stay free to use Debug.
#
# A release is RelWithDebInfo: optimised, with the debug info that the -dbg
# packages ship and that ci/audit-flags reads.
set(CEPH_PERF_RELEASE_BUILD_TYPE RelWithDebInfo)
if(NOT CMAKE_BUILD_TYPE STREQUAL CEPH_PERF_RELEASE_BUILD_TYPE)
  if(CMAKE_BUILD_TYPE)
    set(_ceph_perf_got "CMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE}")
  else()
    set(_ceph_perf_got "no CMAKE_BUILD_TYPE")
  endif()
  message(FATAL_ERROR
    "ceph-perf release guard: a release must be configured with "
    "-DCMAKE_BUILD_TYPE=${CEPH_PERF_RELEASE_BUILD_TYPE}, got ${_ceph_perf_got}. "
    "Under None (debhelper's default) Ceph and the bundled RocksDB lose -DNDEBUG, "
    "and before the RocksDB flag fix RocksDB lost -O as well. Pass "
    "-DCMAKE_BUILD_TYPE=${CEPH_PERF_RELEASE_BUILD_TYPE} after dh_auto_configure's "
    "own arguments (debian/rules does), or drop CMAKE_PROJECT_ceph_INCLUDE for a "
    "non-release build.")
endif()
message(STATUS "ceph-perf release guard: CMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE}")
