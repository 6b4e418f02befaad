"""What the OSD used over a benchmark, read inside the runtime root (python3
stdlib only): CPU per process and per thread from /proc, peak RSS, the
completion path's counter changes, and perf stat's counts where the machine
has a PMU.
"""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

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
