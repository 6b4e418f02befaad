"""A CephFS in the bench cluster, mounted with ceph-fuse, and fio's writers on
it (inside the runtime root, python3 stdlib only).

The seeds' case: 16 processes doing O_DIRECT 4 KiB writes to one file through
ceph-fuse ran no faster than one. For every direct write the kernel's FUSE
layer takes the file's inode lock exclusively, unless the open reply carries
FOPEN_DIRECT_IO together with FOPEN_PARALLEL_DIRECT_WRITES (Linux 6.2 on),
which stock ceph-fuse never sets; patches/ceph-fuse-parallel-direct-writes.patch
adds the option `fuse_parallel_direct_writes`. A write that extends a file
takes the lock exclusively in any case, so the files are written whole
before the job, which then only overwrites.

The mount lives in the round's own mount namespace (cephperf/runtime/enter_root.py):
whatever happens to the round, it is gone with it; Cluster.down() unmounts it
first all the same, before the MDS and the OSD stop.
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from .cluster import Cluster
from .fio import parse_fio, run_fio
from .measure import measured
from .record import NodeError
from .shell import log, sh

MOUNT = "mnt"
OPTION = "fuse_parallel_direct_writes"
PREFILL_BLOCK = 4 << 20


def up(cluster: Cluster) -> Path:
    """Pools, a file system, one MDS and a ceph-fuse mount; the mount point."""
    c = cluster
    for pool, pgs in (("cephfs_metadata", 8), ("cephfs_data", 32)):
        c.ceph("osd", "pool", "create", pool, str(pgs), str(pgs), "replicated")
    c.ceph("fs", "new", "cephfs", "cephfs_metadata", "cephfs_data")
    (c.state / "mds" / "ceph-a").mkdir(parents=True, exist_ok=True)
    c.start("mds.a", ["ceph-mds", "-c", c.conf, "-i", "a", "-f"])
    wait_for_active_mds(c)
    mnt = c.state / MOUNT
    mnt.mkdir(exist_ok=True)
    # ceph-fuse goes to the background once its mount is up: its exit is the
    # wait. Its output goes to a file: the daemon would hold a pipe open.
    c.mounts.append(mnt)
    out = c.state / "log" / "ceph-fuse.stdout"
    with open(out, "w") as f:
        try:
            rc = subprocess.run(["ceph-fuse", "-c", str(c.conf), str(mnt)], stdout=f, stderr=subprocess.STDOUT,
                                timeout=360).returncode
        except subprocess.TimeoutExpired:
            rc = "timed out after 360 s"
    if rc != 0 or not os.path.ismount(mnt):
        tail = " | ".join(out.read_text(errors="replace").splitlines()[-8:])
        mds = " | ".join(c.log_tail("mds.a", 8))
        raise NodeError(f"ceph-fuse could not mount {mnt} ({rc}): {tail}; mds.a's log: {mds}")
    log(f"CephFS mounted with ceph-fuse on {mnt}")
    return mnt


def wait_for_active_mds(c: Cluster, seconds: int = 180) -> None:
    """Until the file system has an active MDS: ceph-fuse does not wait for
    one ("probably no MDS server is up?"). Each `ceph fs dump` blocks on the
    mon; between them the MDS is creating the file system."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        c.check_alive()
        dump = json.loads(c.ceph("fs", "dump", "--format", "json").stdout)
        states = [info.get("state") for fs in dump.get("filesystems", [])
                  for info in fs.get("mdsmap", {}).get("info", {}).values()]
        if "up:active" in states:
            return
        time.sleep(0.5)
    raise NodeError(f"no active MDS after {seconds} s; mds.a's log: " + " | ".join(c.log_tail("mds.a", 8)))


def file_args(bench: dict, mnt: Path) -> list[str]:
    """fio's files: one shared by every job, or one per job."""
    if bench["files"] == 1:
        return [f"--filename={mnt}/file.0"]
    return [f"--directory={mnt}", "--filename_format=file.$jobnum"]


def write_files(cluster: Cluster, bench: dict, mnt: Path) -> None:
    """Every file written whole once, so that the job's writes never extend one."""
    size = int(bench["file_mib"]) << 20
    args = ["--name=prefill", *file_args(bench, mnt), "--rw=write", f"--bs={PREFILL_BLOCK}",
            f"--size={size}", f"--numjobs={bench['files']}", "--end_fsync=1"]
    run_fio(cluster, args, max(60, size * bench["files"] // (20 << 20)), "prefill")


def job_args(bench: dict, mnt: Path, seconds: int) -> list[str]:
    """O_DIRECT writes of the sync engine, `jobs` processes over `files` files."""
    return ["--name=ceph-perf", *file_args(bench, mnt), "--ioengine=sync", "--direct=1",
            f"--rw={bench['rw']}", f"--bs={bench['block_size']}", f"--size={int(bench['file_mib']) << 20}",
            f"--numjobs={bench['jobs']}", "--group_reporting", "--time_based", f"--runtime={seconds}",
            "--norandommap"]


def run_profile(cluster: Cluster) -> dict:
    """The profile's writers on a fresh ceph-fuse mount; native rounds only
    (what limits them is a lock in the kernel, which instructions do not see)."""
    spec, bench = cluster.spec, cluster.spec.bench
    if spec.instrument:
        raise NodeError("the ceph-fuse profiles run native rounds only: their limit is the kernel's inode lock")
    mnt = up(cluster)
    write_files(cluster, bench, mnt)

    def window():
        rec = parse_fio(run_fio(cluster, job_args(bench, mnt, bench["seconds"]), bench["seconds"], "window"),
                        "fio-cephfs")
        rec.update(jobs=bench["jobs"], files=bench["files"], fuse_parallel_direct_writes=fuse_option(cluster))
        return rec
    return measured(cluster, window, bench["rw"])


def fuse_option(cluster: Cluster) -> str:
    """What the side's ceph-fuse made of fuse_parallel_direct_writes: the
    value it runs with, or "unknown option" (stock ceph-fuse has none)."""
    asok = sorted((cluster.state / "run").glob("client.*.asok"))
    if not asok:
        return "no client admin socket"
    r = sh("ceph", "--admin-daemon", asok[0], "config", "get", OPTION, check=False, timeout=30)
    if r.returncode != 0 or "error getting" in r.stdout + r.stderr:  # ENOENT: no such option
        return "unknown option"
    try:
        return str(json.loads(r.stdout)[OPTION])
    except (ValueError, KeyError):
        return f"unreadable: {r.stdout.strip()[:200]}"
