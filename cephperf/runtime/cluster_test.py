"""Runs inside a throwaway overlay of the trixie runtime root (ci/cluster-test).

A rolling upgrade's cluster on one host: three OSDs (cluster.py's cluster,
with a mgr), each running the build its phase names, Debian's stock
ceph-osd or the candidate's; a size-3 replicated pool ("bench") and a k=2
m=1 erasure-coded one ("ec"). Each phase of the plan (spec.bench,
cmake/cluster-test.toml as cluster_plan.plan() completed it):
  1. the OSDs whose build changes are stopped (each must exit 0) and started
     with the other build;
  2. ceph_test_rados on both pools at once, with the phase's events during
     it (an OSD killed and started again, a pg_num increase, an OSD marked
     out with PG logs held short and in again); both must finish with no
     error;
  3. every PG active+clean, then every PG deep-scrubbed: no PG inconsistent,
     no scrub error.
Then: no [ERR]/[WRN]/[SEC] cluster-log line the plan's ignore list does not
explain, no assert, caught signal, encode failure or CRC error in any
daemon's log; every OSD stopped (exit 0) and ceph-bluestore-tool fsck --deep
clean on each store. The record names what failed; could_not_run marks a
run that never got to check the OSDs.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import subprocess
import sys
import time
from pathlib import Path

from .checks import installed_version
from .cluster import Cluster, OsdBuild
from .cluster_admin import (POLL_SECONDS, autoscale_off, ceph_json, deep_scrub_each, osd_up_from, restart_osd,
                            split_pool, wait_until)
from .cluster_plan import (CANDIDATE, STOCK, daemon_log_problems, forbidden_lines, pg_problems, pgmap_states,
                           recovery_messages, restarts, summary, unexercised, unexpected_cluster_log)
from .elf_build_id import build_id_text
from .model_workloads import TestRados
from .record import NodeError
from .shell import log, sh
from .spec import NodeSpec
from .steps import NotExercised, Steps, check_main, describe

REPLICATED, EC = "bench", "ec"
STOCK_OSD = "/usr/bin/ceph-osd"


def candidate_build(spec: NodeSpec, state: Path, result: dict) -> OsdBuild:
    """The candidate's ceph-osd: from its .deb, unpacked beside Debian's
    packages (which the stock OSD goes on running), a built binary, or
    Debian's own (a check of the test)."""
    env = dict(os.environ)
    if spec.debs:
        sh("dpkg-deb", "-x", spec.debs[0], state / "candidate", timeout=300)
        binary = str(state / "candidate" / "usr" / "bin" / "ceph-osd")
    elif spec.osd_binary:
        binary = spec.osd_binary
        if spec.ld_library_path:
            env["LD_LIBRARY_PATH"] = spec.ld_library_path
    else:
        binary = STOCK_OSD
    result["stock"] = installed_version("ceph-osd")
    result["candidate"] = sh(binary, "--version", env=env).stdout.strip()
    result["build_ids"] = {STOCK: build_id_text(STOCK_OSD), CANDIDATE: build_id_text(binary)}
    return OsdBuild(binary, env)


def make_ec_pool(cluster: Cluster, conf: dict) -> None:
    cluster.ceph("osd", "erasure-code-profile", "set", "cephperf-ec", *conf["ec_profile"])
    cluster.ceph("osd", "pool", "create", EC, str(conf["ec_pgs"]), str(conf["ec_pgs"]), "erasure", "cephperf-ec")
    cluster.ceph("osd", "pool", "application", "enable", EC, "rados")
    for pool in (REPLICATED, EC):
        autoscale_off(cluster, pool)
        cluster.ceph("osd", "pool", "set", pool, "min_size", str(conf["min_size"]))
    # a write blocks until the pool's PG is active: the wait is the write itself
    sh("rados", "-c", cluster.conf, "-p", EC, "put", "ceph-perf-probe", cluster.conf, timeout=300)
    sh("rados", "-c", cluster.conf, "-p", EC, "rm", "ceph-perf-probe", timeout=60)


