"""Runs inside a bench/cluster (via bench/cluster exec): per-thread CPU of
ceph-osd and its completion queues' perf counters across one rados bench.

Is any single completion thread saturated? Each ceph-osd thread's CPU
seconds (utime+stime from /proc/PID/task/TID/stat) over the bench's wall time
gives its busy fraction of one core; the finisher-style perf counters
(finisher-*, bstore_kv_final, aio) give queue lengths and completion latency.
"""
import configparser
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")


def threads(pid: int) -> dict:
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            comm = (task / "comm").read_text().strip()
            f = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        out[task.name] = (comm, (int(f[11]) + int(f[12])) / CLK_TCK)
    return out


def perf_dump(asok: str) -> dict:
    r = subprocess.run(["ceph", "--admin-daemon", asok, "perf", "dump"], capture_output=True, text=True, timeout=60)
    return json.loads(r.stdout)


def completion_counters(dump: dict) -> dict:
    keep = {}
    for section, vals in dump.items():
        if re.match(r"finisher|bstore_kv|throttle-bstore|bluestore$", section) or "finisher" in section:
            keep[section] = vals
    return keep


def main():
    seconds, extra = int(sys.argv[1]), sys.argv[2:]
    conf = configparser.ConfigParser(strict=False, interpolation=None)
    conf.read(os.environ["CEPH_CONF"])
    run_dir = conf["global"]["run_dir"]
    pid = int(Path(run_dir, "osd.0.pid").read_text())
    asok = str(Path(run_dir, "osd.0.asok"))
    before_perf, before, t0 = perf_dump(asok), threads(pid), time.monotonic()
    bench = subprocess.run(["rados", "-p", "bench", "bench", str(seconds), "write", "-b", "4096", "-t", "16",
                            "--no-cleanup", *extra], capture_output=True, text=True, timeout=seconds + 300)
    wall = time.monotonic() - t0
    after, after_perf = threads(pid), perf_dump(asok)
    iops = re.search(r"Average IOPS:\s+(\d+)", bench.stdout)
    per_name: dict = {}
    for tid, (comm, cpu) in after.items():
        d = cpu - before.get(tid, (comm, 0.0))[1]
        e = per_name.setdefault(comm, {"threads": 0, "cpu_s": 0.0, "max_thread_busy": 0.0})
        e["threads"] += 1
        e["cpu_s"] += d
        e["max_thread_busy"] = max(e["max_thread_busy"], d / wall)
    counters = {}
    b, a = completion_counters(before_perf), completion_counters(after_perf)
    for section, vals in a.items():
        for k, v in vals.items():
            old = b.get(section, {}).get(k)
            if isinstance(v, dict) and "avgcount" in v:
                n = v["avgcount"] - (old or {}).get("avgcount", 0)
                s = v.get("sum", 0) - (old or {}).get("sum", 0)
                if n:
                    counters[f"{section}.{k}"] = {"count": n, "avg_ms": round(1000 * s / n, 4)}
            elif isinstance(v, (int, float)) and ("queue" in k or "len" in k):
                counters[f"{section}.{k}"] = v
    print(json.dumps({"wall_s": round(wall, 1), "iops": int(iops.group(1)) if iops else None,
                      "threads": dict(sorted(per_name.items(), key=lambda kv: -kv[1]["cpu_s"])),
                      "counters": counters}, indent=1))


if __name__ == "__main__":
    main()
