"""ci/store-test: upstream's BlueStore tests (ceph_test_objectstore) in the runtime root.

CI has no release build (its ceph_test_objectstore comes with ci/build-release),
so the smoke runs Debian's own binary (package ceph-test in the runtime root)
on a few short tests of cmake/store-test.toml, in every pass: the passes whose
options Debian's binary lacks must be reported skipped, with the reason. The
broken variant is a known crash of Debian's RocksDB (the insert hint with
DeleteRange), which the stage must name.
"""
import json
import tempfile
import textwrap
import unittest
from pathlib import Path

from tests.helpers import run_stage

# One test of each path the smoke can run on Debian's binary: the onode life
# cycle, lookups after removes, a rename, split and merge, random attr
# operations, a remount (WAL replay), omap removals.
SMOKE_TESTS = ("SimpleObjectTest", "TwoHash", "Rename", "ColSplitTest0", "AttrSynthetic", "SimpleRemount",
               "OmapSimple", "OMapTest")
SMOKE = ":".join(f"*.{name}/1" for name in SMOKE_TESTS)

# Debian's RocksDB with the insert hint on and every omap removal a DeleteRange:
# OmapSimple crashes in about 7 of 10 processes (the crash depends on
# addresses), so it runs 8 times; 0.3^8 is below 1e-4.
BROKEN = textwrap.dedent("""\
    [limits]
    test_factor = 5
    test_floor_seconds = 120
    pass_factor = 3
    pass_floor_seconds = 300

    [touches]
    omap = "omap removals"

    [[test]]
    name = "ObjectStore/StoreTest.OmapSimple/1"
    seconds = 1.7
    touches = ["omap"]
    covers = "omap set, read, and cleared with the object"
    runs = 8

    [[pass]]
    name = "hint-with-delete-range"
    why = "Debian's RocksDB with the insert hint and DeleteRange: a known crash."
    options = { bluestore_rocksdb_options_annex = "memtable_insert_with_hint_prefix_extractor=rocksdb.FixedPrefix.9", rocksdb_delete_range_threshold = 0 }
    """)


def report(out: Path) -> dict:
    return json.loads((out / "report.json").read_text())


class StoreTestSmoke(unittest.TestCase):
    def test_stock_smoke_passes_and_names_the_skipped_passes(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "report"
            r = run_stage("store-test", "--stock", "--filter", SMOKE, "--out", out, timeout=900)
            self.assertEqual(r.returncode, 0, r.stderr[-4000:])
            passes = {p["name"]: p for p in report(out)["passes"]}
            self.assertEqual(passes["defaults"]["status"], "passed")
            self.assertEqual(len(passes["defaults"]["tests"]), len(SMOKE_TESTS))
            self.assertTrue(all(t["result"] == "passed" for t in passes["defaults"]["tests"]))
            self.assertEqual(passes["delete-range-always"]["status"], "passed")
            for name, option in (("onode-cache-absent-off", "bluestore_onode_cache_absent"),
                                 ("insert-hint-off", "bluestore_rocksdb_memtable_insert_hint")):
                self.assertEqual(passes[name]["status"], "skipped")
                self.assertIn(f"does not know {option}", passes[name]["skipped"])
                self.assertIn(f"pass {name}: skipped", r.stderr)
            self.assertTrue(list((out / "xml" / "defaults").glob("*.xml")))
            # the same binary, file and selection passed: not run again
            again = run_stage("store-test", "--stock", "--filter", SMOKE, "--out", out, timeout=300)
            self.assertEqual(again.returncode, 0, again.stderr[-4000:])
            self.assertIn("up to date", again.stderr)

    def test_a_crash_fails_the_stage_naming_the_pass_and_the_test(self):
        with tempfile.TemporaryDirectory() as tmp:
            subset, out = Path(tmp) / "broken.toml", Path(tmp) / "report"
            subset.write_text(BROKEN)
            r = run_stage("store-test", "--stock", "--subset", subset, "--out", out, timeout=600)
            self.assertEqual(r.returncode, 1, r.stderr[-4000:])
            self.assertRegex(r.stderr, r"pass hint-with-delete-range: ObjectStore/StoreTest\.OmapSimple/1 "
                                       r"\(run \d of 8\) crashed \(SIG(SEGV|ABRT)\)")
            self.assertIn("*** Caught signal", r.stderr)
            self.assertEqual(report(out)["verdict"], "fail")
            self.assertTrue(list((out / "logs" / "hint-with-delete-range").glob("*OmapSimple*.log")))

    def test_a_bad_subset_file_is_named_on_one_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            bad = Path(tmp) / "bad.toml"
            for text in ("[limits\n", BROKEN.replace('seconds = 1.7\n', ''),
                         BROKEN.replace("StoreTest.OmapSimple/1", "StoreTest.NoSuchTest/1")):
                bad.write_text(text)
                r = run_stage("store-test", "--stock", "--subset", bad, "--out", Path(tmp) / "report", timeout=300)
                self.assertEqual(r.returncode, 2, r.stderr[-4000:])
                errors = [line for line in r.stderr.splitlines() if line.startswith("store-test: error:")]
                self.assertEqual(len(errors), 1, r.stderr)
                self.assertIn(f"{bad}: ", errors[0])
                self.assertNotIn("Traceback", r.stderr)

    def test_no_binary_is_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = run_stage("store-test", "--tests", tmp, "--out", Path(tmp) / "report", timeout=120)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(f"{tmp}: no ceph_test_objectstore", r.stderr)


if __name__ == "__main__":
    unittest.main()