def pg_states(cluster: Cluster) -> dict:
    """How many PGs are in each state now (ceph pg stat)."""
    stat = ceph_json(cluster, "pg", "stat")
    return {s["name"]: s["num"] for s in stat.get("pg_summary", stat).get("num_pg_by_state", [])}


def event(cluster: Cluster, plan: dict, ev: dict) -> dict:
    seconds, kind = plan["cluster"]["wait_seconds"], ev["do"]
    if kind == "kill":
        return restart_osd(cluster, seconds, ev["osd"], kill=True)
    if kind == "split":
        return split_pool(cluster, REPLICATED, {"pg_num": ev["pg_num"], "seconds": seconds})
    # With three OSDs and size 3, an OSD that is out but up stays in its PGs'
    # acting sets (choose_acting keeps a complete copy to fill the size; seen:
    # active+clean+remapped, no backfill): the OSD is stopped before it is
    # marked out, as a host that stays down is, and started before it is in.
    osd = ev["osd"]
    if kind == "out":
        for key, value in plan["short_pg_log"].items():
            cluster.ceph("config", "set", "osd", key, str(value))
        up_from = osd_up_from(cluster, osd)
        cluster.stop_osd(osd)
        wait_until(f"osd.{osd} down after its stop", seconds, lambda: osd_up_from(cluster, osd) == 0, cluster)
        cluster.ceph("osd", "out", str(osd))
        return {"up_from": up_from}
    cluster.start_osd(osd)
    up_again = wait_until(f"osd.{osd} up again", seconds, lambda: osd_up_from(cluster, osd), cluster)
    cluster.ceph("osd", "in", str(osd))
    return {"up_again_from": up_again}


def workload(cluster: Cluster, plan: dict, phase: dict, entry: dict) -> None:
    """Both ceph_test_rados runs, the phase's events as their ops reach each one's mark."""
    runs = {REPLICATED: TestRados(cluster, plan["test_rados"], REPLICATED, f"ceph_test_rados-{phase['name']}-rep"),
            EC: TestRados(cluster, plan["ec_test_rados"], EC, f"ceph_test_rados-{phase['name']}-ec")}
    events, ops = list(phase["events"]), plan["test_rados"]["ops"]
    deadline = time.monotonic() + plan["test_rados"]["seconds"]
    seen, entry["events"], last_poll = {}, [], 0.0
    try:
        while any(r.running() for r in runs.values()):
            cluster.check_alive()
            done = min(r.progress() if r.running() else ops for r in runs.values())
            if time.monotonic() - last_poll >= 2:
                seen.update(pg_states(cluster))
                last_poll = time.monotonic()
            if events and done >= events[0]["at"] * ops:
                ev = events.pop(0)
                t0 = time.monotonic()
                entry["events"].append({**ev, "ops_started_before": done, **event(cluster, plan, ev),
                                        "seconds": round(time.monotonic() - t0, 1)})
                log(f"{phase['name']}: {ev['do']} {ev.get('osd', ev.get('pg_num'))} after {done} ops")
            elif time.monotonic() > deadline:
                raise NodeError(f"ceph_test_rados did not finish within {plan['test_rados']['seconds']} s "
                                f"({', '.join(f'{p} {r.progress()}' for p, r in runs.items())} of {ops} ops started)")
            else:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    runs[REPLICATED if runs[REPLICATED].running() else EC].proc.wait(POLL_SECONDS)
    finally:
        for r in runs.values():
            r.stop()
    cluster.check_alive()
    entry["op_counts"] = {pool: r.check() for pool, r in runs.items()}
    entry["states_seen"] = sorted(seen)
    if events:
        raise NotExercised(f"ceph_test_rados finished before the {events[0]['do']} at {events[0]['at']}: "
                           "give it more ops (--ops)")


def all_pgs(cluster: Cluster) -> list[dict]:
    return ceph_json(cluster, "pg", "ls").get("pg_stats", [])


