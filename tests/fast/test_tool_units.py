"""Pure functions of the build side on fixtures: judging compile commands
(check-flags), and turning a compile database entry into the patch-level
checks' commands (patch_tests_helper, which runs inside the build root),
and the development build's sync of the assembled tree."""
import json
import os
import tempfile
import unittest
from pathlib import Path

from cephperf.packaging.flags import judge_case, staged_runpath_problems, static_common_problems
from cephperf.runtime.patch_tests_helper import command_for, googletest_ran_none, load_database, retarget
from cephperf.stages.build_osd import ROCKSDB_BUILD_STAMP, forget_rocksdb_build, sync_by_content

GOOD = "-g -O2 -fstack-protector-strong -D_FORTIFY_SOURCE=2 -DNDEBUG"


def db(flags: str, files: list[str], extra: str = "") -> list[dict]:
    return [{"directory": "/b", "file": f, "command": f"c++ {flags} {extra} -c {f} -o {f}.o"} for f in files]


CEPH = ["src/osd/PrimaryLogPG.cc", "src/common/TrackedOp.cc"]
ROCKSDB = ["db/db_impl/db_impl.cc", "util/crc32c.c"]


class JudgeCaseTest(unittest.TestCase):
    def test_release_flags_pass_and_probes_are_shown(self):
        r = judge_case("a", db(GOOD, CEPH), db(GOOD, ROCKSDB, "-DROCKSDB_PORTABLE"))
        self.assertTrue(r["ok"], r["problems"])
        self.assertEqual(r["commands"], {"rocksdb": 2, "ceph": 2})
        self.assertEqual(r["probes"]["Ceph: src/osd/PrimaryLogPG.cc"], "-O2 -g -DNDEBUG hardening")

    def test_the_seeds_regression_is_named(self):
        # RocksDB under CMAKE_BUILD_TYPE=None: no -O, no NDEBUG
        r = judge_case("c", db(GOOD, CEPH), db("-g", ROCKSDB, "-DROCKSDB_PORTABLE"))
        self.assertFalse(r["ok"])
        self.assertIn("RocksDB lacks -O2: 2 of 2 compile commands at -O0 or below (e.g. db/db_impl/db_impl.cc)",
                      r["problems"])
        self.assertIn("RocksDB lacks -DNDEBUG: 2 of 2 compile commands (e.g. db/db_impl/db_impl.cc)", r["problems"])

    def test_last_O_wins_and_UNDEBUG_undoes(self):
        r = judge_case("b", db(GOOD + " -O0 -UNDEBUG", CEPH), db(GOOD, ROCKSDB, "-DROCKSDB_PORTABLE"))
        self.assertEqual(len(r["problems"]), 2, r["problems"])

    def test_native_and_non_portable_rocksdb_are_refused(self):
        r = judge_case("b", db(GOOD + " -march=native", CEPH), db(GOOD, ROCKSDB))
        self.assertTrue(any("-march/-mtune=native" in p for p in r["problems"]))
        self.assertTrue(any("PORTABLE=OFF" in p for p in r["problems"]))

    def test_hardening_is_required_only_of_package_builds(self):
        plain = "-g -O2 -DNDEBUG"
        self.assertTrue(judge_case("b", db(plain, CEPH), db(plain, ROCKSDB, "-DROCKSDB_PORTABLE"))["ok"])
        r = judge_case("a", db(plain, CEPH), db(plain, ROCKSDB, "-DROCKSDB_PORTABLE"))
        self.assertTrue(any("dpkg hardening flags missing" in p for p in r["problems"]))

    def test_a_later_U_FORTIFY_SOURCE_undoes_the_hardening(self):
        # Ceph's add_definitions(-U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=2) put the -U
        # last on every line (patches/fortify-source-in-order.patch)
        r = judge_case("a", db(GOOD + " -fPIC -U_FORTIFY_SOURCE", CEPH), db(GOOD, ROCKSDB, "-DROCKSDB_PORTABLE"))
        self.assertIn("Ceph: dpkg hardening flags missing in 2 of 2 commands (e.g. src/osd/PrimaryLogPG.cc)",
                      r["problems"])
        r = judge_case("a", db(GOOD + " -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=2", CEPH),
                       db(GOOD, ROCKSDB, "-DROCKSDB_PORTABLE"))
        self.assertTrue(r["ok"], r["problems"])

    def test_the_lto_profile_needs_lto_and_no_interposition_everywhere(self):
        wpo = GOOD + " -flto=auto -ffat-lto-objects -fno-semantic-interposition"
        r = judge_case("a-lto", db(wpo, CEPH), db(wpo, ROCKSDB, "-DROCKSDB_PORTABLE"))
        self.assertTrue(r["ok"], r["problems"])
        self.assertEqual(r["probes"]["Ceph: src/osd/PrimaryLogPG.cc"],
                         "-O2 -g -DNDEBUG hardening -flto -fno-semantic-interposition")
        r = judge_case("a-lto", db(wpo, CEPH), db(GOOD + " -flto=auto", ROCKSDB, "-DROCKSDB_PORTABLE"))
        self.assertEqual(r["problems"], ["RocksDB: -flto and -fno-semantic-interposition missing in 2 of 2 commands "
                                         "(e.g. db/db_impl/db_impl.cc)"])
        self.assertFalse(judge_case("a-lto", db(wpo + " -fno-lto", CEPH), db(wpo, ROCKSDB, "-DROCKSDB_PORTABLE"))["ok"])

    def test_an_empty_database_is_a_problem(self):
        r = judge_case("b", [], db(GOOD, ROCKSDB, "-DROCKSDB_PORTABLE"))
        self.assertIn("Ceph: no C/C++ compile commands found", r["problems"])


