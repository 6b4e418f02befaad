"""ci/cluster-test's pure parts: the plan (cmake/cluster-test.toml as
cluster_plan.plan() checks and completes it), the cluster-log scan with the
commented ignore list, the daemon-log scan, the PG judgement, the evidence
that the events did what they must, and the stage's arguments. Nothing here
brings up a root or a cluster (tests/root/test_cluster_test.py does)."""
import copy
import json
import subprocess
import tempfile
import tomllib
import unittest
from pathlib import Path

from tests.helpers import CI, REPO

from cephperf.runtime import cluster_admin, cluster_plan
from cephperf.runtime.cluster_plan import PlanError
from cephperf.stages import cluster_test

PLAN = REPO / "cmake" / "cluster-test.toml"
RAW = tomllib.loads(PLAN.read_text())
LINE = "2026-12-04T21:06:26.530491+0000 mon.a (mon.0) 42 : cluster "


def plan(data=None, **kw):
    return cluster_plan.plan(copy.deepcopy(data or RAW), **kw)


def with_phase(**fields) -> dict:
    data = copy.deepcopy(RAW)
    data["phase"] = [{"name": "p", "stock": [0], "events": [], **fields}]
    return data


class PlanFileTest(unittest.TestCase):
    def test_the_release_runs_a_mixed_cluster_then_an_upgraded_one(self):
        p = plan()
        first, last = p["phase"][0]["builds"], p["phase"][-1]["builds"]
        self.assertEqual(sorted(first), ["candidate", "candidate", "stock"])
        self.assertEqual(set(last), {"candidate"})
        self.assertEqual(p["cluster"]["osds"], 3)
        self.assertGreaterEqual(p["test_rados"]["ops"], 3000)
        self.assertIn("k=2", p["cluster"]["ec_profile"])
        self.assertIn("m=1", p["cluster"]["ec_profile"])
        self.assertIn("crush-failure-domain=osd", p["cluster"]["ec_profile"])

    def test_the_mixed_phase_kills_a_candidate_moves_the_stock_osd_and_splits(self):
        mixed = plan()["phase"][0]
        by_kind = {e["do"]: e for e in mixed["events"]}
        self.assertEqual(mixed["builds"][by_kind["kill"]["osd"]], "candidate")
        self.assertEqual(mixed["builds"][by_kind["out"]["osd"]], "stock")
        self.assertEqual(by_kind["in"]["osd"], by_kind["out"]["osd"])
        self.assertGreater(by_kind["split"]["pg_num"], RAW["cluster"]["pool_pgs"])

    def test_the_snaps_mix_runs_on_both_pools_appends_for_writes_on_ec(self):
        p = plan()
        mix = {"read", "write", "append", "delete", "snap_create", "snap_remove", "rollback", "copy_from",
               "setattr", "rmattr"}
        self.assertEqual(set(p["test_rados"]["op_weights"]), mix)
        ec = p["ec_test_rados"]
        self.assertTrue(ec["ec_pool"])
        self.assertEqual(set(ec["op_weights"]), mix - {"write"})
        self.assertEqual(ec["op_weights"]["append"],
                         RAW["test_rados"]["op_weights"]["append"] + RAW["test_rados"]["op_weights"]["write"])

    def test_short_pg_logs_and_every_ignore_entry_says_why(self):
        self.assertLessEqual(RAW["short_pg_log"]["osd_max_pg_log_entries"], 2)
        for entry in RAW["ignore"]:
            self.assertTrue(entry["why"].strip(), entry)


