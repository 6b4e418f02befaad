"""ci/build-osd --release on a fixture source package shaped like Ceph's
(debian/rules configures obj-x86_64-linux-gnu/ with the flags of its own
environment and build profiles, then makes legacy-option-headers and
ceph-osd): its ceph-osd is compiled with exactly the command the release
build (ci/build-release) compiles it with, the build date included (the
bundled RocksDB, configured at make time, stamps SOURCE_DATE_EPOCH into
ceph-osd: the fixture puts it on the compile command)."""
import os
import subprocess
import tempfile
import unittest
from pathlib import Path

from tests.helpers import REPO, scratch_dir
from tests.root.test_build_release import fixture_dsc

# The top-level Makefile only installs (dh_auto_install; fixture_dsc adds the
# rule, for ./hello); the build is the configured directory's, as in Ceph.
MAKEFILE = ""
RULES = """\
#!/usr/bin/make -f
# Flags that only debian/rules gives, one per build profile too
export DEB_CFLAGS_MAINT_APPEND = -DFROM_RULES
ifneq (,$(filter pkg.ceph.nopgo,$(DEB_BUILD_PROFILES)))
export DEB_CFLAGS_MAINT_APPEND += -DPROFILE_NOPGO
endif
# As Ceph's rules under PGO: ccache off when the build reads training counts,
# on when it writes them (pkg.ceph.pgo-generate, ci/pgo-train's build)
ifeq (,$(filter pkg.ceph.pgo-generate,$(DEB_BUILD_PROFILES)))
export CCACHE_DISABLE = 1
endif
B = obj-x86_64-linux-gnu
%:
\tdh $@
override_dh_auto_configure:
\tmkdir -p $(B)
\tprintf 'CFLAGS = %s %s\\nLDFLAGS = %s\\n' "$$(dpkg-buildflags --get CPPFLAGS)" \\
\t  "$$(dpkg-buildflags --get CFLAGS)" "$$(dpkg-buildflags --get LDFLAGS)" > $(B)/Makefile
\tcat build.mk >> $(B)/Makefile
override_dh_auto_build:
\t$(MAKE) -C $(B) VERBOSE=1 legacy-option-headers
\t$(MAKE) -C $(B) VERBOSE=1 ceph-osd
"""
BUILD_MK = """\
legacy-option-headers:
\t@echo options headers made
\t@echo "ccache disabled: [$$CCACHE_DISABLE]"
\t@# a build whose training counts do not fit its code: GCC's warning, as a compile step gives it
\t@$(if $(filter pkg.ceph.test-counts-misfit,$(DEB_BUILD_PROFILES)),echo "m.cc:3:1: warning: number of counters does not match [-Wcoverage-mismatch]")
ceph-osd: bin/ceph-osd
bin/ceph-osd: ../hello.c
\tmkdir -p bin
\t$(CC) $(CFLAGS) $(LDFLAGS) -DBUILD_DATE=$(SOURCE_DATE_EPOCH) -o bin/ceph-osd ../hello.c
\tcp bin/ceph-osd ../hello
"""
COMPILE = "-o bin/ceph-osd ../hello.c"


def compile_line(log: Path) -> str:
    [line] = [line.strip() for line in log.read_text().splitlines() if line.rstrip().endswith(COMPILE)]
    return line