# Link commands as CMake's Makefile generator writes them into link.txt
# (shortened): ceph-fuse as upstream links it, and as our profile links it.
FUSE_UPSTREAM = ("/usr/bin/c++ -g -O2 -Wl,-z,relro CMakeFiles/ceph-fuse.dir/ceph_fuse.cc.o -o ../bin/ceph-fuse "
                 "/usr/lib/x86_64-linux-gnu/libfuse3.so ../lib/libclient.a ../lib/libceph-common.so.2 "
                 "../lib/libglobal-static.a ../lib/libosdc.a ../lib/libceph-common.so.2")
FUSE_STATIC = ("/usr/bin/c++ -g -O2 -Wl,-z,relro CMakeFiles/ceph-fuse.dir/ceph_fuse.cc.o -o ../bin/ceph-fuse "
               "/usr/lib/x86_64-linux-gnu/libfuse3.so ../lib/libclient-static-common.a ../lib/libglobal-static.a "
               "../lib/libcommon.a ../lib/libosdc-static-common.a ../lib/libcommon.a -lpthread")


class StaticCommonLinkTest(unittest.TestCase):
    def test_the_static_common_link_passes(self):
        self.assertEqual(static_common_problems("ceph-fuse", FUSE_STATIC), [])

    def test_upstreams_shared_link_is_named(self):
        problems = static_common_problems("ceph-fuse", FUSE_UPSTREAM)
        self.assertEqual(len(problems), 2, problems)
        self.assertIn("ceph-fuse links ../lib/libceph-common.so.2", problems[0])
        self.assertIn("does not link the static common archive", problems[1])

    def test_both_archives_at_once_is_still_refused(self):
        # two copies of every global of the common code in one process
        problems = static_common_problems("ceph-fuse", FUSE_STATIC + " -lceph-common")
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("-lceph-common", problems[0])


# A staged tool's link command (shortened): as CMake links it for the build
# tree, and with the install RUNPATH (CMAKE_BUILD_WITH_INSTALL_RPATH).
TOOL_BUILD_TREE = ("/usr/bin/c++ -g -O2 CMakeFiles/ceph-bluestore-tool.dir/bluestore_tool.cc.o "
                   "-o ../../bin/ceph-bluestore-tool -Wl,-rpath,/build/ceph-perf/src/obj-x86_64-linux-gnu/lib: "
                   "../../lib/libceph-common.so.2")
TOOL_INSTALLED = ("/usr/bin/c++ -g -O2 CMakeFiles/ceph-bluestore-tool.dir/bluestore_tool.cc.o "
                  "-o ../../bin/ceph-bluestore-tool -Wl,-rpath,/usr/lib/x86_64-linux-gnu/ceph "
                  "../../lib/libceph-common.so.2")


