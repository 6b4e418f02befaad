"""The bench's pure functions on fixtures: what a side runs, the round spec
(the node contract), rados bench's summary, the completion-path counters,
how a daemon ended (its log, its status), and the Markdown report."""
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from cephperf.bench.report import markdown, values
from cephperf.bench.rounds import (COUNTED_CAP_SECONDS, load_profile, parse_source, read_conf_file, resolve_variant,
                                   round_spec)
from cephperf.bench.functions import tables
from cephperf.bench.paired import judge_paired
from cephperf.common import EXIT_ERROR, StageError, load_toml
from cephperf.paths import RULES
from cephperf.runtime.cluster import Cluster
from cephperf.runtime.daemon_log import abort_lines, cause, exit_status
from cephperf.runtime.instrument import estimated_cycles, function_name, idle_share, parse_annotation, totals, wrap
from cephperf.runtime.fio import FioWatch, parse_fio
from cephperf.runtime.fio_rbd import job_args
from cephperf.runtime.measure import parse_summary, with_max_objects
from cephperf.runtime.osd_stats import (context_switches, counter_delta, queue_report, switches_per_op,
                                       thread_report)
from cephperf.runtime.record import NodeError
from cephperf.runtime.spec import NodeSpec

RADOS_BENCH_TAIL = """\
    9      16      2190      2174   0.94341   0.957031    0.0124    0.0652
Total time run:         10.0371
Total writes made:      2191
Write size:             4096
Object size:            4096
Bandwidth (MB/sec):     0.852
Stddev Bandwidth:       0.0727
Max bandwidth (MB/sec): 0.957
Min bandwidth (MB/sec): 0.75
Average IOPS:           218
Stddev IOPS:            18.6
Max IOPS:               245
Min IOPS:               192
Average Latency(s):     0.0730
Stddev Latency(s):      0.0411
Max latency(s):         0.395
Min latency(s):         0.0113
""".splitlines()


class ParseSourceTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = Path(self._tmp.name)
        self.addCleanup(self._tmp.cleanup)

    def test_debian(self):
        self.assertEqual(parse_source("debian"), {"source": "debian"})

    def test_apt_line_binds_the_repository_and_its_key(self):
        line = f"deb [signed-by={self.tmp}/repo/k.gpg] file:{self.tmp}/repo trixie main"
        side = parse_source(line)
        self.assertEqual(side["apt_line"], line)
        self.assertEqual(side["bind"], f"{self.tmp}/repo")

    def test_development_build(self):
        (self.tmp / "ceph-osd").write_text("")
        side = parse_source(str(self.tmp))
        self.assertEqual(side["osd_binary"], str(self.tmp / "ceph-osd"))
        self.assertEqual(side["ld_library_path"], "")

    def test_debs_without_the_debug_packages(self):
        for name in ("ceph-osd_1_amd64.deb", "ceph-osd-dbg_1_amd64.deb", "ceph-mon-dbgsym_1_amd64.deb"):
            (self.tmp / name).write_text("")
        self.assertEqual(parse_source(str(self.tmp))["debs"], [str(self.tmp / "ceph-osd_1_amd64.deb")])

    def test_anything_else_is_refused_with_exit_2(self):
        with self.assertRaises(StageError) as e:
            parse_source(str(self.tmp / "missing"))
        self.assertEqual(e.exception.code, EXIT_ERROR)
        self.assertIn("missing", str(e.exception))


