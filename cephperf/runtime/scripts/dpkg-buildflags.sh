# Sourced by the scripts that configure debhelper-style: the compiler flags
# debhelper gives a cmake build. Debian's rules ask dpkg for hardening=+all
# optimize=-lto, and debhelper's cmake build system appends CPPFLAGS to the C
# and C++ flags.
eval "$(DEB_BUILD_MAINT_OPTIONS='hardening=+all optimize=-lto' dpkg-buildflags --export=sh)"
export CFLAGS="$CFLAGS $CPPFLAGS" CXXFLAGS="$CXXFLAGS $CPPFLAGS"
