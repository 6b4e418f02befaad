"""What the OSD used over a benchmark, read inside the runtime root (python3
stdlib only): CPU per process and per thread from /proc, peak RSS, the
completion path's counter changes, perf stat's counts where the machine
has a PMU, and where the processes were allowed to run and ran (a round
with CPU pinning).
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


def context_switches(pid: int) -> dict:
    """Context switches over all of a process's threads, voluntary (the
    thread blocked: a wait on a queue, a lock, a socket) and involuntary
    (preempted), from each task's status. On a core shared by all of the
    OSD's threads, how many hand-offs an op takes is part of its CPU cost."""
    totals = {"voluntary": 0, "involuntary": 0}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            status = task.joinpath("status").read_text()
        except FileNotFoundError:  # the thread ended meanwhile
            continue
        for kind, key in (("voluntary", "voluntary_ctxt_switches"), ("involuntary", "nonvoluntary_ctxt_switches")):
            m = re.search(rf"^{key}:\s+(\d+)", status, re.M)
            totals[kind] += int(m.group(1)) if m else 0
    return totals


def switches_per_op(before: dict, after: dict, ops: int) -> dict | None:
    """context_switches() read around a window, per completed op."""
    if not ops:
        return None
    return {kind: round((after[kind] - before[kind]) / ops, 3) for kind in before}


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


# CPU pinning (NodeSpec.cpu_pinning): ceph-osd on one set of CPUs, everything
# else of the round (mon, mgr, the benchmark client, the node process) on
# another, so that the client's and the mon's work never runs between the
# OSD's threads on its core and the OSD's CPU time per op is its own work.
PINNED_ROLES = ("osd", "others")


def placement_plan(pinning: dict, usable: set[int]) -> dict[str, set[int]]:
    """The CPUs of each role, {"osd": {1}, "others": {0}}, from the spec's
    cpu_pinning and the CPUs this process may use. ValueError (why) where it
    cannot be applied as asked: a role unnamed or empty, the two roles
    sharing a CPU, or a CPU this machine does not give us (fewer than 2)."""
    unknown = set(pinning) - set(PINNED_ROLES)
    if unknown:
        raise ValueError(f"cpu_pinning names {sorted(unknown)}; its roles are {', '.join(PINNED_ROLES)}")
    plan = {}
    for role in PINNED_ROLES:
        cpus = pinning.get(role)
        if not cpus or not all(isinstance(c, int) and c >= 0 for c in cpus):
            raise ValueError(f"cpu_pinning.{role} = {cpus!r}: a list of CPU numbers, at least one")
        plan[role] = set(cpus)
    if plan["osd"] & plan["others"]:
        raise ValueError(f"cpu_pinning: ceph-osd and the rest share CPU(s) {cpu_list(plan['osd'] & plan['others'])}")
    missing = (plan["osd"] | plan["others"]) - usable
    if missing:
        raise ValueError(f"cpu_pinning asks for CPU(s) {cpu_list(plan['osd'])} for ceph-osd and "
                         f"{cpu_list(plan['others'])} for the rest; this node may use only {cpu_list(usable)} "
                         f"({len(usable)} CPU(s)): pinning needs at least 2")
    return plan


def cpu_list(cpus) -> str:
    """CPU numbers as the kernel and taskset write them: "0-2,5"."""
    out, run = [], []
    for c in sorted(cpus):
        if run and c == run[-1] + 1:
            run.append(c)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [c]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


def parse_cpu_list(text: str) -> set[int]:
    """The kernel's CPU list ("0-2,5") as a set."""
    cpus = set()
    for part in filter(None, text.strip().split(",")):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def allowed_cpus(pid: int, tid: int | None = None) -> set[int]:
    """Where the kernel lets a process (or one of its threads) run: Cpus_allowed_list."""
    status = Path(f"/proc/{pid}" + (f"/task/{tid}" if tid else "") + "/status").read_text()
    return parse_cpu_list(re.search(r"^Cpus_allowed_list:\s*(\S+)", status, re.M).group(1))


def threads_placement(pid: int) -> tuple[set[int], set[int]]:
    """Over a process's threads: the CPUs any may run on, and the CPUs they
    last ran on (/proc/PID/task/TID/stat's `processor`)."""
    allowed, ran = set(), set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            allowed |= allowed_cpus(pid, int(task.name))
            ran.add(int(task.joinpath("stat").read_text().rsplit(")", 1)[1].split()[36]))
        except (FileNotFoundError, ProcessLookupError):  # the thread ended meanwhile
            continue
    return allowed, ran


def placement_problem(plan: dict[str, set[int]], seen: dict[str, set[int]]) -> str | None:
    """What of the seen placement breaks the plan, or None: every OSD thread
    within the OSD's CPUs, every other process within the others'."""
    wrong = [f"{what} may run on {cpu_list(cpus)}" for what, cpus in seen.items()
             if not cpus <= plan["osd" if what.startswith("osd") else "others"]]
    if not wrong:
        return None
    return (f"CPU pinning asked for (ceph-osd on {cpu_list(plan['osd'])}, the rest on {cpu_list(plan['others'])}) "
            f"but not in force: {'; '.join(wrong)}")


class PlacementError(Exception):
    """A pinning asked for and not in force."""


def round_placement(cluster) -> dict:
    """Where the OSDs' threads, the mon and the window's client could run, as
    read from /proc at the window's end, and where the OSDs' threads last
    ran. A pinning asked for and not in force fails the round: its CPU per
    op would be compared with pinned rounds'."""
    seen = {name: threads_placement(cluster.procs[name].pid) for name in cluster.osd_names()}
    allowed = {name: cpus for name, (cpus, _) in seen.items()}
    # the idle-polling loops sit on every CPU by design (poll_idle.start_loops), the OSD's too
    allowed.update({name: allowed_cpus(p.pid) for name, p in cluster.procs.items()
                    if not name.startswith(("osd.", "poll-idle."))})
    if cluster.client_cpus is not None:
        allowed["client"] = cluster.client_cpus
    problem = placement_problem(cluster.placement, allowed) if cluster.placement else None
    if problem:
        raise PlacementError(problem)
    return {"pinned": cluster.placement is not None, "allowed": {k: cpu_list(v) for k, v in allowed.items()},
            "osd_threads_last_ran_on": {name: cpu_list(ran) for name, (_, ran) in seen.items()}}