class VariantTest(unittest.TestCase):
    VARIANTS = {"cpu": {"io_mock": True, "pairs": 8, "conf": {"osd": {"a": 1, "b": 2}}},
                "cpu-x": {"extends": "cpu", "io_mock": False, "conf": {"osd": {"b": 3}}},
                "cpu-x-y": {"extends": "cpu-x", "poll_idle": True},
                "loop-a": {"extends": "loop-b"}, "loop-b": {"extends": "loop-a"},
                "orphan": {"extends": "gone"}}

    def test_a_variant_names_only_what_it_changes(self):
        self.assertEqual(resolve_variant(self.VARIANTS, "cpu-x-y"),
                         {"io_mock": False, "pairs": 8, "conf": {"osd": {"a": 1, "b": 3}}, "poll_idle": True})
        self.assertEqual(self.VARIANTS["cpu"]["conf"], {"osd": {"a": 1, "b": 2}})  # the base is not changed

    def test_a_bad_extends_is_named(self):
        with self.assertRaisesRegex(StageError, r"variants.toml: \[orphan\] extends 'gone': no such variant"):
            resolve_variant(self.VARIANTS, "orphan")
        with self.assertRaisesRegex(StageError, r"extends 'loop-.': a cycle"):
            resolve_variant(self.VARIANTS, "loop-a")

    def test_the_shipped_cpu_variants_resolve(self):
        prof = load_profile("4k-write", "cpu-upstream-io-mock")
        self.assertFalse(prof["io_mock"])
        self.assertEqual((prof["cpu_pinning"], prof["pairs"], prof["rules"]), ({"osd": [1], "others": [0]}, 16, "cpu"))
        self.assertEqual(prof["runtime_conf"]["osd"]["bluestore_debug_omit_kv_commit"], True)
        self.assertEqual(prof["conf"]["osd"]["osd_max_pg_log_entries"], 500)


