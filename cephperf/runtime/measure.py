"""Measurement inside the runtime root: the rados bench driver, a native
window (what the OSD used over a benchmark) and an instruction-counted one.

The benchmark never hangs: its client is watched line by line; a dead OSD,
or no completed op for `stall_seconds`, stops it and names the cause (OSD
aborted, OSD full) with the OSD log's last lines.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from . import core_probe, diagnostics
from .osd_stats import (PlacementError, allowed_cpus, context_switches, cpu_seconds, peak_rss_kib, perf_counts, queue_report,
                        round_placement, switches_per_op, thread_cpu, thread_report)
from .poll_idle import loops_cpu
from .cluster import Cluster
from .cluster_admin import admin, newest_map
from .counted import counted
from .shell import log, sh
from .record import NodeError


def perf_dump(cluster: Cluster) -> dict:
    return json.loads(admin(cluster, "perf", "dump"))


class BenchWatch:
    """rados bench's per-second lines, read on a thread: the last completed-op count and when it grew."""

    def __init__(self, proc: subprocess.Popen, echo: bool):
        self.finished, self.progress_at, self.lines = -1, time.monotonic(), []
        self.thread = threading.Thread(target=self.read, args=(proc, echo), daemon=True)
        self.thread.start()

    def read(self, proc, echo):
        for line in proc.stdout:
            self.lines.append(line.rstrip("\n"))
            if self.progressed(line):
                self.progress_at = time.monotonic()
            if echo:
                print(line, end="", file=sys.stderr, flush=True)

    # a per-second line's count of completed ops: rados bench's fourth column
    COMPLETED = re.compile(r"\s*\d+\s+\d+\s+\d+\s+(\d+)\s")

    def progressed(self, line: str) -> bool:
        m = self.COMPLETED.match(line)
        if m and int(m.group(1)) > self.finished:
            self.finished = int(m.group(1))
            return True
        return False


def problem_with(cluster: Cluster, watch: BenchWatch, deadline: float, seconds: int) -> str | None:
    stall = cluster.spec.stall_seconds
    for name in cluster.osd_names():
        osd = cluster.procs[name]
        if osd.poll() is not None:
            return f"{name} died during the benchmark (status {osd.returncode}): {cluster.cause(name)}"
    if time.monotonic() - watch.progress_at > stall:
        full = "OSD full (the osdmap carries the full flag); " if cluster.osdmap_full() else ""
        return f"no progress for {stall} s: {full}{cluster.cause()}"
    if time.monotonic() > deadline:
        return f"it ran past its {seconds} s plus 120 s margin"
    return None


def rados_bench(cluster: Cluster, seconds, mode, extra, perf_out=None, pid: int | None = None) -> dict:
    """Run rados bench, watching its per-second lines; returns its summary.
    pid 1 or 2: rados runs with that PID in a PID namespace of its own. Its
    object names carry its PID ("benchmark_data_HOST_PID_objectN"), and the
    names decide where each key lands in RocksDB's memtable: with a fixed PID
    every round writes the same keys."""
    cmd = [*cluster.rados, "bench", str(seconds), mode, *map(str, extra)]
    if pid in (1, 2):
        # PID 1 is the namespace's first process; for PID 2, timeout(1) is PID 1
        # and runs rados as its child (it also bounds it)
        cmd = ["unshare", "--pid", "--fork", "--kill-child", "--",
               *(["timeout", str(int(seconds) + 120)] if pid == 2 else []), *cmd]
    if perf_out:
        cmd = ["perf", "stat", "-e", "cycles,instructions", "-x", ",", "-o", str(perf_out),
               "-p", str(cluster.osd_pid()), "--", *cmd]
    return parse_summary(watched(cluster, cmd, seconds, BenchWatch, "rados bench"))


