"""The release build's LTO check: GCC's One Definition Rule warnings in a
build log, each once, and a release that fails on one not explained in
cmake/lto-warnings.toml."""
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from cephperf.packaging.lto_warnings import lto_warnings
from cephperf.common import StageError
from cephperf.packaging import release_build

LOG = """\
/usr/bin/c++ -flto=auto -c src/a.cc -o a.o
/build/ceph-perf/src/src/os/x.h:12:8: warning: type 'struct Shard' violates the C++ One Definition Rule [-Wodr]
/build/ceph-perf/src/src/kv/y.h:3:8: note: a different type is defined in another translation unit
/build/ceph-perf/src/src/rocksdb/z.cc:40:13: warning: 'kLimit' violates the C++ One Definition Rule [-Wodr]
/build/ceph-perf/src/src/common/w.cc:7:5: warning: type of 'hits' does not match original declaration [-Wlto-type-mismatch]
/build/ceph-perf/src/src/os/x.h:12:8: warning: type 'struct Shard' violates the C++ One Definition Rule [-Wodr]
/build/ceph-perf/src/src/osd/v.cc:1:1: warning: unused variable 'n' [-Wunused-variable]
"""


class LtoWarningsTest(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.dir = Path(tmp.name)
        (self.dir / "build.log").write_text(LOG)

    def test_each_odr_warning_once_with_its_first_line(self):
        found = lto_warnings(self.dir / "build.log")
        self.assertEqual([w.split(":", 1)[0] for w in found], ["2", "4", "5"])
        self.assertIn("struct Shard", found[0])
        self.assertIn("-Wlto-type-mismatch", found[2])

    def rules(self, text: str) -> Path:
        path = self.dir / "lto-warnings.toml"
        path.write_text(text)
        return path

    def test_an_unexplained_warning_fails_the_release_naming_it(self):
        rules = self.rules('[[exception]]\nmatch = "kLimit"\nreason = "a constant, same value"\n')
        with mock.patch.object(release_build, "LTO_RULES", rules), self.assertRaises(StageError) as e:
            release_build.check_lto_warnings(self.dir)
        self.assertIn("2 -Wodr/-Wlto-type-mismatch warning(s)", str(e.exception))
        self.assertIn("struct Shard", str(e.exception))
        self.assertNotIn("kLimit", str(e.exception))

    def test_every_warning_explained_passes_and_counts_them(self):
        rules = self.rules('[[exception]]\nmatch = "violates the C\\\\+\\\\+ One Definition Rule"\nreason = "r1"\n'
                           '[[exception]]\nmatch = "hits"\nreason = "r2"\n')
        with mock.patch.object(release_build, "LTO_RULES", rules):
            self.assertEqual(release_build.check_lto_warnings(self.dir), {"r1": 2, "r2": 1})

    def test_the_checked_in_rules_load(self):
        self.assertIsInstance(release_build.load_toml(release_build.LTO_RULES).get("exception", []), list)


if __name__ == "__main__":
    unittest.main()