class ToolStaticCommonTest(unittest.TestCase):
    def test_a_tool_linked_as_upstream_links_it_is_named(self):
        # what the first release build of +perf5 shipped: the tool could not
        # start over Debian's libceph-common (undefined TrackedOp symbol)
        problems = static_common_problems("ceph-bluestore-tool", TOOL_INSTALLED)
        self.assertEqual(len(problems), 2, problems)
        self.assertIn("ceph-bluestore-tool links ../../lib/libceph-common.so.2", problems[0])
        self.assertIn("global-static and common", problems[0])

    def test_a_tool_linked_with_the_static_archives_passes(self):
        static = TOOL_INSTALLED.replace("../../lib/libceph-common.so.2",
                                        "../../lib/libos.a ../../lib/libglobal-static.a ../../lib/libcommon.a")
        self.assertEqual(static_common_problems("ceph-bluestore-tool", static), [])


class StagedRunpathTest(unittest.TestCase):
    def test_the_install_runpath_and_none_pass(self):
        self.assertEqual(staged_runpath_problems("ceph-bluestore-tool", TOOL_INSTALLED), [])
        self.assertEqual(staged_runpath_problems("ceph-fuse", FUSE_STATIC), [])

    def test_the_build_trees_library_path_is_named(self):
        problems = staged_runpath_problems("ceph-bluestore-tool", TOOL_BUILD_TREE)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("ceph-bluestore-tool is linked with RUNPATH '/build/ceph-perf/src/obj-x86_64-linux-gnu/lib'",
                      problems[0])
        self.assertIn("CMAKE_BUILD_WITH_INSTALL_RPATH=ON", problems[0])

    def test_cmakes_padding_is_named(self):
        problems = staged_runpath_problems("ceph-fuse", FUSE_STATIC + " -Wl,-rpath,::::::::")
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("an empty entry", problems[0])


class PatchTestsHelperTest(unittest.TestCase):
    ARGV = ["/usr/bin/c++", "-DX", "-Isrc", "-O2", "-g", "-fPIC", "-MD", "-MT", "o.o", "-MF", "o.d",
            "-o", "o.o", "-c", "/t/src/osd/OSD.cc"]

    def test_syntax_check_keeps_the_flags(self):
        self.assertEqual(retarget(self.ARGV, "/t/src/osd/OSD.cc", None),
                         ["/usr/bin/c++", "-DX", "-Isrc", "-O2", "-g", "-fPIC", "-fsyntax-only", "/t/src/osd/OSD.cc"])

    def test_object_drops_O_and_g_and_takes_the_new_source(self):
        self.assertEqual(retarget(self.ARGV, "/t/src/test/x.cc", "/tmp/x.o"),
                         ["/usr/bin/c++", "-DX", "-Isrc", "-fPIC", "-c", "/t/src/test/x.cc", "-o", "/tmp/x.o"])

    def test_command_for_resolves_paths(self):
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "compile_commands.json").write_text(json.dumps(
                [{"directory": f"{tmp}/b", "file": "../src/a.cc", "command": "c++ -O2 -c ../src/a.cc"}]))
            database = load_database(Path(tmp))
            self.assertEqual(command_for(database, f"{tmp}/src/a.cc"), (["c++", "-O2", "-c", "../src/a.cc"], f"{tmp}/b"))
            self.assertIsNone(command_for(database, f"{tmp}/src/b.cc"))

    def test_the_bundled_rocksdbs_database_is_read_too(self):
        # an ExternalProject: its configure step writes a database of its own
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "compile_commands.json").write_text(json.dumps(
                [{"directory": f"{tmp}/b", "file": "../src/a.cc", "command": "c++ -O2 -c ../src/a.cc"}]))
            (Path(tmp) / "src" / "rocksdb").mkdir(parents=True)
            (Path(tmp) / "src" / "rocksdb" / "compile_commands.json").write_text(json.dumps(
                [{"directory": f"{tmp}/r", "file": f"{tmp}/src/rocksdb/db/log_writer.cc",
                  "command": "c++ -DROCKSDB_PLATFORM_POSIX -c log_writer.cc"}]))
            database = load_database(Path(tmp))
            self.assertEqual(command_for(database, f"{tmp}/src/rocksdb/db/log_writer.cc")[1], f"{tmp}/r")
            # and the top-level one still is
            self.assertEqual(command_for(database, f"{tmp}/src/a.cc"),
                             (["c++", "-O2", "-c", "../src/a.cc"], f"{tmp}/b"))



