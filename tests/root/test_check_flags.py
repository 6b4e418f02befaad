"""ci/check-flags on the real tree: (a) and (b) pass, (c) and Debian's own rules fail for the right reason;
the profile-guided cases: with the training's counts passes, the instrumented build fails."""
import json
import unittest

from tests.helpers import run_stage

from cephperf.paths import reports

REPORT = reports("flags") / "report.json"


def case(report, name):
    return next(c for c in report["cases"] if c["case"] == name)


class CheckFlagsTest(unittest.TestCase):
    def test_release_cases_pass_and_prefix_fixture_fails(self):
        r = run_stage("check-flags", "--force", "a", "b", "c", timeout=1800)
        self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr[-3000:])
        report = json.loads(REPORT.read_text())
        self.assertTrue(case(report, "a")["ok"], case(report, "a")["problems"])
        self.assertTrue(case(report, "b")["ok"], case(report, "b")["problems"])
        c = case(report, "c")
        self.assertTrue(c["ran"])
        self.assertFalse(c["ok"])
        problems = " ".join(c["problems"])
        self.assertIn("RocksDB lacks -O2", problems)
        self.assertIn("RocksDB lacks -DNDEBUG", problems)
        self.assertIn("RocksDB lacks -O2", r.stdout)

    def test_debians_rules_fail_naming_ndebug(self):
        r = run_stage("check-flags", "--force", "a-debian", timeout=1800)
        self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr[-3000:])
        d = case(json.loads(REPORT.read_text()), "a-debian")
        self.assertTrue(d["ran"])
        self.assertFalse(d["ok"])
        self.assertIn("Ceph lacks -DNDEBUG", " ".join(d["problems"]))

    def test_profile_guided_cases(self):
        """pkg.ceph.pgo: -fprofile-use in every command; pkg.ceph.pgo-generate
        (the instrumented build) fails, naming -fprofile-generate."""
        r = run_stage("check-flags", "--force", "a-lto-pgo", "a-pgo-generate", timeout=1800)
        self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr[-3000:])
        report = json.loads(REPORT.read_text())
        use = case(report, "a-lto-pgo")
        self.assertTrue(use["ok"], use["problems"])
        self.assertIn("-fprofile-use", use["probes"]["Ceph: src/osd/PrimaryLogPG.cc"])
        self.assertIn("-fprofile-use", use["probes"]["RocksDB: db/db_impl/db_impl.cc"])
        gen = case(report, "a-pgo-generate")
        self.assertTrue(gen["ran"])
        self.assertFalse(gen["ok"])
        self.assertIn("instrumented for profile training (-fprofile-generate)", " ".join(gen["problems"]))


if __name__ == "__main__":
    unittest.main()
