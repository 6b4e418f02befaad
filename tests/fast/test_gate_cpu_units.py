"""The gate's CPU mode on fixtures: the cpu variants' parsing and round
spec, the CPU placement plan and its check, the wait for a settled osdmap,
its rules' power to fail a 5% regression, the variant's gate defaults, and
every other profile and variant unchanged."""
import argparse
import json
import math
import random
import unittest
import unittest.mock
from pathlib import Path

from cephperf import paths
from cephperf.bench.paired import judge_paired, paired_interval
from cephperf.bench.report import markdown, placement_text
from cephperf.bench.rounds import load_profile, resolve_variant, round_spec
from cephperf.common import StageError, load_toml
from cephperf.runtime import core_probe, measure
from cephperf.runtime.cluster import Cluster
from cephperf.runtime.osd_stats import cpu_list, parse_cpu_list, placement_plan, placement_problem
from cephperf.runtime.record import NodeError
from cephperf.runtime.spec import NodeSpec
from cephperf.stages.gate import DEFAULT_PAIRS, DEFAULT_RULES, apply_variant_defaults, plan

CPU_RULES = load_toml(paths.RULES / "cpu.toml")
PINNING = {"osd": [1], "others": [0]}


def gate_args(**given) -> argparse.Namespace:
    return argparse.Namespace(**{"mode": None, "rounds": None, "counted_rounds": DEFAULT_PAIRS, "rules": None,
                                 "variant": "cpu", **given})


class CoreProbeTest(unittest.TestCase):
    def test_a_slower_core_cancels_out_of_the_cpu_per_op_in_probe_units(self):
        quick = {"loop_ns": 2_000_000.0, "copy_ns": 1_000_000.0}
        slow = {k: v * 1.3 for k, v in quick.items()}
        # the same work per op, timed on a core 30% slower: 30% more CPU per op
        same = core_probe.per_op_in_units(70.0, quick, quick, "loop_ns")
        self.assertAlmostEqual(core_probe.per_op_in_units(91.0, slow, slow, "loop_ns"), same, places=3)
        self.assertAlmostEqual(same, 70.0 * 1000 / 2_000_000, places=4)
        # the speed is the mean of the probes before and after the window
        self.assertAlmostEqual(core_probe.per_op_in_units(80.0, quick, slow, "copy_ns"), 80_000 / 1_150_000, places=4)
        self.assertIsNone(core_probe.per_op_in_units(None, quick, quick, "loop_ns"))

    def test_the_probe_runs_on_the_cpus_asked_for_and_moves_back(self):
        import os
        home = os.sched_getaffinity(0)
        target = {max(home)}
        seen = []
        real_timed = core_probe.timed

        def timed_where(unit, *args):
            seen.append(os.sched_getaffinity(0))
            return real_timed(unit, *args)
        osd_cpu = iter([10.0, 10.0025])
        with unittest.mock.patch.object(core_probe, "timed", timed_where):
            got = core_probe.probe(target, lambda: next(osd_cpu))
        self.assertEqual(seen, [target, target])
        self.assertEqual(os.sched_getaffinity(0), home)
        self.assertGreater(got["loop_ns"], 0)
        self.assertGreater(got["copy_ns"], 0)
        self.assertEqual(got["osd_cpu_ms"], 2.5)  # the OSD's CPU over the probe

    def test_the_probe_moves_back_when_it_fails(self):
        import os
        home = os.sched_getaffinity(0)

        def failing(unit, *args):
            raise RuntimeError("interrupted")
        with unittest.mock.patch.object(core_probe, "timed", failing), self.assertRaises(RuntimeError):
            core_probe.probe({max(home)}, lambda: 0.0)
        self.assertEqual(os.sched_getaffinity(0), home)


