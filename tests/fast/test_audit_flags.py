"""ci/audit-flags on fixtures compiled inside the test at -O0 and -O2, with and without NDEBUG."""
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

from tests.helpers import REPO, run_stage

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "audit"
SOURCES = ["src/osd/fixture_osd.cc", "src/rocksdb/test_util/sync_point.cc"]


class AuditFlagsTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="audit-test-")
        self.tmp = Path(self._tmp.name)
        shutil.copytree(FIXTURE, self.tmp / "tree")

    def tearDown(self):
        self._tmp.cleanup()

    def compile(self, name, *flags) -> Path:
        out = self.tmp / name
        # Relative source paths, as a real build records them: DW_AT_name is src/...
        subprocess.run(["g++", "-g", *flags, *SOURCES, "-o", str(out)], cwd=self.tmp / "tree", check=True)
        return out

    def audit(self, *files):
        return run_stage("audit-flags", "--out", self.tmp / "report", *files, timeout=120)

    def test_O0_fails_naming_the_level(self):
        r = self.audit(self.compile("o0", "-O0", "-DNDEBUG"))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("without -O2", r.stdout)
        self.assertRegex(r.stdout, r"\| src/osd \| 1 \| -O0 ×1 \|")

    def test_O2_with_ndebug_passes(self):
        r = self.audit(self.compile("o2", "-O2", "-DNDEBUG"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"\| src/rocksdb \| 1 \| -O2 ×1 \|")
        self.assertIn("audit-flags: PASS", r.stdout)

    def test_rocksdb_without_ndebug_is_caught(self):
        r = self.audit(self.compile("o2-asserts", "-O2"))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("built without -DNDEBUG: _ZN7rocksdb9SyncPoint11GetInstanceEv is compiled in", r.stdout)
        self.assertIn("src/rocksdb built without -DNDEBUG: 1 assert() call site(s)", r.stdout)

    # Link-time optimisation (the pkg.ceph.lto profile): the code moves into
    # the optimiser's <artificial> units, and rocksdb_work() is inlined into
    # the OSD fixture's main(), so neither the unit holding a call site nor
    # the function around it names RocksDB any more.
    LTO = ("-flto", "-ffat-lto-objects")

    def test_lto_with_ndebug_passes_and_shows_the_link_time_units(self):
        r = self.audit(self.compile("lto", "-O2", "-DNDEBUG", *self.LTO))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"\| \(link-time\) \| 1 \| -O2 ×1 \|")
        self.assertRegex(r.stdout, r"\| src/rocksdb \| 1 \| -O2 ×1 \|")

    def test_lto_rocksdb_without_ndebug_is_caught_where_the_assert_was_written(self):
        r = self.audit(self.compile("lto-asserts", "-O2", *self.LTO))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("src/rocksdb built without -DNDEBUG: 1 assert() call site(s)", r.stdout)

    def test_lto_linked_at_O0_fails(self):
        tree = self.tmp / "tree"
        objs = []
        for i, src in enumerate(SOURCES):
            objs.append(f"{i}.o")
            subprocess.run(["g++", "-g", "-O2", "-DNDEBUG", *self.LTO, "-c", src, "-o", objs[-1]], cwd=tree, check=True)
        subprocess.run(["g++", "-g", "-O0", "-flto", *objs, "-o", str(self.tmp / "lto-o0")], cwd=tree, check=True)
        r = self.audit(self.tmp / "lto-o0")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("link-time unit(s) without -O2, e.g. (link-time) <artificial> (-O0)", r.stdout)

    def package(self, binary: Path) -> tuple[Path, Path]:
        """A stripped binary in one .deb and its debug file, by build-id, in a -dbg .deb."""
        bid = subprocess.run(["readelf", "-n", binary], capture_output=True, text=True).stdout.split("Build ID: ")[1].split()[0]
        pkg, dbg = self.tmp / "pkg", self.tmp / "dbg"
        debug_file = dbg / "usr/lib/debug/.build-id" / bid[:2] / f"{bid[2:]}.debug"
        debug_file.parent.mkdir(parents=True)
        (pkg / "usr/bin").mkdir(parents=True)
        subprocess.run(["objcopy", "--only-keep-debug", binary, debug_file], check=True)
        subprocess.run(["objcopy", "--strip-debug", "--strip-unneeded", binary, pkg / "usr/bin/fixture-osd"], check=True)
        debs = []
        for root, name in ((pkg, "fixture-osd"), (dbg, "fixture-osd-dbg")):
            (root / "DEBIAN").mkdir()
            (root / "DEBIAN/control").write_text(
                f"Package: {name}\nVersion: 1.0\nArchitecture: amd64\nMaintainer: Fixture <f@example.org>\nDescription: fixture\n")
            deb = self.tmp / f"{name}_1.0_amd64.deb"
            subprocess.run(["dpkg-deb", "-Zxz", "--root-owner-group", "-b", root, deb], check=True, capture_output=True)
            debs.append(deb)
        return debs[0], debs[1]

    def test_debs_are_paired_by_build_id(self):
        deb, dbg = self.package(self.compile("o2", "-O2", "-DNDEBUG"))
        r = self.audit(deb, dbg)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("fixture-osd_1.0_amd64.deb:/usr/bin/fixture-osd | 2 |", r.stdout)

    def test_program_outside_cephs_areas_is_not_a_pass(self):
        # #19: an -O0 program whose only unit is main.cc (area "other") must
        # not pass for want of anything to check
        elsewhere = self.tmp / "elsewhere"
        elsewhere.mkdir()
        (elsewhere / "main.cc").write_text("int main() { return 0; }\n")
        out = self.tmp / "plain"
        subprocess.run(["g++", "-g", "-O0", "main.cc", "-o", str(out)], cwd=elsewhere, check=True)
        r = self.audit(out)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("audit-flags: nothing of Ceph's audited", r.stdout)
        self.assertNotIn("PASS", r.stdout)

    def test_shipped_binary_below_its_minimum_of_ceph_units_fails(self):
        # The fixture has 2 units in Ceph's areas; the real rules ask far more of ceph-osd
        r = self.audit(self.compile("ceph-osd", "-O2", "-DNDEBUG"))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"ceph-osd: 2 compile unit\(s\) in Ceph areas, fewer than the \d{3} that "
                                   r"cmake/audit-rules.toml requires of ceph-osd; likely cause: ")
        self.assertIn("audit-flags: FAIL", r.stdout)
        # the report states the coverage per area
        self.assertRegex(r.stdout, r"\| \S+/ceph-osd \| 2 \| 2: src/\w+ 1, src/\w+ 1 \|")

    def test_minimum_is_read_from_the_rules_file(self):
        real = (REPO / "cmake" / "audit-rules.toml").read_text()
        self.assertIn('"ceph-osd" = ', real)
        rules = self.tmp / "rules.toml"
        rules.write_text(real.replace('"ceph-osd" = ', '"fixture" = '))
        r = run_stage("audit-flags", "--rules", rules, "--out", self.tmp / "report",
                      self.compile("fixture", "-O2", "-DNDEBUG"), timeout=120)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("requires of fixture", r.stdout)

    def test_stripped_binary_alone_is_not_auditable(self):
        deb, _ = self.package(self.compile("o2", "-O2", "-DNDEBUG"))
        r = self.audit(deb)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("give the -dbg or dbgsym package", r.stdout)


if __name__ == "__main__":
    unittest.main()
