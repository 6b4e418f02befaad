"""fio as the bench's client (inside the runtime root, python3 stdlib only):
one place that runs a fio command line under the node's watch and reads its
JSON result, for the RBD and the ceph-fuse profiles alike.
"""
from __future__ import annotations

import json
import re

from .cluster import Cluster
from .measure import BenchWatch, watched
from .record import NodeError

# fio's percentiles (clat_ns) kept in the record: p50, p99, p99.9
PERCENTILES = {"50.000000": "lat_p50_s", "99.000000": "lat_p99_s", "99.900000": "lat_p999_s"}


class FioWatch(BenchWatch):
    """fio's once-a-second status lines (--eta=always --eta-newline=1), e.g.
    "Jobs: 1 (f=1): [w(1)][40.0%][w=2400KiB/s][w=600 IOPS][eta 00m:18s]":
    progress is a line whose IOPS are above zero."""

    def progressed(self, line: str) -> bool:
        m = re.search(r"\[([^\]]*) IOPS\]", line)
        return bool(m) and any(float(v) > 0 for v in re.findall(r"=(\d+(?:\.\d+)?)", m.group(1)))


def run_fio(cluster: Cluster, args: list[str], seconds: int, name: str, env: dict | None = None) -> dict:
    """fio with `args` (its job options), watched for `seconds` (and the
    watch's grace past them); fio's JSON result, kept as STATE/fio-NAME.json."""
    out = cluster.state / f"fio-{name}.json"
    # the status lines feed the watch; the result goes to its own file
    cmd = ["fio", *args, "--eta=always", "--eta-newline=1", "--output-format=json", f"--output={out}"]
    watched(cluster, cmd, seconds, FioWatch, f"fio ({name})", env)
    try:
        return json.loads(out.read_text())
    except (OSError, ValueError) as e:
        raise NodeError(f"fio ({name}) left no readable result in {out}: {e}")


def parse_fio(result: dict, tool: str) -> dict:
    """One job's result (with --group_reporting, every job's together): IOPS,
    bandwidth, latency percentiles of the main direction, ops by direction."""
    try:
        job = result["jobs"][0]
        dirs = ("read", "write")
        ops = {d: job[d]["total_ios"] for d in dirs}
        main = max(dirs, key=lambda d: ops[d])
        side = job[main]
        rec = {"tool": tool, "fio_version": result.get("fio version"),
               "seconds": round(max(job[d]["runtime"] for d in dirs) / 1000, 3),
               "ops": ops["read"] + ops["write"], "read_ops": ops["read"], "write_ops": ops["write"],
               "iops": round(sum(job[d]["iops"] for d in dirs), 1),
               "bandwidth_mb_s": round(sum(job[d]["bw_bytes"] for d in dirs) / 1e6, 3),
               "lat_avg_s": round(side["lat_ns"]["mean"] / 1e9, 6)}
    except (KeyError, IndexError, TypeError) as e:
        raise NodeError(f"fio's result lacks {e} (fio {result.get('fio version', '?')})")
    percentiles = side.get("clat_ns", {}).get("percentile", {})
    rec.update({key: round(percentiles[p] / 1e9, 6) for p, key in PERCENTILES.items() if p in percentiles})
    return rec
