"""Findings from a round's diagnostics: the cause of a slow run, with the
numbers behind it. Thresholds are data (bench/rules/diagnose.toml).

A round record carries `diagnostics` (cephperf/runtime/diagnostics.py): the
BlueStore write-path counters' change over the benchmark, the debug levels
that differ from their defaults, the device's use, and the busiest threads.
"""
from __future__ import annotations


def gather_level(value) -> int | None:
    """The gather (in-memory) level of a debug setting, "1/5" -> 5, "20" -> 20."""
    try:
        parts = str(value).split("/")
        return int(parts[-1])
    except ValueError:
        return None


def writes(rec: dict) -> int:
    """Write ops the client completed in the window."""
    if rec.get("write_ops") is not None:
        return int(rec["write_ops"])
    return int(rec.get("ops") or 0) if rec.get("bench_mode", "write") == "write" else 0


def unaligned(rec: dict, diag: dict, rule: dict) -> str | None:
    n, penalty = writes(rec), diag.get("bluestore", {}).get("write_penalty_read_ops", 0)
    if n and penalty / n > rule["penalty_reads_per_write"]:
        return (f"unaligned overwrites: {penalty / n:.2f} penalty reads per write ({penalty:,} write_penalty_read_ops "
                f"over {n:,} writes): BlueStore reads each partly covered 4 KiB block before writing it; align the "
                "client's writes to 4 KiB (a partition that starts at a multiple of 8 sectors)")
    return None


def saturated(rec: dict, diag: dict, rule: dict) -> str | None:
    busiest = (diag.get("threads") or {}).get("busiest") or []
    hot = [t for t in busiest if t.get("cpu_percent", 0) > rule["percent_of_a_core"]]
    if hot:
        listed = ", ".join(f"{t['name']} (tid {t['tid']}) {t['cpu_percent']:.0f}%" for t in hot)
        return f"a saturated thread: {listed} of one core over the window; that thread bounds the OSD's throughput"
    return None


def debug_above(rec: dict, diag: dict, rule: dict) -> str | None:
    raised = []
    for name, v in sorted((diag.get("debug") or {}).items()):
        final, default = gather_level(v.get("final")), gather_level(v.get("default"))
        if final is not None and default is not None and final > default:
            raised.append(f"{name} {v['final']} (default {v['default']})")
    if raised and rule.get("above_default", True):
        return ("debug levels above the defaults: " + ", ".join(raised) +
                "; every entry at or below the gather level is formatted into the in-memory log on every op")
    return None


def full_device(rec: dict, diag: dict, rule: dict) -> str | None:
    dev = diag.get("device") or {}
    if dev.get("utilization", 0) >= rule["utilization"]:
        return (f"a full or near-full device: {dev['utilization']:.0%} used ({dev.get('kb_avail', 0) // 1024:,} MiB "
                "free); BlueStore's allocator and the full flags slow or stop writes")
    return None


def deferred_backlog(rec: dict, diag: dict, rule: dict) -> str | None:
    # in bytes: BlueStore counts an issued deferred write per 4 KiB chunk and a
    # submitted one per merged device write (a misaligned 4 KiB write issues
    # two chunks and submits one write), so the counts differ with no backlog
    bs = diag.get("bluestore", {})
    issued, submitted = bs.get("issued_deferred_write_bytes", 0), bs.get("submitted_deferred_write_bytes", 0)
    backlog = issued - submitted
    if backlog >= rule["min_bytes"] and backlog > rule["backlog_share"] * issued:
        return (f"deferred writes piling up: {issued / 2**20:,.1f} MiB issued, {submitted / 2**20:,.1f} MiB submitted "
                f"to the device over the window ({backlog / 2**20:,.1f} MiB waiting): the device does not keep up "
                "with small writes")
    return None


CHECKS = {"unaligned_overwrites": unaligned, "saturated_thread": saturated, "debug_levels": debug_above,
          "device": full_device, "deferred_writes": deferred_backlog}


def findings(rec: dict, rules: dict) -> list[dict]:
    """Every finding of one round: [{finding, says}], in the rules' order."""
    diag = rec.get("diagnostics") or {}
    out = []
    for name, check in CHECKS.items():
        if name in rules:
            said = check(rec, diag, rules[name])
            if said:
                out.append({"finding": name, "says": said})
    return out