def clean_and_scrubbed(cluster: Cluster, plan: dict, entry: dict) -> None:
    """Every PG active+clean, then every PG deep-scrubbed (ceph pg deep-scrub
    each) with nothing found: no inconsistency, no scrub error."""
    checks = plan["checks"]
    t0 = time.monotonic()

    def clean():
        pgs = all_pgs(cluster)
        return pgs if pgs and not pg_problems(pgs) else None

    before = wait_until("every PG active+clean", checks["clean_seconds"], clean, cluster)
    for key in plan["short_pg_log"]:
        cluster.ceph("config", "rm", "osd", key)
    entry["clean_seconds"] = round(time.monotonic() - t0, 1)
    stamps = {pg["pgid"]: pg["last_deep_scrub_stamp"] for pg in before}
    t0 = time.monotonic()
    try:
        pgs, entry["scrub_requests_repeated"] = deep_scrub_each(
            cluster, lambda: all_pgs(cluster), stamps, checks["scrub_seconds"],
            f"a deep scrub of each of the {len(stamps)} PGs", checks["scrub_request_again_seconds"])
    except NodeError:
        raise NodeError(f"not every PG deep-scrubbed within {checks['scrub_seconds']} s: "
                        f"{summary(pg_problems(all_pgs(cluster), stamps))}") from None
    problems = pg_problems(pgs, stamps)
    if problems:
        raise NodeError(f"deep scrub: {summary(problems)}")
    entry.update(scrubbed_pgs=len(pgs), objects=sum(pg["stat_sum"].get("num_objects", 0) for pg in pgs),
                 scrub_seconds=round(time.monotonic() - t0, 1))


def cluster_log(cluster: Cluster) -> list[str]:
    return (cluster.state / "log" / "ceph.log").read_text(errors="replace").splitlines()


def run_phase(cluster: Cluster, plan: dict, phase: dict, builds: dict, steps: Steps, before: list) -> None:
    with steps.step(f"phase {phase['name']}") as entry:
        t0 = time.monotonic()
        entry["builds"] = {f"osd.{osd}": build for osd, build in enumerate(phase["builds"])}
        for osd in restarts(before, phase["builds"]):
            cluster.osd_builds[osd] = builds[phase["builds"][osd]]
            entry.setdefault("restarted", {})[f"osd.{osd}"] = restart_osd(cluster, plan["cluster"]["wait_seconds"], osd)
        # what each OSD runs, as the cluster starts it
        entry["binaries"] = {f"osd.{osd}": cluster.osd_build(osd).binary for osd in range(len(phase["builds"]))}
        log_from = len(cluster_log(cluster))
        workload(cluster, plan, phase, entry)
        entry["workload_seconds"] = round(time.monotonic() - t0, 1)
        clean_and_scrubbed(cluster, plan, entry)
        # the states polled, and those of the mgr's summaries until the PGs were clean
        entry["states_seen"] = sorted(set(entry["states_seen"]) | pgmap_states(cluster_log(cluster)[log_from:]))
        targets = sorted({e["osd"] for e in phase["events"] if e["do"] in ("kill", "in")})
        received = {osd: recovery_messages(ceph_json(cluster, "tell", f"osd.{osd}", "perf", "dump", "osd")["osd"])
                    for osd in targets}
        entry["recovery_messages"] = {f"osd.{osd}": got for osd, got in received.items()}
        missing = unexercised(phase, received)
        if missing:
            raise NotExercised(f"the events did not do what they must: {'; '.join(missing)}")
        counts = "; ".join(f"{pool}: {describe(c)}" for pool, c in entry["op_counts"].items())
        steps.line(f"phase {phase['name']} ({', '.join(f'{k} {v}' for k, v in entry['builds'].items())}): "
                   f"ceph_test_rados {counts}, 0 errors; events "
                   + ", ".join(f"{e['do']} {e.get('osd', e.get('pg_num'))} at op {e['ops_started_before']}"
                               for e in entry["events"])
                   + f"; recovery messages taken {entry['recovery_messages']}; PG states seen "
                   f"{', '.join(entry['states_seen'])}; {entry['scrubbed_pgs']} PGs "
                   f"({entry['objects']} objects) active+clean and deep-scrubbed in {entry['scrub_seconds']} s, "
                   "finding nothing")


