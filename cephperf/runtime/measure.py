"""Measurement inside the runtime root: the rados bench driver, /proc readers,
perf counters from the admin socket, perf stat.

The benchmark never hangs: rados bench is watched line by line; a dead OSD,
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

from . import diagnostics, instrument
from .cluster import Cluster
from .shell import log, sh
from .record import NodeError

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime


def thread_cpu(pid: int) -> dict:
    """CPU seconds of each thread, by thread id: (name, seconds)."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            comm, rest = task.joinpath("stat").read_text().rsplit(")", 1)
        except FileNotFoundError:  # the thread ended meanwhile
            continue
        f = rest.split()
        out[task.name] = (comm.split("(", 1)[1], (int(f[11]) + int(f[12])) / CLK_TCK)
    return out


def peak_rss_kib(pid: int) -> int | None:
    m = re.search(r"VmHWM:\s+(\d+)", Path(f"/proc/{pid}/status").read_text())
    return int(m.group(1)) if m else None


def admin(cluster: Cluster, *args) -> str:
    """An admin socket command of osd.0; its output."""
    return sh("ceph", "--admin-daemon", cluster.state / "run" / "osd.0.asok", *args, timeout=60).stdout


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
            m = re.match(r"\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s", line)
            if m and int(m.group(4)) > self.finished:
                self.finished, self.progress_at = int(m.group(4)), time.monotonic()
            if echo:
                print(line, end="", file=sys.stderr, flush=True)


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
        return f"rados bench ran past its {seconds} s plus 120 s margin"
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
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    watch = BenchWatch(proc, cluster.spec.progress)
    deadline = time.monotonic() + seconds + 120
    while proc.poll() is None:
        watch.thread.join(timeout=1.0)  # wakes on output end or once a second to check the daemons
        problem = problem_with(cluster, watch, deadline, seconds)
        if problem:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise NodeError(problem)
    watch.thread.join(timeout=10)
    if proc.returncode != 0:
        raise NodeError(f"rados bench failed (exit {proc.returncode}): " + " | ".join(watch.lines[-8:]))
    return parse_summary(watch.lines)


def run_profile(cluster: Cluster) -> dict:
    """The profile's benchmark, with the OSD's CPU, RSS, and (asked for) threads and counters over its window."""
    b = cluster.spec.bench
    extra = ["-t", b["threads"], "-b", b["block_size"], "--no-cleanup", "--run-name", "ceph-perf"]
    if b.get("max_objects"):
        extra += ["--max-objects", b["max_objects"]]
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
    pid = cluster.osd_pid()
    perf_out = cluster.state / "perf.csv" if cluster.spec.perf else None
    # the counter dumps are taken outside the CPU window: the OSD's work to
    # format them is not the benchmark's
    dump0 = perf_dump(cluster)
    cpu0 = sum(map(cpu_seconds, cluster.osd_pids()))
    threads0, t0 = thread_cpu(pid), time.monotonic()
    rec = rados_bench(cluster, b["seconds"], mode, extra, perf_out)
    threads = thread_report(threads0, thread_cpu(pid), time.monotonic() - t0)
    # every OSD's CPU: with several, a write's replicas cost CPU in the others
    cpu, ops = sum(map(cpu_seconds, cluster.osd_pids())) - cpu0, rec.get("ops") or 0
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
               osd_peak_rss_mib=round((peak_rss_kib(pid) or 0) / 1024, 1))
    if perf_out:
        rec.update(perf_counts(perf_out, ops))
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
    """A warm-up of the same workload uninstrumented, then the window with
    callgrind's instrumentation on; instructions per op over the window."""
    spec = cluster.spec
    if spec.window_ops:
        # counted in ops: the same objects under the same names every round,
        # so every round's memtable sees the same keys in the same order
        if spec.warmup_ops:
            log(f"warm-up, uninstrumented: {spec.warmup_ops} ops")
            rados_bench(cluster, seconds, mode, with_max_objects(extra, spec.warmup_ops), pid=1)
        pid = cluster.osd_pid()
        instrument.switch_on(pid)
        rec = rados_bench(cluster, seconds, mode, with_max_objects(extra, spec.window_ops), pid=2)
    else:
        if spec.warmup_seconds:
            log(f"warm-up, uninstrumented: {spec.warmup_seconds} s")
            rados_bench(cluster, spec.warmup_seconds, mode, extra)
        pid = cluster.osd_pid()
        instrument.switch_on(pid)
        rec = rados_bench(cluster, seconds, mode, extra)
    dump_file = instrument.dump(pid, cluster.callgrind_out)
    rec.update(instrument.measure(dump_file, int(rec.get("ops") or 0)))
    cluster.check_alive()
    return rec