class BuildOsdReleaseTest(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="build-osd-release-test-", dir=scratch_dir()))
        self.addCleanup(subprocess.run, ["rm", "-rf", str(self.tmp)])

    def test_ceph_osd_is_compiled_as_the_release_compiles_it(self):
        src = self.tmp / "src"
        dsc = fixture_dsc(src, MAKEFILE, RULES, {"build.mk": BUILD_MK})
        # a fixture, not Ceph: no training counts apply to it, whatever the pin says
        env = {**os.environ, "DEB_BUILD_PROFILES": "pkg.ceph.nopgo"}
        release = subprocess.run([str(REPO / "ci" / "build-release"), "--dsc", str(dsc),
                                  "--out", str(self.tmp / "release")],
                                 capture_output=True, text=True, timeout=1200, env=env)
        self.assertEqual(release.returncode, 0, release.stderr[-3000:])
        osd = subprocess.run([str(REPO / "ci" / "build-osd"), "--release", "--dsc", str(dsc),
                              "--out", str(self.tmp / "osd")],
                             capture_output=True, text=True, timeout=1200, env=env)
        self.assertEqual(osd.returncode, 0, osd.stderr[-3000:])
        self.assertTrue((self.tmp / "osd" / "ceph-osd").is_file())
        self.assertFalse((self.tmp / "osd" / "tree").exists())  # the kept tree goes once the build is done
        released = compile_line(self.tmp / "release" / "build.log")
        built = compile_line(self.tmp / "osd" / "build.log")
        # the release's rules and profiles reached it, and nothing else differs
        self.assertIn("-DFROM_RULES", built)
        self.assertIn("-DPROFILE_NOPGO", built)
        self.assertIn("-fstack-protector-strong", built)
        self.assertRegex(released, r"-DBUILD_DATE=\d+ ")  # the changelog's, from dpkg-buildpackage
        self.assertEqual(built, released)
        self.assertEqual(subprocess.run([self.tmp / "osd" / "ceph-osd"], capture_output=True,
                                        text=True, timeout=30).stdout, "hi\n")
        # make runs outside debian/rules, yet gets what the rules export to it
        self.assertIn("ccache disabled: [1]", (self.tmp / "release" / "build.log").read_text())
        self.assertIn("ccache disabled: [1]", (self.tmp / "osd" / "build.log").read_text())
        # ci/pgo-train's instrumented build is this one under pkg.ceph.pgo-generate,
        # and goes through ccache as the rules have it
        gen = subprocess.run([str(REPO / "ci" / "build-osd"), "--release", "--dsc", str(dsc),
                              "--out", str(self.tmp / "osd-generate")], capture_output=True, text=True,
                             timeout=1200, env={**os.environ, "DEB_BUILD_PROFILES": "pkg.ceph.pgo-generate"})
        self.assertEqual(gen.returncode, 0, gen.stderr[-3000:])
        self.assertIn("ccache disabled: []", (self.tmp / "osd-generate" / "build.log").read_text())

    def test_training_counts_that_do_not_fit_fail_it_as_they_fail_the_release(self):
        dsc = fixture_dsc(self.tmp / "src", MAKEFILE, RULES, {"build.mk": BUILD_MK})
        # PGO on (no nopgo), the fixture's own profile makes the warning; the
        # pinned counts are Ceph's, not the fixture's, so their check is not
        # this test's: it is set aside in this process only
        build = ("import os, sys; from pathlib import Path; from cephperf.packaging import pgo; "
                 "from cephperf.packaging.release_osd import release_equivalent_osd; "
                 "pgo.require_counts = lambda pins, profiles: None; "
                 "release_equivalent_osd(Path(sys.argv[1]), dict(os.environ), None, Path(sys.argv[2]))")
        env = {**os.environ, "DEB_BUILD_PROFILES": "pkg.ceph.test-counts-misfit"}
        r = subprocess.run(["python3", "-c", build, str(dsc), str(self.tmp / "osd")], cwd=REPO,
                           capture_output=True, text=True, timeout=1200, env=env)
        self.assertNotEqual(r.returncode, 0, r.stderr[-3000:])
        self.assertIn("PGO: 1 coverage-mismatch warning(s)", r.stderr)
        self.assertIn("ci/pgo-train --pin", r.stderr)
        self.assertFalse((self.tmp / "osd" / "ceph-osd").exists())  # never an output
        # under pkg.ceph.nopgo there are no counts to fit
        env["DEB_BUILD_PROFILES"] += " pkg.ceph.nopgo"
        r = subprocess.run(["python3", "-c", build, str(dsc), str(self.tmp / "osd-nopgo")], cwd=REPO,
                           capture_output=True, text=True, timeout=1200, env=env)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        self.assertTrue((self.tmp / "osd-nopgo" / "ceph-osd").is_file())


if __name__ == "__main__":
    unittest.main()