class PlanCheckTest(unittest.TestCase):
    def test_ops_and_phases_shorten_the_run(self):
        p = plan(ops=300, phases=["mixed"])
        self.assertEqual([ph["name"] for ph in p["phase"]], ["mixed"])
        self.assertEqual((p["test_rados"]["ops"], p["ec_test_rados"]["ops"]), (300, 300))

    def test_faults_are_named(self):
        no_why = copy.deepcopy(RAW)
        no_why["ignore"] = [{"pattern": "x", "why": " "}]
        bad_regex = copy.deepcopy(RAW)
        bad_regex["ignore"] = [{"pattern": "(", "why": "w"}]
        no_ops = copy.deepcopy(RAW)
        del no_ops["test_rados"]["ops"]
        for data, kw, named in (
                (RAW, {"phases": ["nope"]}, "no phase nope"),
                (no_why, {}, "why: say what makes the line expected"),
                (bad_regex, {}, "is not a regular expression"),
                (no_ops, {}, "[test_rados] ops: missing"),
                (with_phase(events=[{"at": 0.1, "do": "kill", "osd": 0}]), {}, "the OSD killed runs the candidate"),
                (with_phase(events=[{"at": 0.1, "do": "out", "osd": 0}]), {}, "is marked in again"),
                (with_phase(events=[{"at": 0.5, "do": "kill", "osd": 1}, {"at": 0.2, "do": "split", "pg_num": 16}]),
                 {}, "in order"),
                (with_phase(events=[{"at": 0.1, "do": "kill", "osd": 3}]), {}, "no such OSD"),
                (with_phase(events=[{"at": 0.1, "do": "explode", "osd": 1}]), {}, "`do` is one of"),
                (with_phase(stock=[5]), {}, "stock: OSD ids from 0 to 2")):
            with self.subTest(named=named):
                with self.assertRaises(PlanError) as e:
                    plan(data, **kw)
                self.assertIn(named, str(e.exception))

    def test_the_plan_reaches_the_node_as_json_unchanged(self):
        p = plan()
        self.assertEqual(json.loads(json.dumps(p)), p)  # the spec's bench field, as the node loads it

    def test_restarts_are_the_osds_whose_build_changes(self):
        mixed, upgraded = (ph["builds"] for ph in plan()["phase"])
        self.assertEqual(cluster_plan.restarts(mixed, upgraded), [0])
        self.assertEqual(cluster_plan.restarts(mixed, mixed), [])


class ClusterLogTest(unittest.TestCase):
    ignore = plan()["ignore"]

    def test_lines_the_test_causes_pass(self):
        expected = [LINE + "[WRN] Health check failed: 1 osds down (OSD_DOWN)",
                    LINE + "[WRN] Health check update: Degraded data redundancy: 42/297 objects degraded (14.141%), "
                           "7 pgs degraded (PG_DEGRADED)",
                    LINE + "[WRN] Health check failed: Reduced data availability: 2 pgs peering (PG_AVAILABILITY)",
                    LINE + "[WRN] Health check failed: OSD count 2 < osd_pool_default_size 3 (TOO_FEW_OSDS)",
                    "2026-12-04T22:03:10.885512+0000 mgr.x (mgr.4100) 1 : cluster [ERR] Failed to load ceph-mgr "
                    "modules: volumes, selftest, test_orchestrator",
                    LINE + "[INF] osd.1 marked itself down", LINE + "[DBG] pgmap v38: 16 pgs: 16 active+clean"]
        self.assertEqual(cluster_plan.unexpected_cluster_log(expected, self.ignore), [])

    def test_errors_security_and_other_warnings_fail(self):
        bad = [LINE + "[ERR] 2.3 deep-scrub 1 errors",
               LINE + "[ERR] Health check failed: 1 scrub errors (OSD_SCRUB_ERRORS)",
               LINE + "[WRN] Health check failed: Possible data damage: 1 pg inconsistent (PG_DAMAGED)",
               LINE + "[WRN] Health check failed: 1 slow ops, oldest one blocked for 31 sec (SLOW_OPS)",
               LINE + "[SEC] something the mon thinks a security event"]
        self.assertEqual(cluster_plan.unexpected_cluster_log(bad, self.ignore), bad)

    def test_encode_failures_and_crc_errors_fail_wherever_they_are(self):
        forbidden = RAW["checks"]["forbidden"]
        lines = ["osd.1 12 failed to encode map e34 with expected crc", "bad crc in data 123 != exp 456",
                 "_verify_csum bad crc32c/0x1000 checksum at blob offset 0x0", "all is well"]
        self.assertEqual(cluster_plan.forbidden_lines(lines, forbidden), lines[:3])

    def test_asserts_and_signals_in_a_daemon_log_are_named(self):
        text = ("2026-12-04 osd.2 ... ./src/osd/PG.cc: 123: FAILED ceph_assert(x == y)\n"
                "*** Caught signal (Aborted) **\n routine ok\n")
        found = cluster_plan.daemon_log_problems("osd.2.log", text, RAW["checks"]["forbidden"])
        self.assertEqual(found, ["osd.2.log: FAILED ceph_assert(x == y)", "osd.2.log: Caught signal (Aborted)"])
        self.assertEqual(cluster_plan.daemon_log_problems("osd.0.log", "*** Got signal Terminated ***\n",
                                                          RAW["checks"]["forbidden"]), [])