class PlacementPlanTest(unittest.TestCase):
    def test_the_osd_on_one_cpu_the_rest_on_the_other(self):
        self.assertEqual(placement_plan(PINNING, {0, 1}), {"osd": {1}, "others": {0}})

    def test_fewer_than_two_cpus_cannot_be_pinned(self):
        with self.assertRaisesRegex(ValueError, r"may use only 0 \(1 CPU\(s\)\): pinning needs at least 2"):
            placement_plan(PINNING, {0})

    def test_roles_must_be_named_apart_and_known(self):
        with self.assertRaisesRegex(ValueError, "share CPU"):
            placement_plan({"osd": [0, 1], "others": [0]}, {0, 1})
        with self.assertRaisesRegex(ValueError, r"cpu_pinning.others = None"):
            placement_plan({"osd": [1]}, {0, 1})
        with self.assertRaisesRegex(ValueError, "roles are osd, others"):
            placement_plan({**PINNING, "client": [0]}, {0, 1})

    def test_cpu_lists_as_the_kernel_writes_them(self):
        self.assertEqual(cpu_list({0, 1, 2, 5, 7, 8}), "0-2,5,7-8")
        self.assertEqual(parse_cpu_list("0-2,5,7-8\n"), {0, 1, 2, 5, 7, 8})
        self.assertEqual(parse_cpu_list("1"), {1})

    def test_a_pinning_not_in_force_is_named(self):
        plan = placement_plan(PINNING, {0, 1})
        self.assertIsNone(placement_problem(plan, {"osd.0": {1}, "mon.a": {0}, "client": {0}}))
        problem = placement_problem(plan, {"osd.0": {0, 1}, "mon.a": {0}, "client": {1}})
        self.assertIn("osd.0 may run on 0-1", problem)
        self.assertIn("client may run on 1", problem)

    def test_the_cluster_refuses_a_pinning_it_cannot_apply(self):
        cluster = Cluster(NodeSpec(state_dir="/nonexistent", cpu_pinning={"osd": [4096], "others": [0]}))
        with self.assertRaisesRegex(NodeError, "CPU pinning asked for but not applied: .*4096"):
            cluster.pin()

    def test_the_osd_starts_under_taskset_only_when_pinned(self):
        cluster = Cluster(NodeSpec(state_dir="/s"))
        self.assertEqual(cluster.osd_argv(0)[0], "/usr/bin/ceph-osd")
        cluster.placement = {"osd": {1}, "others": {0}}
        self.assertEqual(cluster.osd_argv(0)[:4], ["taskset", "--cpu-list", "1", "/usr/bin/ceph-osd"])


class SettledOsdmapTest(unittest.TestCase):
    """Upstream's IO-mock options, set at run time, lose the osdmaps the OSD
    gets after them: no client starts before the map is settled."""

    def cluster(self, dumps: list[dict], newest: list[int]):
        class Done:
            def __init__(self, text):
                self.stdout = text

        class FakeCluster:
            def check_alive(self):
                pass

            def ceph(self, *args, **kw):
                return Done(json.dumps(dumps.pop(0)))

        statuses = iter(newest)
        patcher = unittest.mock.patch.object(measure, "newest_map", lambda c: next(statuses))
        patcher.start()
        self.addCleanup(patcher.stop)
        return FakeCluster()

    def test_waits_for_the_pools_creating_flag_and_the_osds_epoch(self):
        dumps = [{"epoch": 7, "pools": [{"flags_names": "hashpspool,creating"}]},
                 {"epoch": 8, "pools": [{"flags_names": "hashpspool"}]},
                 {"epoch": 8, "pools": [{"flags_names": "hashpspool"}]}]
        measure.settled_osdmap(self.cluster(dumps, [7, 7, 8]))
        self.assertEqual(dumps, [])  # it asked until osd.0 had epoch 8

    def test_a_map_that_never_settles_fails_the_round(self):
        dumps = [{"epoch": 8, "pools": [{"flags_names": "hashpspool,creating"}]}] * 10_000
        with self.assertRaisesRegex(NodeError, "osdmap did not settle within 0 s"):
            measure.settled_osdmap(self.cluster(list(dumps), [8] * 10_000), seconds=0)