class RoundSpecTest(unittest.TestCase):
    def test_seconds_override_caps_the_prefill(self):
        prof = load_profile("4k-randread", "defaults")
        spec = round_spec(Path("/state"), prof, {"debs": ["a.deb"]}, {"osd": {"x": "1"}}, 5, 20, False)
        self.assertEqual(spec.bench["seconds"], 5)
        self.assertEqual(spec.bench["prefill_seconds"], 5)
        self.assertEqual(spec.debs, ["a.deb"])
        self.assertEqual(spec.conf, {"osd": {"x": "1"}})
        self.assertNotEqual(spec.port, spec.v1_port)

    def test_counted_write_rounds_count_ops_and_read_rounds_seconds(self):
        spec = round_spec(Path("/state"), load_profile("4k-write", "defaults"), {}, {}, None, 20, False, "callgrind")
        self.assertEqual((spec.warmup_ops, spec.window_ops, spec.warmup_seconds), (500, 2000, 0))
        self.assertEqual((spec.bench["threads"], spec.bench["seconds"]), (1, COUNTED_CAP_SECONDS))
        spec = round_spec(Path("/state"), load_profile("4k-randread", "defaults"), {}, {}, None, 20, False, "callgrind")
        self.assertEqual((spec.window_ops, spec.warmup_seconds, spec.bench["seconds"]), (0, 10, 40))
        native = round_spec(Path("/state"), load_profile("4k-write", "defaults"), {}, {}, None, 20, False)
        self.assertEqual((native.window_ops, native.bench["threads"]), (0, 16))

    def test_rbd_profiles_run_fio_and_count_at_depth_one(self):
        prof = load_profile("rbd-4k-randwrite-misaligned", "defaults")
        self.assertEqual((prof["bench"]["tool"], prof["bench"]["mode"], prof["bench"]["offset"]),
                         ("fio-rbd", "write", 17408))
        spec = round_spec(Path("/state"), prof, {}, {}, None, 20, False, "callgrind")
        self.assertEqual((spec.bench["iodepth"], spec.warmup_seconds, spec.bench["seconds"], spec.window_ops),
                         (1, 10, 40, 0))
        self.assertEqual(load_profile("rbd-4k-randread", "defaults")["bench"]["mode"], "read")
        # reads of mocked objects hang: the io-mock variant takes write profiles only
        with self.assertRaisesRegex(StageError, "only writes"):
            load_profile("rbd-4k-randread", "io-mock")

    def test_cephfs_profiles_are_native_only_and_files_one_or_one_per_job(self):
        prof = load_profile("cephfs-4k-directwrite-16jobs-1file", "defaults")
        self.assertEqual((prof["bench"]["jobs"], prof["bench"]["files"]), (16, 1))
        self.assertIn("inode lock", prof["native_only"])
        self.assertIsNone(load_profile("rbd-4k-randwrite", "defaults")["native_only"])
        # counted rounds of three OSDs run each under a callgrind of its own (instrument.measure_roles)
        self.assertIsNone(load_profile("4k-write", "three-osds")["native_only"])
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "odd.toml"
            path.write_text('[bench]\ntool = "fio-cephfs"\nrw = "randwrite"\nblock_size = 4096\njobs = 16\n'
                            'files = 4\nfile_mib = 64\nseconds = 5\n[device]\nsize_gib = 4\n')
            with self.assertRaisesRegex(StageError, r"odd.toml: \[bench\] files = 4: 1 \(shared by every job\) or jobs"):
                load_profile(str(path), "defaults")

    def test_a_profile_missing_what_its_tool_needs_is_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "odd.toml"
            path.write_text('[bench]\ntool = "fio-rbd"\nrw = "randwrite"\nblock_size = 4096\n[device]\nsize_gib = 1\n')
            with self.assertRaisesRegex(StageError, r"odd.toml: \[bench\] lacks iodepth, seconds, image_gib"):
                load_profile(str(path), "defaults")
            path.write_text('[bench]\ntool = "fio"\n')
            with self.assertRaisesRegex(StageError, r"odd.toml: \[bench\] tool = 'fio'; known: rados, rados-latency, fio-rbd, fio-cephfs"):
                load_profile(str(path), "defaults")

    def test_the_three_osd_variant_asks_for_three_osds(self):
        spec = round_spec(Path("/state"), load_profile("4k-write", "three-osds"), {}, {}, None, 20, False)
        self.assertEqual(spec.osds, 3)
        self.assertEqual(round_spec(Path("/s"), load_profile("4k-write", "defaults"), {}, {}, None, 20, False).osds, 1)

    def test_only_the_three_osd_variants_counted_rounds_count_the_idle_cluster_first(self):
        three = load_profile("4k-write", "three-osds")
        self.assertEqual(round_spec(Path("/s"), three, {}, {}, None, 20, False, mode="callgrind").counted_idle_seconds, 10)
        self.assertEqual(round_spec(Path("/s"), three, {}, {}, None, 20, False).counted_idle_seconds, 0)
        one = load_profile("4k-write", "defaults")
        self.assertEqual(round_spec(Path("/s"), one, {}, {}, None, 20, False, mode="callgrind").counted_idle_seconds, 0)

    def test_the_idle_clusters_share_is_scaled_to_each_osds_window_and_taken_off(self):
        # 10 s idle: osd.0 1.0M instructions, each replica 0.5M; a 20 s window of 40 ops
        idle = {"osd.0": {"Ir": 1_000_000}, "osd.1": {"Ir": 500_000}, "osd.2": {"Ir": 500_000}}
        ten = {n: 10.0 for n in idle}
        twenty = {n: 20.0 for n in idle}
        per_op = {"osd_instructions_per_op": 800_000.0, "primary_instructions_per_op": 400_000.0}
        got = idle_share(idle, ten, twenty, 40, per_op)
        self.assertEqual(got["idle_instructions_per_second"], 200_000.0)
        self.assertEqual(got["osd_idle_instructions_per_op"], 100_000.0)  # 2M x 2 / 40
        self.assertEqual(got["osd_instructions_per_op_beyond_idle"], 700_000.0)
        self.assertEqual(got["primary_idle_instructions_per_op"], 50_000.0)
        self.assertEqual(got["primary_instructions_per_op_beyond_idle"], 350_000.0)
        # an OSD counted longer in the window (the dumps run one after the other) weighs more
        longer = dict(twenty, **{"osd.2": 30.0})
        self.assertEqual(idle_share(idle, ten, longer, 40, per_op)["osd_idle_instructions_per_op"], 112_500.0)
        with self.assertRaisesRegex(NodeError, "no op"):
            idle_share(idle, ten, twenty, 0, per_op)

    def test_a_window_in_ops_replaces_the_profiles_object_cap(self):
        self.assertEqual(with_max_objects(["-t", 1, "--max-objects", 1000000, "--no-cleanup"], 3000),
                         ["-t", 1, "--no-cleanup", "--max-objects", 3000])

    def test_the_contract_round_trips_and_refuses_unknown_fields(self):
        with tempfile.TemporaryDirectory() as tmp:
            f = Path(tmp) / "spec.json"
            spec = NodeSpec(state_dir="/s", port=1, v1_port=2, apt_line="deb x trixie main")
            spec.save(f)
            self.assertEqual(NodeSpec.load(f), spec)
            f.write_text('{"state_dir": "/s", "apt_source": "deb x"}')
            with self.assertRaisesRegex(ValueError, "apt_source"):
                NodeSpec.load(f)