def pg(pgid, state="active+clean", stamp="2026-12-04T21:00:00", **errors):
    return {"pgid": pgid, "state": state, "last_deep_scrub_stamp": stamp, "stat_sum": {"num_objects": 3, **errors}}


class PgJudgementTest(unittest.TestCase):
    def test_active_clean_in_any_order_passes(self):
        self.assertEqual(cluster_plan.pg_problems([pg("1.0"), pg("1.1", "clean+active")]), [])

    def test_any_other_state_or_a_scrub_error_is_named(self):
        pgs = [pg("1.0", "active+clean+inconsistent"), pg("1.1", "active+undersized+degraded"),
               pg("1.2", "active+clean+scrubbing+deep"), pg("2.0", num_scrub_errors=2),
               pg("2.1", num_deep_scrub_errors=1)]
        problems = cluster_plan.pg_problems(pgs)
        self.assertEqual([p.split()[0] for p in problems], ["1.0", "1.1", "1.2", "2.0", "2.1"])
        self.assertIn("num_scrub_errors 2", problems[3])

    def test_a_pg_not_scrubbed_since_the_request_or_gone_is_named(self):
        before = {"1.0": "2026-12-04T21:00:00", "1.1": "2026-12-04T21:00:00", "1.2": "2026-12-04T21:00:00"}
        pgs = [pg("1.0", stamp="2026-12-04T21:09:00"), pg("1.1")]
        self.assertEqual(cluster_plan.pg_problems(pgs, before), ["1.1 not deep-scrubbed since the request", "1.2 gone"])

    def test_only_pgs_neither_scrubbed_nor_scrubbing_are_asked_again(self):
        before = {n: "2026-12-04T21:00:00" for n in ("1.0", "1.1", "1.2", "1.3")}
        pgs = [pg("1.0", stamp="2026-12-04T21:09:00"), pg("1.1"), pg("1.2", "active+clean+scrubbing+deep"),
               pg("1.3", "active+clean+scrubbing")]
        self.assertEqual(cluster_admin.not_scrubbed(pgs, before), ["1.1"])


