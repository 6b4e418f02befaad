"""Runs inside a throwaway overlay of the trixie runtime root (ci/rados-model-test).

Upstream's model-checked RADOS workload on the OSD under test, with what
teuthology's thrashers do meanwhile, on one OSD with a mgr (since Nautilus
the mgr carries out pg_num changes):
  1. ceph_test_rados (Debian's ceph-test): reads, writes, appends, deletes,
     xattrs, self-managed snapshots, rollbacks and copy-from, every read
     checked against its model of each object. During it the pool's pg_num
     is raised (a PG split: done when the pool has the new count, every PG
     of it is active and the OSD's own PG count grew as much), the OSD
     is stopped and started again, and every PG of the pool is deep-scrubbed
     while writes go on (each scrub must complete and find nothing); it must
     finish with no error;
  2. omap with DeleteRange forced (rocksdb_delete_range_threshold 0): random
     compound sets, key and range removals and clears on dozens of objects,
     each object's whole omap compared with a model after every round and
     once more after an OSD restart;
  3. the OSD stopped, ceph-bluestore-tool fsck --deep on its store.
The two clients are in model_workloads.py. What runs is spec.bench,
bench/rados-model.toml as the host read it. The record names a failed step,
and an OSD that died with the cause its log gives; could_not_run marks a run
that never got to check the OSD.
"""
from __future__ import annotations

import contextlib
import dataclasses
import random
import subprocess
import sys
import time
from pathlib import Path

from .checks import install_candidate, installed_version
from .cluster import Cluster
from .cluster_admin import (POLL_SECONDS, autoscale_off, deep_scrub_pool, make_pool, restart_osd, split_pool,
                            tell_osd_option)
from .model_workloads import OmapModel, TestRados, pool_ioctx
from .record import NodeError
from .shell import sh
from .spec import NodeSpec
from .steps import NotExercised, Steps, check_main, describe

POOL = "bench"  # the cluster's own pool, where ceph_test_rados runs
OMAP_POOL = "omap"


def test_rados_step(cluster: Cluster, workload: dict, steps: Steps) -> None:
    conf = workload["test_rados"]
    with steps.step("ceph_test_rados with a PG split, an OSD restart and a deep scrub") as entry:
        events = [("split", workload["split"]["at"], lambda: split_pool(cluster, POOL, workload["split"])),
                  ("restart", workload["restart"]["at"], lambda: restart_osd(cluster, workload["restart"]["seconds"])),
                  ("deep_scrub", workload["deep_scrub"]["at"],
                   lambda: deep_scrub_pool(cluster, POOL, workload["deep_scrub"]["seconds"]))]
        run = TestRados(cluster, conf, POOL)
        deadline = time.monotonic() + conf["seconds"]
        try:
            while run.running():
                cluster.check_alive()
                if events and run.progress() >= events[0][1] * run.ops:
                    name, _, do = events.pop(0)
                    entry[name] = {"ops_started_before": run.started, **do(), "ops_started_after": run.progress()}
                    if not run.running():
                        break
                elif time.monotonic() > deadline:
                    raise NodeError(f"ceph_test_rados did not finish within {conf['seconds']} s "
                                    f"({run.progress()} of {run.ops} ops started)")
                else:
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        run.proc.wait(POLL_SECONDS)
        finally:
            run.stop()
        cluster.check_alive()
        entry.update(exit=run.proc.returncode, ops_started=run.progress())
        entry["op_counts"] = run.check()
        if events:
            raise NotExercised(f"ceph_test_rados finished ({run.started} ops) before the {events[0][0]}: "
                               "give it more ops (--ops)")
        split, restart, scrub = entry["split"], entry["restart"], entry["deep_scrub"]
        steps.line(f"ceph_test_rados: {run.started} ops ({describe(entry['op_counts'])}), 0 errors; during it "
                   f"pool {POOL} split from {split['pg_num_from']} to {split['pg_num_to']} PGs (the OSD's own "
                   f"PGs {split['osd_pgs_from']} -> {split['osd_pgs_to']}) after {split['ops_started_before']} ops, "
                   f"osd.0 restarted after {restart['ops_started_before']} ops (up again in epoch "
                   f"{restart['up_again_from']}), and all {scrub['pgs']} PGs ({scrub['objects']} objects) "
                   f"deep-scrubbed in {scrub['seconds']} s from op {scrub['ops_started_before']} to op "
                   f"{scrub['ops_started_after']}, finding nothing")