class MeasureTest(unittest.TestCase):
    def test_rados_bench_summary(self):
        s = parse_summary(RADOS_BENCH_TAIL)
        self.assertEqual(s["ops"], 2191)
        self.assertEqual(s["iops"], 218)
        self.assertAlmostEqual(s["lat_avg_s"], 0.0730)
        self.assertAlmostEqual(s["lat_max_s"], 0.395)

    def test_no_summary_names_the_last_lines(self):
        with self.assertRaisesRegex(NodeError, "no summary: .*error connecting"):
            parse_summary(["error connecting to the cluster"])

    def test_counter_deltas(self):
        before = {"bluestore": {"kv_sync_lat": {"avgcount": 10, "sum": 0.5}},
                  "finisher-x": {"complete_latency": {"avgcount": 0, "sum": 0}}}
        after = {"bluestore": {"kv_sync_lat": {"avgcount": 30, "sum": 1.5}},
                 "finisher-x": {"queue_len": 3, "complete_latency": {"avgcount": 4, "sum": 0.002}}}
        self.assertEqual(counter_delta(before, after, "bluestore", "kv_sync_lat"), {"count": 20, "avg_ms": 50.0})
        q = queue_report(before, after)
        self.assertEqual(q["finisher-x"], {"queue_len_now": 3, "complete_latency": {"count": 4, "avg_ms": 0.5}})
        self.assertEqual(q["bluestore.kv_sync_lat"]["count"], 20)

    def test_thread_report_groups_by_name(self):
        before = {"1": ("tp_osd_tp", 1.0), "2": ("tp_osd_tp", 2.0)}
        after = {"1": ("tp_osd_tp", 6.0), "2": ("tp_osd_tp", 3.0), "3": ("msgr-worker-0", 4.0)}
        r = thread_report(before, after, 10.0)
        self.assertEqual(r["busiest"][0]["cpu_percent"], 50.0)
        self.assertEqual(r["by_name"]["tp_osd_tp"], {"threads": 2, "cpu_percent": 60.0, "busiest_thread_percent": 50.0})

    def test_context_switches_count_every_thread_of_the_process(self):
        # a child whose second thread blocks 500 times: its main thread alone has a few dozen switches at most
        child = subprocess.Popen([sys.executable, str(Path(__file__).with_name("threads_that_block.py")), "500"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(child.stdout.readline().strip(), "ready")
            switches = context_switches(child.pid)
        finally:
            child.communicate(timeout=30)
        self.assertGreaterEqual(switches["voluntary"], 500)
        self.assertEqual(switches_per_op({"voluntary": 10, "involuntary": 2}, {"voluntary": 40, "involuntary": 5}, 10),
                         {"voluntary": 3.0, "involuntary": 0.3})
        self.assertIsNone(switches_per_op(switches, switches, 0))


# callgrind_annotate --show=Ir --inclusive=no of a stock ceph-osd round (shortened)
ANNOTATION = """\
--------------------------------------------------------------------------------
Ir                   
--------------------------------------------------------------------------------
623,232,417 (100.0%)  PROGRAM TOTALS

--------------------------------------------------------------------------------
Ir                   file:function
--------------------------------------------------------------------------------
25,936,268 ( 4.16%)  ???:operator new[](unsigned long) [???]
12,804,974 ( 2.05%)  ./obj-x86_64-linux-gnu/src/rocksdb/./src/rocksdb/db/memtable.cc:rocksdb::MemTable::KeyComparator::operator()(char const*, rocksdb::Slice const&) const [/usr/bin/ceph-osd]
10,474,258 ( 1.68%)  ./obj-x86_64-linux-gnu/src/common/./src/common/buffer.cc:ceph::buffer::v15_2_0::list::append(char const*, unsigned int) [/usr/bin/ceph-osd]
 7,879,984 ( 1.26%)  ./obj-x86_64-linux-gnu/src/rocksdb/./src/rocksdb/util/user_comparator_wrapper.h:rocksdb::MemTable::KeyComparator::operator()(char const*, rocksdb::Slice const&) const [/usr/bin/ceph-osd]
 1,698,000 ( 0.27%)  ???:0x00000000017de690 [/usr/bin/ceph-osd]

--------------------------------------------------------------------------------
-- Auto-annotated source: /build/src/common/buffer.cc
--------------------------------------------------------------------------------
Ir              

-- line 1300 ----------------------------------------
8,264,130 ( 1.33%)  => /build/src/common/buffer.cc:ceph::buffer::v15_2_0::list::append_zero(unsigned int) (2,001x)
   12,006 ( 0.00%)        _carriage->append_zeros(first_round);

--------------------------------------------------------------------------------
Ir                   
--------------------------------------------------------------------------------
223,141,077 (35.80%)  events annotated

"""
DUMP_HEAD = """\
version: 1
creator: callgrind-3.24.0
events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw
summary: 623232417 189894383 120454399 20612224 8510466 3400661 24894 172069 549536
"""


class InstrumentTest(unittest.TestCase):
    def test_the_osd_runs_under_callgrind_with_fair_scheduling_and_instrumentation_off(self):
        argv = wrap(["/usr/bin/ceph-osd", "-i", 0], Path("/run/x/callgrind.out"))
        self.assertEqual(argv[:2], ["valgrind", "--tool=callgrind"])
        # threads take turns: a spinner cannot starve the holder of a spinlock
        self.assertIn("--fair-sched=yes", argv)
        self.assertIn("--instr-atstart=no", argv)
        self.assertEqual(argv[-3:], ["/usr/bin/ceph-osd", "-i", "0"])

    def test_counted_rounds_skip_the_osds_start_up_benchmark_native_rounds_keep_it(self):
        # Under callgrind the mClock start-up benchmark's writes and the mon's
        # MConfig reply to its result landed in some windows (instrument.STARTUP).
        def osd_section(instrument):
            with tempfile.TemporaryDirectory() as tmp:
                cluster = Cluster(NodeSpec(state_dir=tmp, port=1, v1_port=2, instrument=instrument))
                cluster.write_conf()
                return read_conf_file(cluster.conf)["osd"]
        counted = osd_section("callgrind")
        self.assertEqual(counted["osd_mclock_skip_benchmark"], "true")
        self.assertEqual(counted["bluestore_cache_trim_interval"], "1.5")
        self.assertNotIn("osd_mclock_skip_benchmark", osd_section(None))

    def test_totals_and_estimated_cycles(self):
        ev = totals(DUMP_HEAD)
        self.assertEqual(ev["Ir"], 623232417)
        self.assertEqual(estimated_cycles(ev), 623232417 + 10 * (20612224 + 8510466 + 3400661)
                         + 100 * (24894 + 172069 + 549536))

    def test_a_dump_without_totals_is_an_error(self):
        with self.assertRaisesRegex(NodeError, "no events or totals"):
            totals("version: 1\n")

    def test_annotation_to_functions(self):
        top = parse_annotation(ANNOTATION)
        self.assertEqual(top[0], ("operator new[](unsigned long)", 25936268))
        # the comparator's lines from memtable.cc and from the header it inlines are one function
        self.assertEqual(top[1], ("rocksdb::MemTable::KeyComparator::operator()(char const*, rocksdb::Slice const&) const",
                                  12804974 + 7879984))
        self.assertEqual(len(top), 4)
        # the annotated sources after the table (call lines, source lines, their total) are not functions
        names = [name for name, _ in top]
        self.assertFalse([n for n in names if "(2,001x)" in n or "events annotated" in n or "_carriage" in n], names)
        self.assertEqual(function_name("???:0x00000000017de690 [/usr/bin/ceph-osd]"), "0x00000000017de690")
        self.assertEqual(function_name("std::map<int, int>::find(int const&) [/usr/bin/ceph-osd]"),
                         "std::map<int, int>::find(int const&)")


class FunctionTablesTest(unittest.TestCase):
    def test_differences_only_of_functions_listed_on_both_sides(self):
        def rec(side, fns):
            return {"side": side, "mode": "callgrind", "functions": {"self": fns, "inclusive": fns}}
        records = [rec("baseline", [["release", 3000.0], ["do_op", 100.0], ["tick", 50.0]]),
                   rec("baseline", [["release", 3100.0], ["do_op", 110.0]]),
                   rec("candidate", [["do_op", 90.0], ["insert", 40.0]]),
                   rec("candidate", [["do_op", 92.0], ["insert", 42.0]])]
        t = tables(records)["self"]
        self.assertEqual(t["differences"], [["do_op", 105.0, 91.0, -14.0]])
        self.assertEqual(t["baseline"][0], ("release", 3050.0))
        self.assertEqual(dict(t["baseline"]).get("tick"), 50.0)  # listed in half the baseline's rounds


class CauseTest(unittest.TestCase):
    def test_full(self):
        self.assertTrue(cause(["bluestore _do_alloc_write failed to allocate", "ceph_abort"], ["x"])
                        .startswith("OSD full (out of space), aborted"))

    def test_aborted(self):
        self.assertTrue(cause(["FAILED ceph_assert(p)"], ["last"]).startswith("OSD aborted; last log lines:\n  last"))

    def test_stopped(self):
        self.assertTrue(cause(["shutdown"], []).startswith("OSD stopped"))

    def test_abort_lines_name_the_error_the_assert_and_any_signal(self):
        # Both ends of RocksDB 7.9's insert-hint bug with DeleteRange, as OSD
        # logs had them: the assert after TryAgain, and a segfault in the write.
        aborted = ("rocksdb: submit_common error: Corruption: two consecutive TryAgain in WriteBatch handler; "
                   "this is not expected code = 2 Rocksdb transaction:\n"
                   "./src/os/bluestore/BlueStore.cc: 12345: FAILED ceph_assert(r == 0)\n"
                   "*** Caught signal (Aborted) **\n in thread 7f00 thread_name:bstore_kv_sync\n"
                   " -1> ... FAILED ceph_assert(r == 0)\n")
        self.assertEqual(abort_lines(aborted), [
            "rocksdb: submit_common error: Corruption: two consecutive TryAgain in WriteBatch handler; "
            "this is not expected", "FAILED ceph_assert(r == 0)", "Caught signal (Aborted)"])
        segfault = ("*** Caught signal (Segmentation fault) **\n in thread 7f00 thread_name:bstore_kv_sync\n"
                    " 7: (rocksdb::WriteBatchInternal::Iterate(rocksdb::WriteBatch const*, ...)+0x65a)\n")
        self.assertEqual(abort_lines(segfault), ["Caught signal (Segmentation fault)"])
        self.assertEqual(abort_lines("osd.0 up\nshutdown\n"), [])


class DaemonEndTest(unittest.TestCase):
    """A daemon that is gone is named with how it ended, not reported as a timeout."""

    def ended(self, tmp, name, status):
        cluster = Cluster(NodeSpec(state_dir=tmp, port=1, v1_port=2))
        (Path(tmp) / "log").mkdir(parents=True)
        proc = subprocess.Popen(["sh", "-c", f"exit {status}"])
        proc.wait(timeout=30)
        cluster.procs[name] = proc
        return cluster

    def test_exit_status_in_words(self):
        self.assertEqual(exit_status(-11), "signal SIGSEGV")
        self.assertEqual(exit_status(28), "status 28 (ENOSPC: No space left on device)")
        self.assertEqual(exit_status(1), "status 1")
        self.assertEqual(exit_status(0), "status 0")

    def test_a_mon_dead_at_start_is_named_with_its_status(self):
        # ceph-mon exits 28 below mon_data_avail_crit before its log is flushed;
        # all `mon stat` can say is that it timed out.
        with tempfile.TemporaryDirectory() as tmp:
            cluster = self.ended(tmp, "mon.a", 28)

            def timed_out(*args, **kwargs):
                raise NodeError("ceph ... mon stat failed (exit 1): timed out")
            cluster.ceph = timed_out
            with self.assertRaisesRegex(NodeError, r"^mon\.a exited with status 28 \(ENOSPC.*: mon\.a stopped"):
                cluster.wait_for_mon()

    def test_a_live_mon_that_does_not_answer_is_a_timeout(self):
        with tempfile.TemporaryDirectory() as tmp:
            cluster = Cluster(NodeSpec(state_dir=tmp, port=1, v1_port=2))
            cluster.procs["mon.a"] = subprocess.Popen(["sleep", "30"])
            try:
                def timed_out(*args, **kwargs):
                    raise NodeError("mon stat: timed out")
                cluster.ceph = timed_out
                with self.assertRaisesRegex(NodeError, "^mon stat: timed out$"):
                    cluster.wait_for_mon()
            finally:
                cluster.procs["mon.a"].kill()
                cluster.procs["mon.a"].wait(timeout=30)

    def test_an_osd_that_fails_on_its_way_down_fails_the_stop(self):
        with tempfile.TemporaryDirectory() as tmp:
            with self.assertRaisesRegex(NodeError, r"^osd\.0 exited with status 3 when stopped: OSD stopped"):
                self.ended(tmp, "osd.0", 3).stop_osd()
            self.assertIsNone(self.ended(tmp + "/clean", "osd.0", 0).stop_osd())


class ReportTest(unittest.TestCase):
    def test_markdown_names_verdict_rules_and_rounds(self):
        records = [{"round": 2 * i + 1 + k, "pair": i + 1, "side": side, "iops": iops, "osd_cpu_us_per_op": cpu,
                    "perf": "cycles not supported on this machine"}
                   for i in range(3) for k, (side, iops, cpu) in
                   enumerate((("baseline", 1000.0 + i, 300.0), ("candidate", 500.0 + i, 700.0)))]
        j = judge_paired(records, load_toml(RULES / "default.toml"))
        rep = {"verdict": "regression", "profile": "4k-write", "description": "4 KiB writes", "variant": "defaults",
               "rounds": 3, "sides": {"baseline": {"source": "debian"},
                                      "candidate": {"source": "debian", "conf": "bench/conf/debug-20.conf"}},
               "judgement": j, "records": records}
        md = markdown(rep)
        self.assertIn("# Performance gate: REGRESSION", md)
        self.assertIn("- candidate: `debian` + `bench/conf/debug-20.conf`", md)
        self.assertRegex(md, r"\| IOPS \| higher \| 5% \| 3 \| 0\.500\d \| \[[\d.]+, [\d.]+\] \| [\d.]+% \| regression \|")
        self.assertIn("| IOPS | 1,001 | 501 | 0.500 |", md)
        self.assertIn("| 6 | candidate | native | 502 |", md)  # rounds in order, alternating
        self.assertIn("| ceph-osd instructions/op | lower | 1% | 0 | - | - | - | not measured |", md)
        self.assertIn("variant `defaults`, layout `hdd (not recorded)`, 3 native round(s) per side in ABBA order", md)

    def test_markdown_counts_the_rounds_each_mode_ran(self):
        # --rounds (native, default 4) is saved even when only counted rounds ran
        records = [{"round": 2 * i + 1 + k, "pair": i + 1, "side": side, "mode": "callgrind",
                    "osd_instructions_per_op": ins}
                   for i in range(5) for k, (side, ins) in enumerate((("baseline", 215_000.0), ("candidate", 214_000.0)))]
        rep = {"verdict": "gain", "profile": "4k-write", "description": "4 KiB writes", "variant": "defaults",
               "rounds": 4, "sides": {"baseline": {"source": "a"}, "candidate": {"source": "b"}},
               "judgement": judge_paired(records, load_toml(RULES / "default.toml")), "records": records}
        self.assertIn("variant `defaults`, layout `hdd (not recorded)`, 5 instruction-counted round(s) per side in ABBA order",
                      markdown(rep))
        rep["records"] += [{**r, "mode": "native", "round": r["round"] + 10} for r in records[:4]]
        self.assertIn("5 instruction-counted and 2 native round(s) per side", markdown(rep))

    def test_the_roles_counted_figures_have_medians(self):
        # a three-OSD counted round's per-role figures come from callgrind rounds, as the sum's do
        records = [{"round": 2 * i + 1 + k, "pair": i + 1, "side": side, "mode": "callgrind",
                    "osd_instructions_per_op": 3 * ins, "primary_instructions_per_op": ins,
                    "replica_est_cycles_per_op": 2 * ins}
                   for i in range(3) for k, (side, ins) in enumerate((("baseline", 270_000.0), ("candidate", 200_000.0)))]
        self.assertEqual(values(records, "primary_instructions_per_op", "candidate"), [200_000.0] * 3)
        self.assertEqual(values(records, "replica_est_cycles_per_op", "baseline"), [540_000.0] * 3)
        rep = {"verdict": "gain", "profile": "4k-write", "description": "4 KiB writes", "variant": "three-osds",
               "rounds": 4, "sides": {"baseline": {"source": "a"}, "candidate": {"source": "b"}},
               "judgement": judge_paired(records, load_toml(RULES / "default.toml")), "records": records}
        self.assertIn("| primary's instructions/op | 270,000 | 200,000 | 0.741 |", markdown(rep))


if __name__ == "__main__":
    unittest.main()


class FioResultTest(unittest.TestCase):
    RESULT = {"fio version": "fio-3.39", "jobs": [{
        "job_runtime": 30000,
        "read": {"total_ios": 0, "runtime": 0, "iops": 0.0, "bw_bytes": 0, "lat_ns": {"mean": 0}, "clat_ns": {}},
        "write": {"total_ios": 90000, "runtime": 30000, "iops": 3000.0, "bw_bytes": 12288000,
                  "lat_ns": {"mean": 5300000.0},
                  "clat_ns": {"percentile": {"50.000000": 4500000, "99.000000": 21000000, "99.900000": 104000000}}}}]}

    def test_a_write_job_gives_iops_latency_percentiles_and_write_ops(self):
        rec = parse_fio(self.RESULT, "fio-rbd")
        self.assertEqual(rec["tool"], "fio-rbd")
        self.assertEqual((rec["ops"], rec["write_ops"], rec["read_ops"], rec["iops"]), (90000, 90000, 0, 3000.0))
        self.assertEqual((rec["lat_avg_s"], rec["lat_p50_s"], rec["lat_p99_s"], rec["lat_p999_s"]),
                         (0.0053, 0.0045, 0.021, 0.104))
        self.assertAlmostEqual(rec["bandwidth_mb_s"], 12.288)

    def test_a_result_without_its_job_is_named_not_a_traceback(self):
        with self.assertRaisesRegex(NodeError, "fio's result lacks 'write'"):
            parse_fio({"fio version": "fio-3.39", "jobs": [{"read": self.RESULT["jobs"][0]["read"]}]}, "fio-rbd")

    def test_progress_is_a_status_line_with_iops_above_zero(self):
        watch = FioWatch.__new__(FioWatch)
        self.assertTrue(watch.progressed("Jobs: 1 (f=1): [w(1)][40.0%][w=2400KiB/s][w=600 IOPS][eta 00m:18s]"))
        self.assertTrue(watch.progressed("Jobs: 1 (f=1): [r(1)][5.0%][r=40.1MiB/s][r=10.2k IOPS][eta 00m:38s]"))
        self.assertFalse(watch.progressed("Jobs: 1 (f=1): [w(1)][40.0%][w=0KiB/s][w=0 IOPS][eta 00m:18s]"))
        self.assertFalse(watch.progressed("Starting 1 process"))

    def test_the_job_keeps_its_region_inside_the_image_at_any_offset(self):
        bench = {"rw": "randwrite", "block_size": 4096, "iodepth": 16, "offset": 17408, "image_gib": 2}
        args = job_args(bench, 30)
        self.assertIn("--offset=17408", args)
        self.assertIn(f"--size={(2 << 30) - 17408 - 4096}", args)
        self.assertIn("--ioengine=rbd", args)
