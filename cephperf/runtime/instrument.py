"""Instructions per op: ceph-osd under valgrind's callgrind, instrumented
only over the measured window (python3 stdlib only, inside the runtime root).

The OSD starts under callgrind with instrumentation off (--instr-atstart=no),
so mkfs (never under valgrind), pool creation and the warm-up cost nothing;
`callgrind_control -i on` switches it on just before the window, and a dump
at its end holds the window's counts. --cache-sim=yes adds the L1 and
last-level misses, from which the estimated cycles come (Ir + 10 x L1 misses
+ 100 x LL misses, as iai and SQLite estimate them). Under callgrind the OSD
runs some 30 times slower, so this measures work, not speed; the OSD's
internal timeouts are raised, and its timers slowed, in this mode only.
"""
from __future__ import annotations

import re
from pathlib import Path

from .shell import sh
from .record import NodeError

# Raised in this mode only: a thread that takes 30 times longer than usual
# must not be declared stuck, nor the OSD reported down.
TIMEOUTS = {
    "osd": {"osd_op_thread_timeout": 600, "osd_op_thread_suicide_timeout": 6000,
            "threadpool_default_timeout": 600, "osd_command_thread_timeout": 600,
            "osd_command_thread_suicide_timeout": 6000, "osd_heartbeat_grace": 600},
    "mon": {"mon_osd_report_timeout": 3600},
}
# Periodic work, slowed in this mode only by the same factor as the OSD.
# Under callgrind a window of 2,000 ops lasts some 20 s instead of under one,
# so work done on a timer weighs 30 times more per op than it does natively,
# and it follows the window's wall time: rounds whose window the host slowed
# to 28-30 s counted 0.5-1% more per op, most of the difference in
# BlueStore's mempool thread (mempool allocated_bytes, its mutexes), which
# resizes the cache shards every bluestore_cache_trim_interval (0.05 s).
PERIODS = {"osd": {"bluestore_cache_trim_interval": 1.5}}
# The OSD's start-up benchmark, skipped in this mode only. At boot a Reef OSD
# using mClock writes 12 MB in 4 KiB blocks to measure its IOPS capacity and,
# when the result lies between the low and high thresholds (50-500 IOPS for an
# HDD), stores it in the mon with `config set osd.N
# osd_mclock_max_capacity_iops_hdd`. Under callgrind it measures some 100 IOPS,
# so it always stores it, and finishes 10-30 s after boot: its 3,000 deferred
# writes fill the memtables before or during the warm-up, and the mon's MConfig
# reply (MonClient::handle_config, md_config_t::update_legacy_vals: 3,400
# instructions per op) landed inside the window of 4 of 100 A/A rounds, the
# two widest (1.06% and 1.24% from their side's median) among them.
STARTUP = {"osd": {"osd_mclock_skip_benchmark": True}}
# Every ceph.conf layer of an instruction-counted round, in order.
COUNTED_CONF = (TIMEOUTS, PERIODS, STARTUP)
TOP_FUNCTIONS = 100  # per round and kind; the report shows fewer


# Valgrind runs one thread at a time, switching every 100,000 basic blocks,
# and by default hands its lock to whichever thread grabs it first. A thread
# spinning on a ceph::spinlock (a bare test-and-set loop, no pause) whose
# holder was switched out mid-section can then grab it again and again while
# the holder waits: in one A/A round of 2,000 ops, OpHistoryServiceThread
# spun 34,384 instructions per op on the op tracker's queue_spinlock (round
# 14% above its side's median; the other nine rounds within 0.8%). With
# --fair-sched=yes runnable threads take turns, so a contended spinlock
# costs at most the spinner's one slice before the holder runs again.
SCHEDULING = ["--fair-sched=yes"]


def wrap(argv: list, out_file: Path) -> list:
    """The OSD's command line under callgrind, instrumentation off until switched on."""
    return ["valgrind", "--tool=callgrind", *SCHEDULING, "--instr-atstart=no", "--cache-sim=yes", "--dump-instr=no",
            f"--callgrind-out-file={out_file}", *map(str, argv)]


def switch_on(pid: int) -> None:
    sh("callgrind_control", "-z", str(pid), timeout=120)
    sh("callgrind_control", "-i", "on", str(pid), timeout=120)


def dump(pid: int, out_file: Path) -> Path:
    """Dump the counts so far (the window's) and switch instrumentation off; the dump's path."""
    before = set(out_file.parent.glob(out_file.name + "*"))
    sh("callgrind_control", "-d", str(pid), timeout=600)
    sh("callgrind_control", "-i", "off", str(pid), timeout=120)
    new = sorted(set(out_file.parent.glob(out_file.name + "*")) - before, key=lambda p: p.stat().st_mtime)
    if not new:
        raise NodeError(f"callgrind_control -d {pid} left no dump next to {out_file}")
    return new[-1]


def totals(text: str) -> dict[str, int]:
    """The event totals of a callgrind dump: {Ir: ..., I1mr: ..., ...}."""
    events = re.search(r"^events:\s*(.+)$", text, re.M)
    total = re.search(r"^(?:totals|summary):\s*(.+)$", text, re.M)
    if not events or not total:
        raise NodeError("the callgrind dump has no events or totals line")
    return dict(zip(events.group(1).split(), map(int, total.group(1).split())))


def estimated_cycles(ev: dict[str, int]) -> int:
    l1 = ev.get("I1mr", 0) + ev.get("D1mr", 0) + ev.get("D1mw", 0)
    ll = ev.get("ILmr", 0) + ev.get("DLmr", 0) + ev.get("DLmw", 0)
    return ev["Ir"] + 10 * l1 + 100 * ll