class CpuVariantTest(unittest.TestCase):
    def test_the_variant_mocks_io_pins_warms_up_and_lengthens_the_window(self):
        prof = load_profile("4k-write", "cpu")
        self.assertTrue(prof["io_mock"])
        spec = round_spec(Path("/s"), prof, {}, {}, None, 20, False)
        self.assertEqual((spec.cpu_pinning, spec.warmup_seconds, spec.bench["seconds"], spec.bench["threads"]),
                         (PINNING, 10, 20, 16))
        self.assertTrue(spec.io_mock)
        self.assertTrue(spec.poll_idle)
        # a shorter --seconds shortens the warm-up too (a smoke run)
        spec = round_spec(Path("/s"), prof, {}, {}, 5, 20, False)
        self.assertEqual((spec.warmup_seconds, spec.bench["seconds"]), (5, 5))
        # counted rounds keep their own [counted] window and warm-up
        spec = round_spec(Path("/s"), prof, {}, {}, None, 20, False, "callgrind")
        self.assertEqual((spec.warmup_seconds, spec.warmup_ops, spec.window_ops), (0, 500, 2000))
        self.assertFalse(spec.poll_idle)  # callgrind runs the OSD's threads one at a time

    def test_the_upstream_io_mock_variant_differs_only_in_its_mechanism(self):
        cpu, upstream = load_profile("4k-write", "cpu"), load_profile("4k-write", "cpu-upstream-io-mock")
        self.assertEqual({k for k in cpu if cpu[k] != upstream[k]}, {"variant", "io_mock", "runtime_conf"})
        self.assertEqual(upstream["runtime_conf"], {"osd": {"bluestore_debug_omit_block_device_write": True,
                                                            "bluestore_debug_omit_kv_commit": True}})
        self.assertFalse(upstream["io_mock"])

    def test_depth_one_profile(self):
        spec = round_spec(Path("/s"), load_profile("4k-write-d1", "cpu"), {}, {}, None, 20, False)
        self.assertEqual((spec.bench["threads"], spec.cpu_pinning), (1, PINNING))

    def test_the_variant_takes_rados_write_profiles_only(self):
        with self.assertRaisesRegex(StageError, "only writes"):
            load_profile("4k-randread", "cpu")
        with self.assertRaisesRegex(StageError, "warms up with rados bench .* runs fio-rbd"):
            load_profile("rbd-4k-randwrite", "cpu")

    def test_every_other_variant_and_profile_runs_as_before(self):
        every = load_toml(paths.PROFILES / "variants.toml")
        variants = [name for name in every if "cpu_pinning" not in resolve_variant(every, name)]
        self.assertIn("defaults", variants)
        for path in paths.PROFILES.glob("*.toml"):
            if path.stem == "variants":
                continue
            for variant in variants:
                try:
                    prof = load_profile(path.stem, variant)
                except StageError:
                    continue  # a combination the variant refuses (reads with io-mock)
                if prof["bench"]["tool"] == "rados-latency":
                    continue  # the latency profiles are newer than this mode and name their own rules
                spec = round_spec(Path("/s"), prof, {}, {}, None, 20, False)
                self.assertEqual((spec.cpu_pinning, spec.warmup_seconds, spec.poll_idle), ({}, 0, False),
                                 (path.stem, variant))
                self.assertEqual(spec.bench["seconds"], load_toml(path)["bench"]["seconds"], (path.stem, variant))
                args = gate_args(variant=variant)
                # a variant that names its rules file (three-osds: each role's counted rules too) is judged by it
                own = paths.RULES / f"{prof['rules']}.toml" if prof["rules"] else DEFAULT_RULES
                self.assertEqual(apply_variant_defaults(args, prof), own)
                self.assertEqual((args.rounds, args.mode),
                                 (DEFAULT_PAIRS, "native" if prof["native_only"] else "both"))

    def test_the_variants_gate_defaults_and_the_command_line_over_them(self):
        prof = load_profile("4k-write", "cpu")
        args = gate_args()
        self.assertEqual(apply_variant_defaults(args, prof), paths.RULES / "cpu.toml")
        self.assertEqual((args.mode, args.rounds), ("native", 16))
        self.assertEqual([side for _, _, side in plan(args)][:4], ["baseline", "candidate", "candidate", "baseline"])
        args = gate_args(mode="both", rounds=6, rules=Path("x.toml"))
        self.assertEqual(apply_variant_defaults(args, prof), Path("x.toml"))
        self.assertEqual((args.mode, args.rounds), ("both", 6))


