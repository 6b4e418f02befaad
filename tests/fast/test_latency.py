"""The latency profiles: percentiles as the gate judges them, the writer's
progress lines, and which profiles and variants go together."""
import unittest

from cephperf.bench.rounds import load_profile
from cephperf.common import StageError
from cephperf.runtime.latency import ProgressWatch, percentiles
from cephperf.runtime.record import NodeError


class PercentileTest(unittest.TestCase):
    def test_nearest_rank(self):
        values = list(range(1, 101))  # 1..100
        self.assertEqual(percentiles(values), {"p50": 50, "p99": 99, "max": 100})

    def test_one_slow_write_in_a_hundred_is_the_max_not_the_p99(self):
        values = [1.0] * 99 + [250.0]
        self.assertEqual(percentiles(values), {"p50": 1.0, "p99": 1.0, "max": 250.0})

    def test_two_slow_writes_in_a_hundred_reach_the_p99(self):
        values = [1.0] * 98 + [250.0, 260.0]
        self.assertEqual(percentiles(values)["p99"], 250.0)

    def test_unordered_input_and_a_single_value(self):
        self.assertEqual(percentiles([3, 1, 2]), {"p50": 2, "p99": 3, "max": 3})
        self.assertEqual(percentiles([7]), {"p50": 7, "p99": 7, "max": 7})

    def test_no_write_is_an_error_not_a_zero(self):
        with self.assertRaises(NodeError):
            percentiles([])


class ProgressTest(unittest.TestCase):
    def test_only_growing_counts_are_progress(self):
        watch = ProgressWatch.__new__(ProgressWatch)
        watch.finished = -1
        self.assertTrue(watch.progressed("progress 10\n"))
        self.assertFalse(watch.progressed("progress 10\n"))
        self.assertTrue(watch.progressed("progress 11\n"))
        self.assertFalse(watch.progressed("done 11\n"))


class ProfileTest(unittest.TestCase):
    def test_the_latency_profile_runs_native_rounds_only(self):
        prof = load_profile("4k-write-d1-latency", "defaults")
        self.assertEqual((prof["bench"]["tool"], prof["bench"]["mode"]), ("rados-latency", "write"))
        self.assertIn("native", prof["native_only"])

    def test_the_profile_judges_latency_without_a_variant_too(self):
        self.assertEqual(load_profile("4k-write-d1-latency", "defaults")["rules"], "latency")
        self.assertIsNone(load_profile("4k-write", "defaults")["rules"])

    def test_the_background_variant_judges_latency(self):
        prof = load_profile("4k-write-d1-latency", "background")
        self.assertTrue(prof["bench"]["background"])
        self.assertEqual(prof["rules"], "latency")
        self.assertEqual(prof["conf"]["osd"]["osd_mclock_scheduler_background_best_effort_lim"], 0.001)

    def test_background_work_needs_the_latency_client(self):
        with self.assertRaises(StageError) as e:
            load_profile("4k-write", "background")
        self.assertIn("rados-latency", str(e.exception))


if __name__ == "__main__":
    unittest.main()