ANNOTATED = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.+?)\s*$")


def function_name(where: str) -> str:
    """`file:function [object]` as callgrind_annotate prints it, to the function."""
    where = re.sub(r"\s+\[[^\]]*\]$", "", where)
    head, sep, rest = where.partition(":")
    if sep and (head == "???" or "/" in head or head.endswith((".cc", ".h", ".c", ".hpp", ".cpp"))):
        return rest
    return where


def function_table(text: str) -> list[str]:
    """The lines of callgrind_annotate's function table: from below its
    `file:function` heading to the first blank line. What follows (source
    annotated line by line, its `=> callee (Nx)` call lines and the `events
    annotated` total) has the same shape as a function line but is not one."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.rstrip().endswith("file:function"):
            table = []
            for row in lines[i + 1:]:
                if not row.strip():
                    break
                if not row.startswith("---"):
                    table.append(row)
            return table
    return []


def parse_annotation(text: str, top: int = TOP_FUNCTIONS) -> list[tuple[str, int]]:
    """(function, Ir) of callgrind_annotate's function table, largest first.
    One function's lines under several source files (code inlined from a
    header is filed under the header) are added up."""
    out: dict[str, int] = {}
    for line in function_table(text):
        m = ANNOTATED.match(line)
        if m:
            name = function_name(m.group(2))
            out[name] = out.get(name, 0) + int(m.group(1).replace(",", ""))
    return sorted(out.items(), key=lambda kv: -kv[1])[:top]


def functions(dump_file: Path, ops: int) -> dict:
    """Top functions by self and by inclusive instructions, per op."""
    out = {}
    for kind, flag in (("self", "no"), ("inclusive", "yes")):
        # --auto=no: the function table alone, without the annotated sources
        text = sh("callgrind_annotate", "--show=Ir", f"--inclusive={flag}", "--threshold=99.9", "--auto=no",
                  dump_file, timeout=600).stdout
        out[kind] = [[name, round(ir / ops, 1)] for name, ir in parse_annotation(text)]
    return out


def measure(dump_file: Path, ops: int) -> dict:
    if not ops:
        raise NodeError("no op completed in the instrumented window")
    ev = totals(dump_file.read_text(errors="replace"))
    return {"mode": "callgrind", "osd_instructions_per_op": round(ev["Ir"] / ops, 1),
            "osd_est_cycles_per_op": round(estimated_cycles(ev) / ops, 1),
            "callgrind_events": ev, "functions": functions(dump_file, ops), "callgrind_file": str(dump_file)}


def idle_share(idle: dict[str, dict[str, int]], idle_seconds: dict[str, float], window_seconds: dict[str, float],
               ops: int, per_op: dict) -> dict:
    """What the idle cluster spends in a window as long as the measured one,
    per op of that window: each OSD's counts over its idle_seconds without
    client I/O, scaled to its window_seconds and divided by the window's ops;
    and per_op's figures (measure's or measure_roles') beyond that share.
    Timers, heartbeats and reports run by the clock, so the share is about
    the same for both sides of a pair and pulls their ratio towards 1."""
    if not ops or min(idle_seconds.values()) <= 0:
        raise NodeError("no op, or no idle time, to scale the idle cluster's counts by")
    share = {name: ev["Ir"] * window_seconds[name] / idle_seconds[name] / ops for name, ev in idle.items()}
    total = sum(share.values())
    out = {"idle_seconds": round(max(idle_seconds.values()), 1), "window_seconds": round(max(window_seconds.values()), 1),
           "idle_instructions_per_second": round(sum(ev["Ir"] / idle_seconds[n] for n, ev in idle.items()), 1),
           "osd_idle_instructions_per_op": round(total, 1),
           "osd_instructions_per_op_beyond_idle": round(per_op["osd_instructions_per_op"] - total, 1)}
    if len(idle) > 1 and "primary_instructions_per_op" in per_op:
        out.update(primary_idle_instructions_per_op=round(share["osd.0"], 1),
                   primary_instructions_per_op_beyond_idle=round(per_op["primary_instructions_per_op"] - share["osd.0"], 1))
    return out


def measure_roles(dumps: dict[str, Path], ops: int) -> dict:
    """Several OSDs' dumps of one window, osd.0 the primary of every PG: the
    instructions and estimated cycles per client op summed over them all
    (what a replicated write costs), and per role, the primary's and a
    replica's (their mean); the primary's function table."""
    if not ops:
        raise NodeError("no op completed in the instrumented window")
    each = {name: totals(path.read_text(errors="replace")) for name, path in dumps.items()}
    replicas = [ev for name, ev in each.items() if name != "osd.0"]
    primary = each["osd.0"]
    return {"mode": "callgrind",
            "osd_instructions_per_op": round(sum(ev["Ir"] for ev in each.values()) / ops, 1),
            "osd_est_cycles_per_op": round(sum(map(estimated_cycles, each.values())) / ops, 1),
            "primary_instructions_per_op": round(primary["Ir"] / ops, 1),
            "primary_est_cycles_per_op": round(estimated_cycles(primary) / ops, 1),
            "replica_instructions_per_op": round(sum(ev["Ir"] for ev in replicas) / len(replicas) / ops, 1),
            "replica_est_cycles_per_op": round(sum(map(estimated_cycles, replicas)) / len(replicas) / ops, 1),
            "callgrind_events": each, "functions": functions(dumps["osd.0"], ops),
            "callgrind_file": str(dumps["osd.0"])}
