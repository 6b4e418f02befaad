"""Run and judge apart: bench/gate --rejudge on a saved report, bench/compare
on two reports of existing clusters, --strict, and a new report directory
for every run."""
import json
import os
import random
import subprocess
import tempfile
import unittest
from pathlib import Path

from tests.helpers import REPO

GATE, COMPARE = REPO / "bench" / "gate", REPO / "bench" / "compare"


def ab_report(cand_factor: float, pairs: int = 5, seed: int = 1) -> dict:
    rng = random.Random(seed)
    records = []
    for pair in range(1, pairs + 1):
        for side in (("baseline", "candidate") if pair % 2 else ("candidate", "baseline")):
            f = cand_factor if side == "candidate" else 1.0
            records.append({"round": len(records) + 1, "pair": pair, "side": side,
                            "iops": 6000 * f * rng.gauss(1, 0.01), "osd_cpu_us_per_op": 150 / f * rng.gauss(1, 0.01)})
    return {"profile": "4k-write", "description": "4 KiB writes", "variant": "defaults", "rounds": pairs,
            "sides": {"baseline": {"source": "debian"}, "candidate": {"source": "debian"}}, "records": records}


def external_report(iops: float, rounds: int = 4, seed: int = 2) -> dict:
    rng = random.Random(seed)
    return {"profile": "4k-write", "cluster": "/etc/ceph/ceph.conf",
            "records": [{"round": i + 1, "side": "external", "iops": iops * rng.gauss(1, 0.01),
                         "osd_cpu_us_per_op": 100.0} for i in range(rounds)]}


class RejudgeTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="rejudge-")
        self.tmp = Path(self._tmp.name)
        self.addCleanup(self._tmp.cleanup)
        self.env = dict(os.environ, CEPH_PERF_BUILD=str(self.tmp / "build"))

    def save(self, name: str, rep: dict) -> Path:
        (self.tmp / name).write_text(json.dumps(rep))
        return self.tmp / name

    def run_prog(self, prog, *args):
        return subprocess.run([str(prog), *map(str, args)], capture_output=True, text=True, timeout=60, env=self.env)

    def test_a_saved_regression_fails_again_and_other_rules_can_pass_it(self):
        saved = self.save("r.json", ab_report(0.5))
        r = self.run_prog(GATE, "--rejudge", saved)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertTrue(r.stdout.strip().splitlines()[-1].startswith("gate: REGRESSION"))
        lenient = self.tmp / "lenient.toml"
        lenient.write_text((REPO / "bench" / "rules" / "default.toml").read_text().replace("0.05", "1.5"))
        r = self.run_prog(GATE, "--rejudge", saved, "--rules", lenient, "--out", self.tmp / "out")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rep = json.loads((self.tmp / "out" / "report.json").read_text())
        self.assertEqual(rep["rules_file"], str(lenient))
        self.assertEqual({r["verdict"] for r in rep["judgement"]["rules"]}, {"within tolerance", "not measured"})

    def test_strict_wants_proof(self):
        saved = self.save("same.json", ab_report(1.0))
        self.assertEqual(self.run_prog(GATE, "--rejudge", saved).returncode, 0)
        r = self.run_prog(GATE, "--rejudge", saved, "--strict")
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        self.assertIn("no difference shown", r.stdout)
        self.assertRegex(r.stdout, r"smallest detectable \d+\.\d%")
        gain = self.save("gain.json", ab_report(1.2))
        r = self.run_prog(GATE, "--rejudge", gain, "--strict")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("gate: PASS (gain)", r.stdout)

    def test_no_data_is_no_verdict(self):
        # rounds that never measured a judged metric, and a run without rounds: exit 2, never 1 or 0
        rep = ab_report(1.0)
        for rec in rep["records"]:
            del rec["osd_cpu_us_per_op"]
        for name, saved in (("osd_cpu_us_per_op", self.save("no-cpu.json", rep)),
                            ("any rule", self.save("none.json", {**ab_report(1.0), "records": []}))):
            r = self.run_prog(GATE, "--rejudge", saved, "--out", self.tmp / saved.stem)
            self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
            self.assertTrue(r.stdout.strip().splitlines()[-1].startswith(
                f"gate: ERROR (could not run): no data for {name} (no round measured it)"), r.stdout[-500:])

    def test_every_run_gets_a_new_directory(self):
        saved = self.save("r.json", ab_report(1.0))
        self.run_prog(GATE, "--rejudge", saved)
        self.run_prog(GATE, "--rejudge", saved)
        runs = [d for d in (self.tmp / "build" / "reports" / "gate").iterdir() if not d.is_symlink()]
        self.assertEqual(len(runs), 2)
        self.assertTrue((self.tmp / "build" / "reports" / "gate" / "latest" / "report.md").exists())

    def test_bad_reports_are_named(self):
        bad = self.tmp / "bad.json"
        bad.write_text("{")
        for path in (bad, self.tmp / "missing.json"):
            r = self.run_prog(GATE, "--rejudge", path)
            self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
            self.assertIn(str(path), r.stdout + r.stderr)
            self.assertNotIn("Traceback", r.stderr)

    def test_compare_two_existing_cluster_runs(self):
        base, slow, same = (self.save(n, external_report(i, seed=s)) for n, i, s in
                            (("a.json", 6000, 1), ("b.json", 3000, 2), ("c.json", 6000, 3)))
        r = self.run_prog(COMPARE, base, slow, "--out", self.tmp / "cmp")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("| IOPS | higher | 5% | 4 | 0.5", (self.tmp / "cmp" / "report.md").read_text())
        r = self.run_prog(COMPARE, base, same, "--strict", "--out", self.tmp / "cmp2")
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        r = self.run_prog(COMPARE, base, self.save("ab.json", ab_report(1.0)))
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("not a report of `bench/gate --cluster` rounds", r.stderr)


if __name__ == "__main__":
    unittest.main()