class EvidenceTest(unittest.TestCase):
    # the counts PGRecoveryMsg::run leaves: 36 pushes, 4 push replies, 2 pulls, 14 backfill messages
    osd = {cluster_plan.PUSH: {"avgcount": 36}, "l_osd_recovery_push_reply_queue_latency": {"avgcount": 40},
           cluster_plan.PULL: {"avgcount": 42}, cluster_plan.BACKFILL: {"avgcount": 56}}

    def test_pushes_and_backfill_messages_from_the_counters(self):
        self.assertEqual(cluster_plan.recovery_messages(self.osd), {"pushes": 36, "backfill_messages": 14})
        self.assertEqual(cluster_plan.recovery_messages({}), {"pushes": 0, "backfill_messages": 0})

    def test_a_kill_without_pushes_or_an_in_without_backfill_is_named(self):
        mixed = plan()["phase"][0]
        kill = next(e["osd"] for e in mixed["events"] if e["do"] == "kill")
        moved = next(e["osd"] for e in mixed["events"] if e["do"] == "in")
        pushed_only = {"pushes": 5, "backfill_messages": 0}
        both = {"pushes": 5, "backfill_messages": 3}
        self.assertEqual(cluster_plan.unexercised(mixed, {kill: pushed_only, moved: both}), [])
        self.assertEqual(cluster_plan.unexercised(mixed, {kill: {"pushes": 0, "backfill_messages": 0},
                                                          moved: pushed_only}),
                         [f"osd.{kill} took no push after its SIGKILL (no log-based recovery)",
                          f"osd.{moved} took no backfill message after it was marked in (no backfill)"])

    def test_pg_states_from_the_mgrs_summaries(self):
        lines = [LINE + "[DBG] pgmap v63: 24 pgs: 2 active+clean+remapped, 1 active+undersized+degraded+remapped"
                        "+backfill_wait, 21 active+clean; 32 MiB data", LINE + "[DBG] pgmap v13: 0 pgs: "]
        self.assertEqual(cluster_plan.pgmap_states(lines),
                         {"active+clean+remapped", "active+undersized+degraded+remapped+backfill_wait", "active+clean"})


class StageArgumentsTest(unittest.TestCase):
    def run_stage(self, *args):
        return subprocess.run([str(CI / "cluster-test"), *map(str, args)], capture_output=True, text=True, timeout=60)

    def test_bad_arguments_get_one_line_and_exit_2(self):
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "ceph-fuse_1_amd64.deb").write_bytes(b"")
            bad_plan = Path(tmp) / "plan.toml"
            bad_plan.write_text(PLAN.read_text().replace("[test_rados]\nops = ", "[test_rados]\nopz = "))
            for args, named in ((["--candidate", Path(tmp) / "absent"], "absent: no such directory"),
                                (["--candidate", tmp], "no ceph-osd_*.deb"),
                                (["--candidate", "deb [trusted=yes] file:/srv/repo trixie main"], "an apt line"),
                                (["--candidate", "debian", "--phase", "nope"], "no phase nope"),
                                (["--candidate", "debian", "--plan", bad_plan], "[test_rados] ops: missing")):
                with self.subTest(named=named):
                    r = self.run_stage(*args, "--out", Path(tmp) / "out")
                    self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
                    self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
                    self.assertIn(named, r.stderr)
                    self.assertFalse((Path(tmp) / "out").exists())
            r = self.run_stage("--candidate", "debian", "--ops", "0")  # argparse's usage, then the line
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("'0' is not a positive whole number", r.stderr)

    def test_the_report_names_each_phase_and_the_failure(self):
        result = {"ok": False, "error": "phase mixed: deep scrub: 2.3 active+clean+inconsistent", "seconds": 90,
                  "candidate": "ceph version 18.2.7", "stock": "18.2.7+ds-1+deb13u1",
                  "build_ids": {"stock": "ab", "candidate": "cd"}, "steps": ["cluster up"],
                  "checks": [{"step": "phase mixed", "seconds": 80.5, "workload_seconds": 60.1,
                              "error": "deep scrub: 2.3 active+clean+inconsistent",
                              "events": [{"do": "kill", "osd": 1}]}]}
        md = cluster_test.report_md(result, "debian")
        self.assertIn("FAIL: phase mixed: deep scrub", md)
        self.assertIn("| phase mixed | 80.5 | deep scrub: 2.3 active+clean+inconsistent |", md)
        self.assertIn('"do": "kill"', md)


if __name__ == "__main__":
    unittest.main()
