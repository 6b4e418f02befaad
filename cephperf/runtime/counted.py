"""An instruction-counted window: the workload's warm-up uninstrumented, then
its window with every OSD's callgrind instrumentation on, and the record's
instructions and estimated cycles per op (instrument.measure, or
instrument.measure_roles for several OSDs), after an idle count of the
cluster where the spec asks for one (instrument.idle_share)."""
from __future__ import annotations

import time
from pathlib import Path

from . import instrument
from .cluster import Cluster
from .shell import log


def counted(cluster: Cluster, warmup, window) -> dict:
    """warmup() of the workload uninstrumented, then window() with callgrind's
    instrumentation on; its record with the instructions per op over it.
    With several OSDs (osd.0 every PG's primary, the others its replicas),
    each runs under a callgrind of its own: the per-op figures are their sum,
    a client write's whole cost, beside each role's (instrument.measure_roles)."""
    if warmup:
        warmup()
    osds = {name: cluster.procs[name].pid for name in cluster.osd_names()}
    idle = None
    if cluster.spec.counted_idle_seconds:
        log(f"the idle cluster, counted: {cluster.spec.counted_idle_seconds} s")
        # no client I/O: the time is the measurement, as a window's is
        dumps, idle_seconds, _ = count_over(cluster, osds, lambda: time.sleep(cluster.spec.counted_idle_seconds))
        idle = {name: instrument.totals(path.read_text(errors="replace")) for name, path in dumps.items()}
    dumps, window_seconds, rec = count_over(cluster, osds, window)
    ops = int(rec.get("ops") or 0)
    rec.update(instrument.measure(dumps["osd.0"], ops) if len(dumps) == 1 else instrument.measure_roles(dumps, ops))
    if idle:
        rec.update(instrument.idle_share(idle, idle_seconds, window_seconds, ops, rec))
    cluster.check_alive()
    return rec


def count_over(cluster: Cluster, osds: dict[str, int], body) -> tuple[dict[str, Path], dict[str, float], object]:
    """body() with every OSD's instrumentation on: each OSD's dump, the
    seconds each was counted (from its switch-on to its dump), body's result."""
    started = {}
    for name, pid in osds.items():
        started[name] = time.monotonic()
        instrument.switch_on(pid)
    result = body()
    dumps, seconds = {}, {}
    for name, pid in osds.items():
        dumps[name] = instrument.dump(pid, cluster.callgrind_out_of(int(name.split(".")[1])))
        seconds[name] = time.monotonic() - started[name]
    return dumps, seconds, result