class GoogletestRanNoneTest(unittest.TestCase):
    def test_passed_tests_prove_something(self):
        out = "[==========] 3 tests from 1 test suite ran. (5 ms total)\n[  PASSED  ] 3 tests.\n"
        self.assertIsNone(googletest_ran_none(out))
        self.assertIsNone(googletest_ran_none("[  PASSED  ] 1 test.\n"))

    def test_a_filter_that_matches_nothing_is_named(self):
        # what googletest prints, exiting 0, for a filter naming no test
        out = ("Note: Google Test filter = Transaction.NoSuchCase\n"
               "[==========] 0 tests from 0 test suites ran. (0 ms total)\n[  PASSED  ] 0 tests.\n")
        self.assertIn("no test ran", googletest_ran_none(out))

    def test_output_without_a_summary_is_named(self):
        self.assertIn("no googletest summary", googletest_ran_none("ok\n"))


class SyncByContentTest(unittest.TestCase):
    """ci/build-osd's sync: a tree assembled again gives every patched file a
    new mtime; only a file whose bytes changed may look newer to ninja."""

    def test_only_changed_bytes_get_a_new_mtime(self):
        with tempfile.TemporaryDirectory() as tmp:
            tree, dest = Path(tmp) / "tree", Path(tmp) / "dest"
            (tree / "src" / "include").mkdir(parents=True)
            (tree / ".pc").mkdir()
            for name, text in (("header.h", "struct a;\n"), ("unit.cc", "int f();\n"), ("gone.cc", "\n")):
                (tree / "src" / "include" / name).write_text(text)
            sync_by_content(tree, dest)
            built = 1_700_000_000  # as if ninja had built from these long ago
            for f in (dest / "src" / "include").iterdir():
                os.utime(f, (built, built))
            # assembled again: every file rewritten, one with new bytes, one removed
            (tree / "src" / "include" / "header.h").write_text("struct a;\n")
            (tree / "src" / "include" / "unit.cc").write_text("int f(int);\n")
            (tree / "src" / "include" / "gone.cc").unlink()
            sync_by_content(tree, dest)
            self.assertEqual((dest / "src" / "include" / "header.h").stat().st_mtime, built)
            self.assertGreater((dest / "src" / "include" / "unit.cc").stat().st_mtime, built)
            self.assertEqual((dest / "src" / "include" / "unit.cc").read_text(), "int f(int);\n")
            self.assertFalse((dest / "src" / "include" / "gone.cc").exists())
            self.assertFalse((dest / ".pc").exists())

    def test_a_changed_rocksdb_file_runs_rocksdbs_build_again(self):
        with tempfile.TemporaryDirectory() as d:
            tree, dest, build = Path(d, "tree"), Path(d, "dest"), Path(d, "build")
            (tree / "src" / "rocksdb" / "include").mkdir(parents=True)
            (tree / "src" / "kv").mkdir(parents=True)
            (tree / "src" / "rocksdb" / "include" / "status.h").write_text("class Status;\n")
            (tree / "src" / "kv" / "RocksDBStore.cc").write_text("int f();\n")
            stamp = build / ROCKSDB_BUILD_STAMP
            stamp.parent.mkdir(parents=True)
            self.assertTrue(forget_rocksdb_build(sync_by_content(tree, dest), build))
            stamp.touch()  # RocksDB built
            # assembled again, RocksDB's bytes the same: its build stays done
            (tree / "src" / "rocksdb" / "include" / "status.h").write_text("class Status;\n")
            (tree / "src" / "kv" / "RocksDBStore.cc").write_text("int f(int);\n")
            changed = sync_by_content(tree, dest)
            self.assertEqual(changed, ["src/kv/RocksDBStore.cc"])
            self.assertFalse(forget_rocksdb_build(changed, build))
            self.assertTrue(stamp.exists())
            # a patch to a RocksDB header: the stamp goes, so ninja builds it again
            (tree / "src" / "rocksdb" / "include" / "status.h").write_text("class Status {};\n")
            changed = sync_by_content(tree, dest)
            self.assertEqual(changed, ["src/rocksdb/include/status.h"])
            self.assertTrue(forget_rocksdb_build(changed, build))
            self.assertFalse(stamp.exists())


if __name__ == "__main__":
    unittest.main()
