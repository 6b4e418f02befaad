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

import os
import time

from .cluster import Cluster
from .fio import parse_fio, run_fio
from .counted import counted
from .measure import measured
from .record import NodeError
from .shell import log, sh

IMAGE = "ceph-perf"
PREFILL_BLOCK = 4 << 20


def fio_env(cluster: Cluster) -> dict:
    # fio's rbd engine reads the cluster's configuration from $CEPH_CONF
    return dict(os.environ, CEPH_CONF=str(cluster.conf))


def image_bytes(bench: dict) -> int:
    return int(bench["image_gib"] * (1 << 30))


def job_args(bench: dict, seconds: int) -> list[str]:
    """fio's options for the profile's job, time-based over `seconds`."""
    offset = int(bench.get("offset", 0))
    # the job's region ends a block short of the image's end, whatever the offset
    size = image_bytes(bench) - offset - int(bench["block_size"])
    return ["--name=ceph-perf", "--ioengine=rbd", "--clientname=admin", "--pool=bench",
            f"--rbdname={IMAGE}", f"--rw={bench['rw']}", f"--bs={bench['block_size']}",
            f"--iodepth={bench['iodepth']}", f"--offset={offset}", f"--size={size}", "--time_based",
            # fio's default seed (randrepeat): every round writes the same blocks in the same order
            f"--runtime={seconds}", "--norandommap"]


def make_image(cluster: Cluster, bench: dict) -> None:
    """The image, written whole once so that the job overwrites allocated space."""
    size = image_bytes(bench)
    sh("rbd", "-c", cluster.conf, "create", "--size", f"{size >> 20}M", f"bench/{IMAGE}", timeout=120)
    log(f"writing the {size >> 20} MiB image once (4 MiB sequential writes)")
    args = ["--name=prefill", "--ioengine=rbd", "--clientname=admin", "--pool=bench", f"--rbdname={IMAGE}",
            "--rw=write", f"--bs={PREFILL_BLOCK}", "--iodepth=4", f"--size={size}"]
    # unbounded in time by fio itself: the watch's deadline bounds it (an
    # OSD under valgrind writes some 30 MB/s)
    run_fio(cluster, args, max(60, size // (20 << 20)), "prefill", fio_env(cluster))


def run_job(cluster: Cluster, seconds: int, name: str) -> dict:
    """The profile's job over `seconds`; its record."""
    return parse_fio(run_fio(cluster, job_args(cluster.spec.bench, seconds), seconds, name, fio_env(cluster)),
                     "fio-rbd")


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