def omap_step(cluster: Cluster, workload: dict, steps: Steps, rng: random.Random) -> None:
    conf = workload["omap"]
    with steps.step("omap model with DeleteRange forced") as entry:
        make_pool(cluster, OMAP_POOL, conf["pool_pgs"])
        tell_osd_option(cluster, "rocksdb_delete_range_threshold", "0")
        with pool_ioctx(cluster, OMAP_POOL, conf["op_timeout"]) as ioctx:
            model = OmapModel(cluster, ioctx, conf, rng)
            model.create()
            for r in range(conf["rounds"]):
                model.run(conf["ops"] * (r + 1) // conf["rounds"] - model.ops)
                model.verify(f"read-back {r + 1} of {conf['rounds']}")
            entry["restart"] = restart_osd(cluster, workload["restart"]["seconds"])
            keys = model.verify("read-back after an OSD restart")
        entry.update(ops=model.ops, subops=dict(model.subops), objects=len(model.omap), keys_at_end=keys,
                     keys_compared=model.keys_checked)
        steps.line(f"omap model, DeleteRange forced: {model.ops} ops ({describe(model.subops)}) on "
                   f"{len(model.omap)} objects; {conf['rounds']} read-backs and one after an OSD restart "
                   f"compared {model.keys_checked} keys with the model ({keys} at the end): all as modelled")


def fsck_step(cluster: Cluster, seconds: int, steps: Steps) -> None:
    with steps.step("ceph-bluestore-tool fsck --deep") as entry:
        cluster.stop_osd()
        store = cluster.state / "osd" / "ceph-0"
        r = sh("ceph-bluestore-tool", "fsck", "--deep", "true", "--path", store, timeout=seconds, check=False,
               env=cluster.osd_env)
        output = (r.stdout + r.stderr).strip()
        (cluster.state / "log" / "fsck.log").write_text(output + "\n")
        entry["exit"] = r.returncode
        if r.returncode != 0 or "fsck success" not in output:
            raise NodeError(f"fsck of {store} (exit {r.returncode}): {' | '.join(output.splitlines()[-10:])}")
        steps.line(f"ceph-bluestore-tool fsck --deep of the stopped OSD's store: {output.splitlines()[-1]}")


def rados_model(spec: NodeSpec, result: dict) -> None:
    workload = spec.bench
    if spec.debs:
        install_candidate(spec, result, "bluestore_onode_cache_absent", "bluestore-onode-lookup-once.patch")
    else:
        result["stock"] = installed_version("ceph-osd")
    result["ceph-test"] = installed_version("ceph-test")
    result["seed"] = seed = workload.get("seed", random.randrange(1 << 32))
    conf = {"global": {"osd_pool_default_pg_autoscale_mode": "off"}}
    for section, values in spec.conf.items():
        conf.setdefault(section, {}).update(values)
    cluster = Cluster(dataclasses.replace(spec, state_dir=str(Path(spec.state_dir) / "cluster"), mgr=True,
                                          port=spec.spare_ports[0], v1_port=spec.spare_ports[1], conf=conf))
    steps = Steps(result, cluster)
    try:
        cluster.up()
        autoscale_off(cluster, POOL)
        result["could_not_run"] = False
        test_rados_step(cluster, workload, steps)
        omap_step(cluster, workload, steps, random.Random(seed))
        fsck_step(cluster, workload["fsck"]["seconds"], steps)
    finally:
        cluster.down()


def main() -> int:
    return check_main(rados_model)


if __name__ == "__main__":
    sys.exit(main())