def thread_report(before, after, seconds):
    """Per-thread CPU share over the benchmark, busiest first, and totals by thread name."""
    threads = []
    for tid, (name, cpu) in after.items():
        used = cpu - before.get(tid, (name, 0.0))[1]
        threads.append({"tid": int(tid), "name": name, "cpu_seconds": round(used, 2),
                        "cpu_percent": round(100 * used / seconds, 1)})
    threads.sort(key=lambda t: -t["cpu_seconds"])
    by_name = {}
    for t in threads:
        g = by_name.setdefault(t["name"], {"threads": 0, "cpu_percent": 0.0, "busiest_thread_percent": 0.0})
        g["threads"] += 1
        g["cpu_percent"] = round(g["cpu_percent"] + t["cpu_percent"], 1)
        g["busiest_thread_percent"] = max(g["busiest_thread_percent"], t["cpu_percent"])
    return {"seconds": round(seconds, 1), "busiest": threads[:12], "by_name": by_name}


QUEUE_COUNTERS = ("kv_sync_lat", "kv_flush_lat", "kv_commit_lat", "kv_final_lat", "state_kv_queued_lat",
                  "state_kv_committing_lat", "state_finishing_lat", "state_aio_wait_lat", "state_done_lat",
                  "commit_lat")


def counter_delta(before: dict, after: dict, sec: str, key: str):
    """A counter's change: {count, avg_ms} for a latency (avgcount/sum), else its value now."""
    a, b = after.get(sec, {}).get(key), before.get(sec, {}).get(key)
    if isinstance(a, dict) and "avgcount" in a:
        n = a["avgcount"] - (b or {}).get("avgcount", 0)
        total = a["sum"] - (b or {}).get("sum", 0)
        return {"count": n, "avg_ms": round(1000 * total / n, 3) if n else None}
    return a


def queue_report(before, after):
    """The completion path's counters over the benchmark: every finisher's queue
    and completion latency, and BlueStore's kv sync/final stages and aio wait."""
    out = {}
    for sec in after:
        if sec.startswith("finisher-"):
            out[sec] = {"queue_len_now": after[sec].get("queue_len"),
                        "complete_latency": counter_delta(before, after, sec, "complete_latency")}
    for key in QUEUE_COUNTERS:
        v = counter_delta(before, after, "bluestore", key)
        if v is not None:
            out[f"bluestore.{key}"] = v
    return out


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


def perf_counts(path, ops):
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {"perf": "no output"}
    vals = {}
    for line in text.splitlines():
        parts = line.split(",")
        if len(parts) > 2 and parts[2] in ("cycles", "instructions", "cycles:u", "instructions:u"):
            vals[parts[2].split(":")[0]] = parts[0]
    if not vals or any(v.startswith("<not") for v in vals.values()):
        return {"perf": "cycles not supported on this machine"}
    c = float(vals["cycles"])
    return {"perf": "ok", "osd_cycles_per_op": round(c / ops) if ops else None}


def perf_supported():
    try:
        r = subprocess.run(["perf", "stat", "-e", "cycles", "-x", ",", "--", "true"],
                           capture_output=True, text=True, timeout=30)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0 and "<not supported>" not in r.stderr and "<not counted>" not in r.stderr
