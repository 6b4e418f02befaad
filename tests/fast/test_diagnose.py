"""The diagnosis names the cause with its numbers, and only when it is there:
fixture rounds shaped like the seeds' cases (misaligned and aligned RBD
overwrites, a debug-20 OSD, a full device, a saturated kv thread)."""
import json
import subprocess
import tempfile
import unittest
from pathlib import Path

from tests.helpers import REPO

from cephperf.bench.diagnose import findings, gather_level
from cephperf.common import load_toml
from cephperf.runtime.diagnostics import collect, debug_levels, device_from_counters, device_use

RULES = load_toml(REPO / "bench" / "rules" / "diagnose.toml")


def record(**diag) -> dict:
    base = {"bluestore": {"write_penalty_read_ops": 0, "issued_deferred_write_bytes": 0,
                          "submitted_deferred_write_bytes": 0},
            "debug": {}, "device": {"utilization": 0.1, "kb": 16 << 20, "kb_avail": 14 << 20},
            "threads": {"busiest": [{"tid": 7, "name": "bstore_kv_sync", "cpu_percent": 38.0}]}}
    base.update(diag)
    return {"ops": 2743, "bench_mode": "write", "diagnostics": base}


def names(rec) -> list[str]:
    return [f["finding"] for f in findings(rec, RULES)]


class DiagnoseTest(unittest.TestCase):
    def test_misaligned_overwrites_are_named_with_their_numbers(self):
        rec = record(bluestore={"write_penalty_read_ops": 5321})
        [f] = findings(rec, RULES)
        self.assertEqual(f["finding"], "unaligned_overwrites")
        self.assertIn("1.94 penalty reads per write (5,321 write_penalty_read_ops over 2,743 writes)", f["says"])

    def test_aligned_overwrites_give_no_finding(self):
        self.assertEqual(names(record()), [])
        self.assertEqual(names(record(bluestore={"write_penalty_read_ops": 3})), [])  # a stray one is not a cause

    def test_reads_have_no_writes_to_blame(self):
        rec = record(bluestore={"write_penalty_read_ops": 50})
        rec["bench_mode"] = "rand"
        self.assertEqual(names(rec), [])

    def test_debug_levels_above_the_defaults(self):
        diff = {"diff": {"debug_osd": {"default": "1/5", "final": "20/20"},
                         "debug_ms": {"default": "0/0", "final": "0/0"},
                         "debug_bluestore": {"default": "1/5", "final": "0/0"},
                         "osd_op_num_shards": {"default": 0, "final": 8}}}
        levels = debug_levels(diff)
        self.assertEqual(set(levels), {"debug_osd", "debug_ms", "debug_bluestore"})
        [f] = findings(record(debug=levels), RULES)
        self.assertIn("debug_osd 20/20 (default 1/5)", f["says"])
        self.assertNotIn("debug_bluestore", f["says"])  # lowered is not a cost
        self.assertEqual(gather_level("1/5"), 5)
        self.assertEqual(gather_level("20"), 20)

    def test_a_near_full_device_and_deferred_backlog_and_a_hot_thread(self):
        node = {"id": 0, "utilization": 91.5, "kb": 16 << 20, "kb_avail": 1 << 20}
        rec = record(device=device_use(node),
                     bluestore={"issued_deferred_write_bytes": 900 << 20, "submitted_deferred_write_bytes": 200 << 20},
                     threads={"busiest": [{"tid": 9, "name": "bstore_kv_sync", "cpu_percent": 97.3}]})
        self.assertEqual(names(rec), ["saturated_thread", "device", "deferred_writes"])
        says = " ".join(f["says"] for f in findings(rec, RULES))
        self.assertIn("bstore_kv_sync (tid 9) 97% of one core", says)
        self.assertIn("92% used", says)
        self.assertIn("900.0 MiB issued, 200.0 MiB submitted", says)

    def test_two_chunks_issued_per_merged_write_submitted_is_no_backlog(self):
        # a misaligned 4 KiB overwrite: two deferred chunks issued, one merged
        # device write submitted, the same bytes (measured: 85,125 against 42,198)
        rec = record(bluestore={"issued_deferred_writes": 85125, "submitted_deferred_writes": 42198,
                                "issued_deferred_write_bytes": 85125 * 4096,
                                "submitted_deferred_write_bytes": 85125 * 4096 - 64 * 4096})
        self.assertNotIn("deferred_writes", names(rec))

    def test_collect_takes_the_counters_change_over_the_window(self):
        before = {"bluestore": {"write_penalty_read_ops": 10, "txc_count": 5, "other": 1}}
        after = {"bluestore": {"write_penalty_read_ops": 15, "txc_count": 9, "other": 2}}
        d = collect(before, after, {"diff": {}}, None, {"busiest": []})
        self.assertEqual(d["bluestore"], {"write_penalty_read_ops": 5, "txc_count": 4})
        dev = device_from_counters({"bluestore": {"allocated": 6 << 30}, "bluefs": {"db_used_bytes": 1 << 30}}, 8 << 30)
        self.assertEqual(dev, {"utilization": 0.875, "kb": 8 << 20, "kb_avail": 1 << 20})

    def test_the_program_on_a_report(self):
        with tempfile.TemporaryDirectory() as tmp:
            report = Path(tmp) / "report.json"
            rec = record(bluestore={"write_penalty_read_ops": 5321})
            rec.update(round=1, side="baseline")
            report.write_text(json.dumps({"records": [rec, {**record(), "round": 2, "side": "candidate"}]}))
            r = subprocess.run([str(REPO / "bench" / "diagnose"), str(report)], capture_output=True, text=True,
                               timeout=60)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("round 1 (baseline): unaligned overwrites: 1.94", r.stdout)
            self.assertIn("round 2 (candidate): no finding", r.stdout)


if __name__ == "__main__":
    unittest.main()