def paired_rounds(pairs: int, factor: float, sd: float, rng: random.Random) -> list[dict]:
    """Rounds of the CPU mode: a shared level per pair, each round's own log noise `sd`."""
    recs = []
    for pair in range(1, pairs + 1):
        level = 60 * rng.gauss(1, 0.05)  # the pair's load: cancels in its ratio
        for side in ("baseline", "candidate") if pair % 2 else ("candidate", "baseline"):
            cpu = level * math.exp(rng.gauss(0, sd)) * (factor if side == "candidate" else 1.0)
            recs.append({"round": len(recs) + 1, "pair": pair, "side": side, "osd_cpu_us_per_op": cpu,
                         "iops": 1e6 / cpu})
    return recs


class CpuRulesTest(unittest.TestCase):
    def rule(self, judged: dict) -> dict:
        return next(r for r in judged["rules"] if r["metric"] == "osd_cpu_us_per_op")

    def test_eight_pairs_within_the_spread_the_rules_allow_detect_5_percent(self):
        cpu_rule = next(r for r in CPU_RULES["rule"] if r["metric"] == "osd_cpu_us_per_op")
        # eight pairs' log ratios with a sample SD of 4.2%: the smallest
        # detectable regression, tolerance included, is then at most 5%
        d = [0.042 * math.sqrt(7 / 8) * x for x in (1, -1, 1, -1, 1, -1, 1, -1)]
        est = paired_interval(d, 0.95, 0.80, cpu_rule["tolerance"], "lower")
        self.assertAlmostEqual(est["pair_sd"], 0.042, places=6)
        self.assertLessEqual(est["mde"], 0.05)

    def test_a_5_percent_regression_fails_and_a_a_passes(self):
        # rounds spreading 2% each (pairs' ratios about 2.8%): the spread this mode is built for
        rng = random.Random(5)
        caught = sum(self.rule(judge_paired(paired_rounds(8, 1.05, 0.02, rng), CPU_RULES))["verdict"] == "regression"
                     for _ in range(200))
        self.assertGreater(caught, 0.8 * 200)
        false = sum(not judge_paired(paired_rounds(8, 1.0, 0.02, rng), CPU_RULES)["ok"] for _ in range(200))
        self.assertLess(false, 0.05 * 200)


class PlacementReportTest(unittest.TestCase):
    PLACED = {"pinned": True, "allowed": {"osd.0": "1", "mon.a": "0", "client": "0"},
              "osd_threads_last_ran_on": {"osd.0": "1"}}

    def test_each_sides_placement_is_shown(self):
        records = paired_rounds(3, 1.0, 0.01, random.Random(1))
        for r in records:
            r.update(mode="native", cpu_placement=self.PLACED)
        rep = {"verdict": "within tolerance", "profile": "4k-write", "description": "4 KiB writes", "variant": "cpu",
               "rounds": 3, "sides": {"baseline": {"source": "debian"}, "candidate": {"source": "debian"}},
               "judgement": judge_paired(records, CPU_RULES), "records": records,
               "environment": {"workload": {"warmup_seconds": 15}}}
        md = markdown(rep)
        self.assertIn("a 15 s warm-up before each window", md)
        self.assertIn("CPU placement, candidate: osd.0 on CPU 1 (its threads last ran on 1); mon.a on 0, client on 0",
                      md)
        self.assertEqual(placement_text(self.PLACED).split(";")[0], "osd.0 on CPU 1 (its threads last ran on 1)")


if __name__ == "__main__":
    unittest.main()
