"""ci/patch-tests on the real assembled tree, in the build root: every translation
unit the series touches compiles, the options code generates, and the unit tests
the series adds build and pass (patches/unit-tests.toml)."""
import json
import subprocess
import unittest

from tests.helpers import REPO

from cephperf.common import load_toml
from cephperf.paths import UNIT_TESTS, reports


class PatchTests(unittest.TestCase):
    def test_series_compiles_and_its_unit_tests_pass(self):
        r = subprocess.run([str(REPO / "ci" / "patch-tests"), "--force"], capture_output=True, text=True,
                           timeout=1700)
        report = reports("patch-tests") / "report.json"
        self.assertEqual(r.returncode, 0, r.stdout[-4000:] + r.stderr[-4000:])
        res = json.loads(report.read_text())
        self.assertTrue(res["options_ok"])
        compiled = {c["file"] for c in res["compiles"] if c["rc"] == 0}
        for tu in ("src/os/bluestore/BlueStore.cc", "src/common/TrackedOp.cc", "src/msg/async/AsyncConnection.cc",
                   "src/client/fuse_ll.cc", "src/rocksdb/db/log_writer.cc"):
            self.assertIn(tu, compiled)
        # every test the series declares ran, and passed
        declared = load_toml(UNIT_TESTS)
        self.assertEqual({t["name"]: t["rc"] for t in res["tests"]}, {name: 0 for name in declared})
        print(r.stdout)


if __name__ == "__main__":
    unittest.main()