def watched(cluster: Cluster, cmd: list, seconds, watch_class, name: str, env: dict | None = None) -> list[str]:
    """Run a benchmark client, its output read by watch_class; its output
    lines. Stopped, with the cause named, when an OSD dies, when no op
    completes for stall_seconds, or 120 s past its time."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            env=env)
    # read, not assumed: the client (and what it runs under) inherits this process's CPUs
    cluster.client_cpus = allowed_cpus(proc.pid)
    watch = watch_class(proc, cluster.spec.progress)
    deadline = time.monotonic() + seconds + 120
    while proc.poll() is None:
        watch.thread.join(timeout=1.0)  # wakes on output end or once a second to check the daemons
        problem = problem_with(cluster, watch, deadline, seconds)
        if problem:
            os.killpg(proc.pid, signal.SIGKILL)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass  # blocked in a FUSE request: freed when teardown ends the FUSE daemon
            raise NodeError(f"{name}: {problem}")
    watch.thread.join(timeout=10)
    if proc.returncode != 0:
        raise NodeError(f"{name} failed (exit {proc.returncode}): " + " | ".join(watch.lines[-8:]))
    return watch.lines


def run_profile(cluster: Cluster) -> dict:
    """The profile's benchmark, with the OSD's CPU, RSS, and (asked for) threads and counters over its window."""
    b = cluster.spec.bench
    extra = ["-t", b["threads"], "-b", b["block_size"], "--no-cleanup", "--run-name", "ceph-perf"]
    if b.get("max_objects"):
        extra += ["--max-objects", b["max_objects"]]
    if cluster.spec.runtime_conf.get("osd") and "osd.0" in cluster.procs:
        settled_osdmap(cluster)  # before any client: options set at run time can lose the OSD's osdmaps
    mode = "write"
    if b["mode"] == "rand":
        log(f"write phase: {b['prefill_seconds']} s")
        rados_bench(cluster, b["prefill_seconds"], "write", extra)
        mode, extra = "rand", ["-t", b["threads"], "--run-name", "ceph-perf"]
    if "osd.0" not in cluster.procs:  # an existing cluster: no /proc of its OSD here
        def ceph(*args):
            return cluster.ceph(*args).stdout
        before = diagnostics.external_snapshot(ceph)
        rec = rados_bench(cluster, b["seconds"], mode, extra)
        rec.update(bench_mode=mode, diagnostics=diagnostics.collect_external(before, diagnostics.external_snapshot(ceph)))
        sh(*cluster.rados, "cleanup", "--run-name", "ceph-perf", timeout=1800)
        return rec
    if cluster.spec.instrument == "callgrind":
        return counted_window(cluster, b["seconds"], mode, extra)
    if cluster.spec.warmup_seconds:
        # outside the window: the OSD's first seconds (new PGs' logs, caches
        # filling, the allocator's first extents) are not its steady work per op
        log(f"warm-up: {cluster.spec.warmup_seconds} s")
        rados_bench(cluster, cluster.spec.warmup_seconds, mode, extra)
    return measured(cluster, lambda: rados_bench(cluster, b["seconds"], mode, extra, perf_output(cluster)), mode)


def settled_osdmap(cluster: Cluster, seconds: int = 60) -> None:
    """Return once the mon makes no more epochs for the new pool (none is
    still `creating`) and osd.0 has the newest, before any client starts.
    Options set at run time that skip the OSD's writes (upstream's IO mock)
    skip its own osdmap writes too: the epoch that clears the pool's flag,
    about a second after it is active, read back corrupt when the OSD shared
    it with a client started a moment earlier, and the OSD aborted
    (build_incremental_map_msg; once in 11 rounds with the OSD pinned, 2026-11-26).
    A client that starts once the map is settled has the newest epoch."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        cluster.check_alive()
        # no sleep: each `ceph osd dump` round trip (a client start-up) paces the poll
        dump = json.loads(cluster.ceph("osd", "dump", "--format", "json").stdout)
        newest = newest_map(cluster)
        if newest >= dump["epoch"] and not any("creating" in p.get("flags_names", "") for p in dump["pools"]):
            return
    raise NodeError(f"the osdmap did not settle within {seconds} s (a pool still being created, or osd.0 "
                    "behind the mon)")


def perf_output(cluster: Cluster) -> Path | None:
    return cluster.state / "perf.csv" if cluster.spec.perf else None


