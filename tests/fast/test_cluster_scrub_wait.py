"""cluster-test's deep scrub of every PG (runtime/cluster_test.clean_and_scrubbed)
against a cluster that drops a PG's first deep-scrub request, as 18.2.7 does
with a request that reaches a PG between two intervals, or holds it back after
a failed replica reservation: the request made again passes, and the report
counts it; without asking again the wait ends in the PG named."""
import json
import sys
import types
import unittest
from unittest import mock

# cluster_test's workloads import Ceph's Python binding, which only the
# runtime root has; nothing here calls it
sys.modules.setdefault("rados", types.ModuleType("rados"))

from cephperf.runtime import cluster_admin  # noqa: E402
from cephperf.runtime.cluster_test import clean_and_scrubbed  # noqa: E402
from cephperf.runtime.record import NodeError  # noqa: E402

BEFORE, AFTER = "2026-12-05T00:00:00", "2026-12-05T00:05:00"


class DropsFirstRequest:
    """`ceph pg ls` and `ceph pg deep-scrub` of a cluster whose PG 1.1 ignores its first request."""

    def __init__(self):
        self.stamps = {"1.0": BEFORE, "1.1": BEFORE}
        self.requests = {}

    def check_alive(self):
        pass

    def ceph(self, *args, timeout=60):
        if args[:2] == ("pg", "ls"):
            pgs = [{"pgid": p, "state": "active+clean", "last_deep_scrub_stamp": s, "stat_sum": {"num_objects": 1}}
                   for p, s in self.stamps.items()]
            return types.SimpleNamespace(stdout=json.dumps({"pg_stats": pgs}))
        if args[:2] == ("pg", "deep-scrub"):
            pgid = args[2]
            self.requests[pgid] = self.requests.get(pgid, 0) + 1
            if pgid != "1.1" or self.requests[pgid] > 1:
                self.stamps[pgid] = AFTER
        return types.SimpleNamespace(stdout="")


def plan(again_seconds):
    return {"checks": {"clean_seconds": 5, "scrub_seconds": 1, "scrub_request_again_seconds": again_seconds},
            "short_pg_log": {}}


@mock.patch.object(cluster_admin, "POLL_SECONDS", 0.01)
class ScrubWaitTest(unittest.TestCase):
    def test_a_dropped_request_asked_again_passes_and_is_counted(self):
        cluster, entry = DropsFirstRequest(), {}
        clean_and_scrubbed(cluster, plan(0), entry)
        self.assertEqual(entry["scrub_requests_repeated"], {"1.1": 1})
        self.assertEqual(entry["scrubbed_pgs"], 2)
        self.assertEqual(cluster.requests, {"1.0": 1, "1.1": 2})

    def test_without_asking_again_the_pg_is_named(self):
        with self.assertRaisesRegex(NodeError, r"not every PG deep-scrubbed within 1 s: 1\.1 not deep-scrubbed "
                                               r"since the request"):
            clean_and_scrubbed(DropsFirstRequest(), plan(3600), {})


if __name__ == "__main__":
    unittest.main()
