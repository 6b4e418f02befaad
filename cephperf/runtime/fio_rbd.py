"""fio with its rbd engine against an image of the bench cluster (inside the
runtime root, python3 stdlib only): the overwrite path RBD users live on,
which rados bench (a new object per op) never reaches.

A round makes an image of the profile's size, writes all of it once in 4 MiB
sequential writes (so every later write is an overwrite of allocated space),
then runs the profile's job. The profile's [bench] table names fio's options
(cephperf.bench.profiles checks them); `offset` shifts every I/O of the job
(17408 = sector 34, as a partition table without alignment leaves it).
"""
from __future__ import annotations

import json
import os
import re
import time

from .cluster import Cluster
from .measure import BenchWatch, counted, measured, watched
from .record import NodeError
from .shell import log, sh

IMAGE = "ceph-perf"
PREFILL_BLOCK = 4 << 20
# fio's percentiles (clat_ns) kept in the record: p50, p99, p99.9
PERCENTILES = {"50.000000": "lat_p50_s", "99.000000": "lat_p99_s", "99.900000": "lat_p999_s"}


class FioWatch(BenchWatch):
    """fio's once-a-second status lines (--eta=always --eta-newline=1), e.g.
    "Jobs: 1 (f=1): [w(1)][40.0%][w=2400KiB/s][w=600 IOPS][eta 00m:18s]":
    progress is a line whose IOPS are above zero."""

    def progressed(self, line: str) -> bool:
        m = re.search(r"\[([^\]]*) IOPS\]", line)
        return bool(m) and any(float(v) > 0 for v in re.findall(r"=(\d+(?:\.\d+)?)", m.group(1)))


def fio_env(cluster: Cluster) -> dict:
    # fio's rbd engine reads the cluster's configuration from $CEPH_CONF
    return dict(os.environ, CEPH_CONF=str(cluster.conf))


def image_bytes(bench: dict) -> int:
    return int(bench["image_gib"] * (1 << 30))


def job_args(bench: dict, seconds: int, output: str) -> list[str]:
    """fio's command line for the profile's job, time-based over `seconds`."""
    offset = int(bench.get("offset", 0))
    # the job's region ends a block short of the image's end, whatever the offset
    size = image_bytes(bench) - offset - int(bench["block_size"])
    return ["fio", "--name=ceph-perf", "--ioengine=rbd", "--clientname=admin", "--pool=bench",
            f"--rbdname={IMAGE}", f"--rw={bench['rw']}", f"--bs={bench['block_size']}",
            f"--iodepth={bench['iodepth']}", f"--offset={offset}", f"--size={size}", "--time_based",
            # fio's default seed (randrepeat): every round writes the same blocks in the same order
            f"--runtime={seconds}", "--norandommap",
            "--eta=always", "--eta-newline=1", "--output-format=json", f"--output={output}"]


def make_image(cluster: Cluster, bench: dict) -> None:
    """The image, written whole once so that the job overwrites allocated space."""
    size = image_bytes(bench)
    sh("rbd", "-c", cluster.conf, "create", "--size", f"{size >> 20}M", f"bench/{IMAGE}", timeout=120)
    log(f"writing the {size >> 20} MiB image once (4 MiB sequential writes)")
    out = cluster.state / "fio-prefill.json"
    cmd = ["fio", "--name=prefill", "--ioengine=rbd", "--clientname=admin", "--pool=bench", f"--rbdname={IMAGE}",
           "--rw=write", f"--bs={PREFILL_BLOCK}", "--iodepth=4", f"--size={size}",
           "--eta=always", "--eta-newline=1", "--output-format=json", f"--output={out}"]
    # unbounded in time by fio itself: the watch's deadline bounds it (an
    # OSD under valgrind writes some 30 MB/s)
    watched(cluster, cmd, max(60, size // (20 << 20)), FioWatch, "fio (image prefill)", fio_env(cluster))


def run_job(cluster: Cluster, seconds: int, name: str) -> dict:
    """The profile's job over `seconds`; its record."""
    bench = cluster.spec.bench
    out = cluster.state / f"fio-{name}.json"
    watched(cluster, job_args(bench, seconds, str(out)), seconds, FioWatch, f"fio ({name})",
            fio_env(cluster))
    try:
        return parse_fio(json.loads(out.read_text()))
    except (OSError, ValueError, KeyError, IndexError) as e:
        raise NodeError(f"fio left no readable result in {out}: {e}")


def parse_fio(result: dict) -> dict:
    """One job's result (with --group_reporting, every job's together): IOPS,
    bandwidth, latency percentiles of the main direction, ops by direction."""
    job = result["jobs"][0]
    dirs = ("read", "write")
    ops = {d: job[d]["total_ios"] for d in dirs}
    main = max(dirs, key=lambda d: ops[d])
    side = job[main]
    rec = {"tool": "fio-rbd", "fio_version": result.get("fio version"),
           "seconds": round(max(job[d]["runtime"] for d in dirs) / 1000, 3),
           "ops": ops["read"] + ops["write"], "read_ops": ops["read"], "write_ops": ops["write"],
           "iops": round(sum(job[d]["iops"] for d in dirs), 1),
           "bandwidth_mb_s": round(sum(job[d]["bw_bytes"] for d in dirs) / 1e6, 3),
           "lat_avg_s": round(side["lat_ns"]["mean"] / 1e9, 6)}
    percentiles = side.get("clat_ns", {}).get("percentile", {})
    rec.update({key: round(percentiles[p] / 1e9, 6) for p, key in PERCENTILES.items() if p in percentiles})
    return rec


def run_profile(cluster: Cluster) -> dict:
    """The profile's fio job, native or instruction-counted, after the image's prefill."""
    spec, bench = cluster.spec, cluster.spec.bench
    if "osd.0" not in cluster.procs:
        raise NodeError("the RBD profiles make and write their own image, in the bench cluster only; "
                        "against an existing cluster, run a rados profile (4k-write, 4m-write, 4k-randread)")
    t0 = time.monotonic()
    make_image(cluster, bench)
    log(f"image written in {time.monotonic() - t0:.0f} s; job: {bench['rw']} {bench['block_size']} B, "
        f"depth {bench['iodepth']}, offset {bench.get('offset', 0)}, {bench['seconds']} s")
    mode = bench["rw"]
    if spec.instrument == "callgrind":
        warmup = (lambda: run_job(cluster, spec.warmup_seconds, "warm-up")) if spec.warmup_seconds else None
        rec = counted(cluster, warmup, lambda: run_job(cluster, bench["seconds"], "window"))
        rec["bench_mode"] = mode
        return rec
    return measured(cluster, lambda: run_job(cluster, bench["seconds"], "window"), mode)
