"""The node checks (ci/io-mock-test, ci/onode-cache-test, ci/rados-model-test)
are one stage driven by cmake/node-checks.toml: each program keeps its own
command line and exit codes, and runs its node-side module with its table's
ports and log directories. Nothing here brings up a root or a cluster."""
import subprocess
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from tests.helpers import CI, REPO

from cephperf import node_checks, paths
from cephperf.bench.rados_workload import load_workload
from cephperf.common import StageError
from cephperf.stages import node_check


def run(program: str, *args) -> subprocess.CompletedProcess:
    return subprocess.run([str(CI / program), *map(str, args)], capture_output=True, text=True, timeout=60)


class TableTest(unittest.TestCase):
    def test_every_check_has_its_program_and_its_node_side_module(self):
        for name, check in node_checks.load().items():
            program = CI / name
            self.assertTrue(program.is_file() and program.stat().st_mode & 0o111, f"{program}: no program")
            self.assertIn(f'main("{name}")', program.read_text(), f"{program} does not run its own check")
            self.assertTrue((paths.RUNTIME / f"{check.runtime}.py").is_file(), check.runtime)

    def test_a_bad_table_is_named_on_one_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "node-checks.toml"
            for text, named in (('[x]\nruntime = "io_mock"\n', "missing ports"),
                                ('[x]\nruntime = "io_mock"\nports = "6"\nlogs = []\nreport = "r"\nwhat = "w"\n'
                                 'passed = "p"\nhelp = "h"\n', "ports must be a whole number"),
                                ('[x]\nruntime = "io_mock"\nports = 6\nlogs = []\nreport = "r"\nwhat = "w"\n'
                                 'passed = "p"\nhelp = "h"\nstok = true\n', "unknown field stok")):
                path.write_text(text)
                with self.assertRaises(StageError) as e:
                    node_checks.load(path)
                self.assertIn(f"{path}: [x]: ", str(e.exception))
                self.assertIn(named, str(e.exception))
                self.assertEqual(e.exception.code, 2)


class CommandLineTest(unittest.TestCase):
    def test_each_program_prints_its_own_help(self):
        for name, check in node_checks.load().items():
            r = run(name, "--help")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn(check.help.splitlines()[0], r.stdout)
        self.assertIn("--stock", run("rados-model-test", "--help").stdout)
        self.assertNotIn("--stock", run("io-mock-test", "--help").stdout)

    def test_the_rados_model_tests_options_keep_working(self):
        with tempfile.TemporaryDirectory() as tmp:
            bad_conf = Path(tmp) / "bad.conf"
            bad_conf.write_text("bluestore_rocksdb_options_annex = no section header\n")
            for args, named in ((["--debs", Path(tmp) / "absent"], "absent: no such directory"),
                                (["--stock", "--osd-conf", bad_conf], "bad.conf: not a ceph.conf-style file"),
                                (["--stock", "--conf", "no-equals-sign"], "expected KEY=VALUE"),
                                (["--stock", "--ops", "10"], "--ops: 10 ops for")):
                r = run("rados-model-test", *args, "--out", Path(tmp) / "out")
                self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
                self.assertIn(named, r.stderr)

    def test_an_option_a_check_does_not_take_is_refused(self):
        r = run("io-mock-test", "--stock")
        self.assertEqual(r.returncode, 2)
        self.assertIn("unrecognized arguments: --stock", r.stderr)

    def test_a_check_runs_its_module_with_its_tables_settings(self):
        with tempfile.TemporaryDirectory() as tmp:
            debs, out = Path(tmp) / "debs", Path(tmp) / "out"
            debs.mkdir()
            (out / "log").mkdir(parents=True)  # an earlier failure's logs go
            result = {"ok": True, "candidate": "18.2.7+ds-1+deb13u1+perf8", "seconds": 12}
            with mock.patch.object(node_checks, "check_osd_debs", return_value=result) as ran:
                self.assertEqual(node_check.execute("rados-model-test", ["--debs", str(debs), "--out", str(out),
                                                                         "--conf", "osd_op_num_shards=2"]), 0)
            (module, debs_dir, out_dir, ports, logs, what), fields = ran.call_args
            self.assertEqual((module, debs_dir, out_dir, ports, logs, what),
                             ("rados_model", debs.resolve(), out, 2, ["cluster/log"], "rados model test"))
            self.assertEqual(fields["conf"], {"osd": {"osd_op_num_shards": "2"}})
            self.assertEqual(fields["bench"]["test_rados"]["ops"],
                             load_workload(REPO / "bench" / "rados-model.toml", None)["test_rados"]["ops"])
            self.assertFalse((out / "log").exists())
            with mock.patch.object(node_checks, "check_osd_debs", return_value=result) as ran:
                node_check.execute("io-mock-test", ["--debs", str(debs), "--out", str(out)])
            self.assertEqual(ran.call_args.args[0], "io_mock")
            self.assertEqual(ran.call_args.args[3], 6)
            self.assertEqual(ran.call_args.kwargs, {})  # neither conf nor a workload

    def test_the_pass_line_names_the_osd_and_the_settings(self):
        check = node_checks.node_check("rados-model-test")
        self.assertEqual(node_checks.pass_line(check, {"stock": "18.2.7+ds-1+deb13u1", "seconds": 30},
                                               {"osd": {"a": "1"}}),
                         "PASS: ceph_test_rados with a deep scrub, the omap model and a deep fsck (ceph-osd 18.2.7+ds-1+deb13u1, "
                         "with [osd] a = 1, in 30 s)")


