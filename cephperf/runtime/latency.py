"""Write latency at queue depth 1, from the client and from the OSD (node side).

The profile's tool `rados-latency`: new 4 KiB objects written one at a time
(cephperf/runtime/qd1_writer.py, the work of `rados bench -t 1`), each write
timed by the client: the median, the 99th percentile and the maximum. The
OSD's own view of the same writes, from each op's arrival to its reply: its
mean (the op_w_latency counter), 99th percentile and maximum (its history
of the window's slowest ops). A write whose ack waits on something else (a
wake-up lost until mClock's next due time) shows in the tail, not the mean.

With the profile's bench.background (the `background` variant), work that
mClock runs as best effort is queued before the window: a deleted pool's
PGs to remove and a removed snapshot's clones to trim
(cephperf/runtime/background.py).
"""
from __future__ import annotations

import json
import re
import sys

from . import background
from .cluster import Cluster
from .cluster_admin import admin
from .measure import BenchWatch, measured, watched
from .record import NodeError
from .shell import log

# The OSD's op history keeps, of the ops of its last osd_op_history_duration
# seconds, the osd_op_history_size slowest (OpHistory::cleanup drops the
# shortest first). Emptied before the window and then this large, it holds
# the window's slowest writes: its 99th percentile while the window has at
# most 100 times as many, far more than 30 s at depth 1 reach. (The slow-op
# history cannot serve: its threshold is kept in whole seconds.)
HISTORY_SIZE = 2000
WINDOW_PREFIX, WARMUP_PREFIX = "ceph-perf-lat-", "ceph-perf-warm-"


class ProgressWatch(BenchWatch):
    """qd1_writer's "progress N" lines."""
    COMPLETED = re.compile(r"progress (\d+)")


def percentiles(values: list[float]) -> dict:
    """The median, 99th percentile (nearest rank) and maximum of `values`."""
    if not values:
        raise NodeError("no write completed in the window")
    ordered = sorted(values)

    def rank(p: float) -> float:
        return ordered[max(0, -(-len(ordered) * p // 100) - 1)]
    return {"p50": rank(50), "p99": rank(99), "max": ordered[-1]}


def client_writes(cluster: Cluster, prefix: str, seconds: int) -> dict:
    """The writer over `seconds`; its ops, IOPS and latencies (seconds)."""
    b = cluster.spec.bench
    out = cluster.state / f"{prefix}latencies.json"
    cmd = [sys.executable, "-m", "cephperf.runtime.qd1_writer", str(cluster.conf), "bench", prefix,
           str(seconds), str(b["block_size"]), str(out)]
    watched(cluster, cmd, seconds, ProgressWatch, "the qd1 writer")
    data = json.loads(out.read_text())
    rec = {"tool": "rados-latency", "ops": data["ops"], "seconds": data["seconds"],
           "iops": round(data["ops"] / data["seconds"], 1)}
    rec.update({f"lat_{k}_s": round(v / 1e6, 6) for k, v in percentiles(data["latencies_us"]).items()})
    return rec


def write_latency_counter(cluster: Cluster) -> dict:
    return json.loads(admin(cluster, "perf", "dump"))["osd"]["op_w_latency"]


def empty_history(cluster: Cluster, size: int) -> None:
    """osd.0's op history emptied, then keeping the `size` slowest ops."""
    cluster.ceph("tell", "osd.0", "config", "set", "osd_op_history_size", "0")
    admin(cluster, "dump_historic_ops")  # a dump trims the history to its size
    cluster.ceph("tell", "osd.0", "config", "set", "osd_op_history_size", str(size))


def osd_latencies(cluster: Cluster, prefix: str, counter_before: dict) -> dict:
    """The OSD's view of the window's writes, from each op's arrival to its
    reply: their mean (its op_w_latency counter), and from its history of
    the window's slowest writes, their 99th percentile and maximum."""
    after = write_latency_counter(cluster)
    writes = after["avgcount"] - counter_before["avgcount"]
    ops = json.loads(admin(cluster, "dump_historic_ops_by_duration")).get("ops", [])
    slowest = sorted((op["duration"] for op in ops if prefix in op.get("description", "")), reverse=True)
    rank = -(-writes // 100)  # the 99th percentile's rank from the top, nearest-rank
    if not writes or len(slowest) < rank:
        raise NodeError(f"the OSD's op history holds {len(slowest)} of the window's {writes} writes, too few "
                        f"for their 99th percentile (the {rank}th slowest)")
    return {"osd_writes": writes, "osd_lat_avg_s": round((after["sum"] - counter_before["sum"]) / writes, 6),
            "osd_lat_p99_s": round(slowest[rank - 1], 6), "osd_lat_max_s": round(slowest[0], 6)}


def run_profile(cluster: Cluster) -> dict:
    spec, b = cluster.spec, cluster.spec.bench
    if spec.instrument:
        raise NodeError("rados-latency profiles run native rounds only (latency under callgrind means nothing)")
    if b.get("warmup_seconds"):
        log(f"warm-up: {b['warmup_seconds']} s of qd1 writes")
        client_writes(cluster, WARMUP_PREFIX, b["warmup_seconds"])
    queued = background.queue(cluster) if b.get("background") else None
    empty_history(cluster, HISTORY_SIZE)
    counter = write_latency_counter(cluster)
    rec = measured(cluster, lambda: client_writes(cluster, WINDOW_PREFIX, b["seconds"]), "write")
    rec.update(osd_latencies(cluster, WINDOW_PREFIX, counter))
    if queued is not None:
        rec["background"] = {**queued, "after": background.still_queued(cluster)}
    return rec
