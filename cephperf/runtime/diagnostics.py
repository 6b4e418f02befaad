"""What a diagnosis needs from a running OSD, before and after a benchmark
(python3 stdlib only, inside the runtime root or against an existing cluster):
BlueStore's write-path counters, the OSD's threads, its debug levels against
their defaults, and how full its device is. cephperf.bench.diagnose judges it.
"""
from __future__ import annotations

import json

# BlueStore counters of the write path (Reef's names): penalty reads of
# unaligned overwrites, small and big writes, padding, deferred writes issued
# and submitted, onode cache hits and misses, transactions.
BLUESTORE = ("write_penalty_read_ops", "write_small", "write_small_pre_read", "write_small_unused", "write_pad_bytes",
             "write_big", "write_new", "issued_deferred_writes", "submitted_deferred_writes",
             "issued_deferred_write_bytes", "submitted_deferred_write_bytes", "onode_hits", "onode_misses",
             "txc_count")


def bluestore_counters(dump: dict) -> dict:
    """The BLUESTORE counters of a `perf dump`."""
    section = dump.get("bluestore", {})
    return {k: section[k] for k in BLUESTORE if isinstance(section.get(k), (int, float))}


def counter_deltas(before: dict, after: dict) -> dict:
    return {k: after[k] - before.get(k, 0) for k in after}


def debug_levels(config_diff: dict) -> dict:
    """debug_* settings that differ from their defaults: {name: {"default": ..., "final": ...}}.
    `config diff` lists every setting whose value differs from the default."""
    diff = config_diff.get("diff", config_diff)
    out = {}
    for name, v in diff.items():
        if name.startswith("debug_") and isinstance(v, dict):
            out[name] = {"default": v.get("default"), "final": v.get("final", v.get("value"))}
    return out


def device_use(node: dict) -> dict:
    """One OSD's device use from its entry in `ceph osd df -f json`'s nodes:
    {utilization (fraction), kb, kb_avail}."""
    return {"utilization": round(node.get("utilization", 0.0) / 100, 4), "kb": node.get("kb"),
            "kb_avail": node.get("kb_avail")}


def device_from_counters(dump: dict, device_bytes: int) -> dict:
    """A one-device OSD's use from its own counters: BlueStore's allocated
    bytes plus BlueFS's (RocksDB's files share the device). `ceph osd df`
    says the same where a mgr runs; the bench cluster has none."""
    used = dump.get("bluestore", {}).get("allocated", 0) + dump.get("bluefs", {}).get("db_used_bytes", 0)
    return {"utilization": round(used / device_bytes, 4) if device_bytes else 0.0, "kb": device_bytes // 1024,
            "kb_avail": max(device_bytes - used, 0) // 1024}


def collect(dump_before: dict, dump_after: dict, config_diff: dict, device: dict | None, threads: dict) -> dict:
    """A round's diagnostics: counter changes over the window, and the state at its end."""
    return {"bluestore": counter_deltas(bluestore_counters(dump_before), bluestore_counters(dump_after)),
            "debug": debug_levels(config_diff), "device": device, "threads": threads}


def external_snapshot(ceph) -> dict:
    """An existing cluster seen from a client: every OSD's counters and debug
    levels (`ceph tell`), and the devices' use from `ceph osd df` where a mgr
    runs. ceph(*args) runs a ceph command and returns its output."""
    ids = json.loads(ceph("osd", "ls", "-f", "json"))
    mgr = json.loads(ceph("mgr", "stat", "-f", "json")).get("available", False)
    return {"dumps": {i: json.loads(ceph("tell", f"osd.{i}", "perf", "dump")) for i in ids},
            "diffs": {i: json.loads(ceph("tell", f"osd.{i}", "config", "diff")) for i in ids},
            "df": json.loads(ceph("osd", "df", "-f", "json")) if mgr else None}


def collect_external(before: dict, after: dict) -> dict:
    """Diagnostics of an existing cluster: counter changes summed over its OSDs,
    every OSD's raised debug levels, its fullest device; no per-thread CPU
    (the OSDs' /proc is not here)."""
    totals: dict = {}
    for i, dump in after["dumps"].items():
        for k, v in counter_deltas(bluestore_counters(before["dumps"].get(i, {})), bluestore_counters(dump)).items():
            totals[k] = totals.get(k, 0) + v
    debug = {}
    for i, diff in sorted(after["diffs"].items()):
        debug.update({f"{name} (osd.{i})": v for name, v in debug_levels(diff).items()})
    devices = [device_use(n) for n in (after.get("df") or {}).get("nodes", [])]
    fullest = max(devices, key=lambda d: d["utilization"], default=None)
    return {"bluestore": totals, "debug": debug, "device": fullest, "threads": None}