class WorkloadFileTest(unittest.TestCase):
    def test_the_deep_scrub_must_come_after_the_restart(self):
        text = (REPO / "bench" / "rados-model.toml").read_text()
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "rados-model.toml"
            path.write_text(text.replace("[deep_scrub]\nat = 0.7", "[deep_scrub]\nat = 0.5"))
            with self.assertRaises(StageError) as caught:
                load_workload(path, None)
            self.assertIn(str(path), str(caught.exception))
            self.assertIn("[deep_scrub] at", str(caught.exception))
            path.write_text(text.replace("[deep_scrub]\nat = 0.7\n", "[deep_scrub]\n"))
            with self.assertRaisesRegex(StageError, r"\[deep_scrub\] at must be a positive number"):
                load_workload(path, None)


class OptionValueTest(unittest.TestCase):
    def test_a_float_option_is_read_back_in_the_osds_format(self):
        from cephperf.runtime.cluster_admin import same_value
        self.assertTrue(same_value("0.000000", "0"))
        self.assertTrue(same_value("0", "0"))
        self.assertFalse(same_value("0.660000", "0"))
        self.assertFalse(same_value("rocksdb", "0"))


class DeepScrubTest(unittest.TestCase):
    """cluster_admin.deep_scrub_pool on canned `ceph pg ls-by-pool` listings."""

    @staticmethod
    def pg(pgid, stamp, state="active+clean", errors=0, objects=3):
        return {"pgid": pgid, "last_deep_scrub_stamp": stamp, "state": state,
                "stat_sum": {"num_scrub_errors": errors, "num_objects": objects}}

    def run_scrub(self, listings):
        from cephperf.runtime import cluster_admin
        cluster = mock.Mock()
        answers = iter({"pg_stats": pgs} for pgs in listings)
        with mock.patch.object(cluster_admin, "ceph_json", side_effect=lambda *a: next(answers)), \
                mock.patch.object(cluster_admin, "tell_osd_option") as told, \
                mock.patch.object(cluster_admin, "POLL_SECONDS", 0):
            got = cluster_admin.deep_scrub_pool(cluster, "bench", 60), cluster
        told.assert_called_once_with(cluster, "osd_scrub_backoff_ratio", "0")
        return got

    def test_every_pg_is_asked_and_the_scrub_ends_when_each_stamp_moved(self):
        before = [self.pg("1.0", "t0"), self.pg("1.1", "t0")]
        half = [self.pg("1.0", "t1"), self.pg("1.1", "t0", "active+clean+scrubbing+deep")]
        done = [self.pg("1.0", "t1"), self.pg("1.1", "t2", objects=4)]
        got, cluster = self.run_scrub([before, half, done])
        got.pop("seconds")
        self.assertEqual(got, {"pgs": 2, "objects": 7})  # from the last listing, not the half-done one
        asked = [c.args for c in cluster.ceph.call_args_list if c.args[0] == "pg"]
        self.assertEqual(asked, [("pg", "deep-scrub", "1.0"), ("pg", "deep-scrub", "1.1")])

    def test_an_inconsistent_pg_fails_the_step_by_name(self):
        from cephperf.runtime.record import NodeError
        before = [self.pg("1.0", "t0"), self.pg("1.1", "t0")]
        done = [self.pg("1.0", "t1"), self.pg("1.1", "t1", "active+clean+inconsistent", errors=2)]
        with self.assertRaisesRegex(NodeError, r"1\.1 active\+clean\+inconsistent \(2 errors\)"):
            self.run_scrub([before, done])

    def test_a_scrub_that_never_ends_fails_within_its_time(self):
        from cephperf.runtime import cluster_admin
        from cephperf.runtime.record import NodeError
        cluster = mock.Mock()
        stuck = {"pg_stats": [self.pg("1.0", "t0")]}
        clock = iter(range(0, 10_000, 30))
        with mock.patch.object(cluster_admin, "ceph_json", return_value=stuck), \
                mock.patch.object(cluster_admin, "tell_osd_option"), \
                mock.patch.object(cluster_admin, "POLL_SECONDS", 0), \
                mock.patch.object(cluster_admin.time, "monotonic", side_effect=lambda: next(clock)):
            with self.assertRaisesRegex(NodeError, r"a deep scrub of each of pool bench's 1 PGs: not within 60 s"):
                cluster_admin.deep_scrub_pool(cluster, "bench", 60)


if __name__ == "__main__":
    unittest.main()