def measured(cluster: Cluster, bench, mode: str) -> dict:
    """bench() (a client run against the cluster; its record) with the OSDs'
    CPU, RSS, counters, the busiest threads and the diagnostics over it."""
    pid = cluster.osd_pid()
    # the counter dumps are taken outside the CPU window: the OSD's work to
    # format them is not the benchmark's
    dump0 = perf_dump(cluster)
    def osds_cpu() -> float:
        return sum(map(cpu_seconds, cluster.osd_pids()))
    # pinned: the OSD's core's speed on either side of the window (core_probe.py says why)
    speed0 = core_probe.probe(cluster.placement["osd"], osds_cpu) if cluster.placement else None
    cpu0 = osds_cpu()
    polls0 = loops_cpu(cluster)
    threads0, t0 = thread_cpu(pid), time.monotonic()
    switches0 = context_switches(pid)
    rec = bench()
    switches1 = context_switches(pid)
    polls1 = loops_cpu(cluster)
    threads = thread_report(threads0, thread_cpu(pid), time.monotonic() - t0)
    # every OSD's CPU: with several, a write's replicas cost CPU in the others
    cpu, ops = osds_cpu() - cpu0, rec.get("ops") or 0
    speed1 = core_probe.probe(cluster.placement["osd"], osds_cpu) if cluster.placement else None
    dump1 = perf_dump(cluster)
    if cluster.spec.threads:
        rec["threads"] = threads
        rec["queues"] = queue_report(dump0, dump1)
    # what bench/diagnose judges (cephperf/bench/diagnose.py)
    rec["bench_mode"] = mode
    device = diagnostics.device_from_counters(dump1, int(cluster.spec.device_gib * (1 << 30)))
    rec["diagnostics"] = diagnostics.collect(dump0, dump1, json.loads(admin(cluster, "config", "diff")), device,
                                             threads)
    rec.update(osd_cpu_seconds=round(cpu, 3), osd_cpu_us_per_op=round(cpu / ops * 1e6, 3) if ops else None,
               osd_peak_rss_mib=round((peak_rss_kib(pid) or 0) / 1024, 1),
               osd_context_switches_per_op=switches_per_op(switches0, switches1, ops))
    if polls0:
        # each loop's share of the window: the time its CPU had nothing else to run
        rec["poll_idle_cpu_percent"] = {name: round(100 * (polls1[name] - polls0[name]) / threads["seconds"], 1)
                                        for name in polls0}
    if speed0:
        rec["core_probe"] = {"before": speed0, "after": speed1}
        rec.update({f"osd_cpu_{kind}_units_per_op":
                    core_probe.per_op_in_units(rec["osd_cpu_us_per_op"], speed0, speed1, f"{kind}_ns")
                    for kind in ("loop", "copy")})
    if perf_output(cluster):
        rec.update(perf_counts(perf_output(cluster), ops))
    try:
        rec["cpu_placement"] = round_placement(cluster)
    except PlacementError as e:
        raise NodeError(str(e))
    cluster.check_alive()
    return rec


def with_max_objects(extra: list, n: int) -> list:
    """rados bench's arguments with --max-objects set to n: a write bench then
    writes exactly n objects (of one op each) and ends."""
    out, skip = [], False
    for a in extra:
        if skip or a == "--max-objects":
            skip = not skip
            continue
        out.append(a)
    return [*out, "--max-objects", n]


def counted_window(cluster: Cluster, seconds: int, mode: str, extra: list) -> dict:
    """rados bench's warm-up uninstrumented, then its window counted."""
    spec = cluster.spec
    if spec.window_ops:
        # counted in ops: the same objects under the same names every round,
        # so every round's memtable sees the same keys in the same order
        def warmup():
            log(f"warm-up, uninstrumented: {spec.warmup_ops} ops")
            rados_bench(cluster, seconds, mode, with_max_objects(extra, spec.warmup_ops), pid=1)
        return counted(cluster, warmup if spec.warmup_ops else None,
                       lambda: rados_bench(cluster, seconds, mode, with_max_objects(extra, spec.window_ops), pid=2))

    def warmup_for_seconds():
        log(f"warm-up, uninstrumented: {spec.warmup_seconds} s")
        rados_bench(cluster, spec.warmup_seconds, mode, extra)
    return counted(cluster, warmup_for_seconds if spec.warmup_seconds else None,
                   lambda: rados_bench(cluster, seconds, mode, extra))


SUMMARY_KEYS = {
    "Total time run": "seconds", "Total writes made": "ops", "Total reads made": "ops",
    "Bandwidth (MB/sec)": "bandwidth_mb_s", "Average IOPS": "iops", "Stddev IOPS": "iops_stddev",
    "Average Latency(s)": "lat_avg_s", "Stddev Latency(s)": "lat_stddev_s", "Max latency(s)": "lat_max_s",
}


def parse_summary(lines):
    """rados bench's closing summary, as numbers."""
    out = {}
    for line in lines:
        if ":" in line:
            k, v = line.split(":", 1)
            if k.strip() in SUMMARY_KEYS:
                try:
                    out[SUMMARY_KEYS[k.strip()]] = float(v.strip())
                except ValueError:
                    pass
    if "iops" not in out:
        raise NodeError("rados bench printed no summary: " + " | ".join(lines[-8:]))
    return out