def log_checks(cluster: Cluster, plan: dict, steps: Steps) -> None:
    with steps.step("cluster log and daemon logs") as entry:
        logs, lines = cluster.state / "log", cluster_log(cluster)
        forbidden = plan["checks"]["forbidden"]
        problems = [f"cluster log: {line}" for line in unexpected_cluster_log(lines, plan["ignore"])]
        problems += [f"cluster log: {line}" for line in forbidden_lines(lines, forbidden)]
        daemon_logs = sorted(logs.glob("osd.*.log")) + sorted(logs.glob("mon.*.log")) + sorted(logs.glob("mgr.*.log"))
        for f in daemon_logs + sorted(logs.glob("*.stdout")):
            problems += daemon_log_problems(f.name, f.read_text(errors="replace"), forbidden)
        entry.update(cluster_log_lines=len(lines), daemon_logs=len(daemon_logs), problems=problems)
        if problems:
            raise NodeError(summary(problems))
        steps.line(f"{len(lines)} cluster-log lines and {len(daemon_logs)} daemon logs: no unexpected "
                   "[ERR]/[WRN]/[SEC] line, no assert, no encode failure, no CRC error")


def fsck_stores(cluster: Cluster, plan: dict, steps: Steps) -> None:
    with steps.step("every OSD stopped, ceph-bluestore-tool fsck --deep on each store") as entry:
        for osd in range(plan["cluster"]["osds"]):
            cluster.stop_osd(osd)
        for osd in range(plan["cluster"]["osds"]):
            store = cluster.state / "osd" / f"ceph-{osd}"
            r = sh("ceph-bluestore-tool", "fsck", "--deep", "true", "--path", store,
                   timeout=plan["checks"]["fsck_seconds"], check=False)
            output = (r.stdout + r.stderr).strip()
            (cluster.state / "log" / f"fsck.{osd}.log").write_text(output + "\n")
            entry[f"osd.{osd}"] = r.returncode
            if r.returncode != 0 or "fsck success" not in output:
                raise NodeError(f"fsck of osd.{osd} (exit {r.returncode}): {' | '.join(output.splitlines()[-10:])}")
        steps.line(f"all {plan['cluster']['osds']} OSDs stopped (exit 0); fsck --deep of each store: fsck success")


def cluster_test(spec: NodeSpec, result: dict) -> None:
    plan, state = spec.bench, Path(spec.state_dir)
    builds = {STOCK: OsdBuild(STOCK_OSD, dict(os.environ)), CANDIDATE: candidate_build(spec, state, result)}
    conf = {section: dict(values) for section, values in plan.get("conf", {}).items()}
    conf.setdefault("mon", {})["mon_cluster_log_file"] = str(state / "cluster" / "log" / "ceph.log")
    c = plan["cluster"]
    cluster = Cluster(dataclasses.replace(spec, state_dir=str(state / "cluster"), mgr=True, osds=c["osds"],
                                          device_gib=c["device_gib"], pool_pgs=c["pool_pgs"], conf=conf))
    current = plan["phase"][0]["builds"]
    cluster.osd_builds = {osd: builds[build] for osd, build in enumerate(current)}
    steps = Steps(result, cluster)
    try:
        with steps.step("cluster up: 3 OSDs, a replicated and an erasure-coded pool") as entry:
            t0 = time.monotonic()
            cluster.up()
            make_ec_pool(cluster, c)
            entry["seconds_up"] = round(time.monotonic() - t0, 1)
        result["could_not_run"] = False
        try:
            for phase in plan["phase"]:
                run_phase(cluster, plan, phase, builds, steps, current)
                current = phase["builds"]
        except NodeError:
            with contextlib.suppress(NodeError):  # what the logs hold goes on the record too
                log_checks(cluster, plan, steps)
            raise
        log_checks(cluster, plan, steps)
        fsck_stores(cluster, plan, steps)
    finally:
        cluster.down()


def main() -> int:
    return check_main(cluster_test)


if __name__ == "__main__":
    sys.exit(main())
