"""ci/cluster-test's plan and judgements, as pure functions (python3 stdlib only).

The host reads cmake/cluster-test.toml and checks it with plan() before any
root or cluster is touched; the node side (cluster_test.py) runs the plan
and judges what it saw with the functions below: the builds each OSD runs
per phase, the cluster log's lines against the commented ignore list, the
daemons' logs for asserts, encode failures and CRC errors, and each PG's
state and scrub results.
"""
from __future__ import annotations

import re

from .daemon_log import abort_lines

EVENTS = ("kill", "split", "out", "in")
STOCK, CANDIDATE = "stock", "candidate"
# a cluster log line at these levels fails the stage unless the ignore list explains it
CLUSTER_LOG_LEVEL = re.compile(r"\[(ERR|WRN|SEC)\]")
# the mgr's PG summary in the cluster log, every few seconds: "pgmap v63: 24 pgs: 19 active+clean, 1 peering; ..."
PGMAP = re.compile(r"pgmap v\d+: \d+ pgs: ([^;]*)")
# The recovery messages an OSD took from its queue since it started, from
# its perf counters. PGRecoveryMsg::run (osd/scheduler/OpSchedulerItem.cc)
# times each message in the counter of its type and, its switch having no
# break, in every counter after it (push, push reply, pull, backfill,
# backfill remove, scan, in that order): so pushes are the push counter's
# count, and MOSDPGBackfill messages, which only a backfill target gets,
# the backfill counter's count less the pull counter's.
PUSH, PULL, BACKFILL = ("l_osd_recovery_push_queue_latency", "l_osd_recovery_pull_queue_latency",
                        "l_osd_recovery_backfill_queue_latency")


class PlanError(ValueError):
    """The plan file is malformed; the message names the key."""


def _need(table: dict, key: str, kind, where: str):
    value = table.get(key)
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise PlanError(f"{where}{key}: missing or not {getattr(kind, '__name__', kind)}")
    return value


def plan(data: dict, ops: int | None = None, phases: list[str] | None = None) -> dict:
    """The plan checked and completed: `ops` replaces each ceph_test_rados run's
    op count, `phases` keeps only the phases named (in the file's order)."""
    cluster = _need(data, "cluster", dict, "")
    osds = _need(cluster, "osds", int, "[cluster] ")
    for key in ("pool_pgs", "ec_pgs", "min_size", "wait_seconds"):
        _need(cluster, key, int, "[cluster] ")
    _need(cluster, "ec_profile", list, "[cluster] ")
    test_rados = dict(_need(data, "test_rados", dict, ""))
    for key in ("ops", "objects", "max_in_flight", "object_size", "seconds"):
        _need(test_rados, key, int, "[test_rados] ")
    _need(test_rados, "op_weights", dict, "[test_rados] ")
    if ops is not None:
        test_rados["ops"] = ops
    _need(data, "short_pg_log", dict, "")
    checks = _need(data, "checks", dict, "")
    for key in ("clean_seconds", "scrub_seconds", "scrub_request_again_seconds", "fsck_seconds"):
        _need(checks, key, int, "[checks] ")
    for pattern in _need(checks, "forbidden", list, "[checks] "):
        _compile(pattern, "[checks] forbidden")
    ignore = data.get("ignore", [])
    for n, entry in enumerate(ignore):
        where = f"[[ignore]] {n + 1}: "
        _compile(_need(entry, "pattern", str, where), where + "pattern")
        if not _need(entry, "why", str, where).strip():
            raise PlanError(f"{where}why: say what makes the line expected")
    chosen = [_phase(p, n, osds) for n, p in enumerate(_need(data, "phase", list, ""))]
    if phases:
        unknown = set(phases) - {p["name"] for p in chosen}
        if unknown:
            raise PlanError(f"no phase {', '.join(sorted(unknown))} (the plan has "
                            f"{', '.join(p['name'] for p in chosen)})")
        chosen = [p for p in chosen if p["name"] in phases]
    if not chosen:
        raise PlanError("[[phase]]: at least one phase")
    return {**data, "test_rados": test_rados, "ec_test_rados": ec_workload(test_rados), "phase": chosen,
            "ignore": ignore}


def _compile(pattern: str, where: str) -> re.Pattern:
    try:
        return re.compile(pattern)
    except re.error as e:
        raise PlanError(f"{where}: {pattern!r} is not a regular expression: {e}")


def _phase(phase: dict, n: int, osds: int) -> dict:
    where = f"[[phase]] {phase.get('name', n + 1)}: "
    _need(phase, "name", str, where)
    stock = _need(phase, "stock", list, where)
    if any(not isinstance(o, int) or not 0 <= o < osds for o in stock):
        raise PlanError(f"{where}stock: OSD ids from 0 to {osds - 1}")
    events, last = [], 0.0
    for event in phase.get("events", []):
        kind, at = event.get("do"), event.get("at")
        if kind not in EVENTS:
            raise PlanError(f"{where}event {event}: `do` is one of {', '.join(EVENTS)}")
        if not isinstance(at, (int, float)) or not last <= at < 1:
            raise PlanError(f"{where}event {event}: `at` is a fraction of the ops, in order, below 1")
        if kind == "split":
            _need(event, "pg_num", int, where + "split ")
        else:
            osd = _need(event, "osd", int, f"{where}{kind} ")
            if not 0 <= osd < osds:
                raise PlanError(f"{where}{kind} osd {osd}: no such OSD")
            if kind == "kill" and osd in stock:
                raise PlanError(f"{where}kill osd {osd}: the OSD killed runs the candidate")
        events.append(dict(event))
        last = at
    outs = [e["osd"] for e in events if e["do"] == "out"]
    ins = [e["osd"] for e in events if e["do"] == "in"]
    if sorted(outs) != sorted(ins):
        raise PlanError(f"{where}every OSD marked out is marked in again later in the phase")
    # a list by OSD id: the plan reaches the node as JSON, where a dict's keys would be strings
    builds = [STOCK if osd in stock else CANDIDATE for osd in range(osds)]
    return {**phase, "events": events, "builds": builds}


def ec_workload(test_rados: dict) -> dict:
    """The erasure-coded pool's run: appends where the replicated pool writes
    (no overwrites on it), no omap (ceph_test_rados --ec-pool --no-omap)."""
    weights = dict(test_rados["op_weights"])
    if "write" in weights:
        weights["append"] = weights.get("append", 0) + weights.pop("write")
    return {**test_rados, "op_weights": weights, "ec_pool": True}


def restarts(before: list, after: list) -> list[int]:
    """The OSDs whose build changes between two phases (stopped, started with the other build)."""
    return [osd for osd, build in enumerate(after) if before[osd] != build]


def pgmap_states(lines) -> set[str]:
    """Every PG state the mgr's summaries in the cluster log name."""
    return {part.strip().split(" ", 1)[1] for line in lines for m in [PGMAP.search(line)] if m
            for part in m.group(1).split(",") if " " in part.strip()}


def recovery_messages(osd_counters: dict) -> dict:
    """The pushes and the MOSDPGBackfill messages an OSD took (`perf dump osd`'s "osd" section)."""
    count = {k: osd_counters.get(k, {}).get("avgcount", 0) for k in (PUSH, PULL, BACKFILL)}
    return {"pushes": count[PUSH], "backfill_messages": count[BACKFILL] - count[PULL]}


def unexercised(phase: dict, received: dict) -> list[str]:
    """What the phase's events should have brought about and the OSDs' counters
    do not show (received: OSD id -> recovery_messages()): a killed OSD catches
    up from the PG log (pushes), one marked in again by backfill."""
    missing = []
    for e in phase["events"]:
        got = received.get(e.get("osd"), {})
        if e["do"] == "kill" and not got.get("pushes"):
            missing.append(f"osd.{e['osd']} took no push after its SIGKILL (no log-based recovery)")
        if e["do"] == "in" and got.get("backfill_messages", 0) <= 0:
            missing.append(f"osd.{e['osd']} took no backfill message after it was marked in (no backfill)")
    return missing


def unexpected_cluster_log(lines, ignore: list[dict]) -> list[str]:
    """Each [ERR], [WRN] or [SEC] line that no ignore entry's pattern matches."""
    patterns = [re.compile(entry["pattern"]) for entry in ignore]
    return [line for line in lines if CLUSTER_LOG_LEVEL.search(line)
            and not any(p.search(line) for p in patterns)]


def forbidden_lines(lines, forbidden: list[str]) -> list[str]:
    """The lines that hold a forbidden message (an encode failure, a CRC error)."""
    patterns = [re.compile(p) for p in forbidden]
    return [line for line in lines if any(p.search(line) for p in patterns)]


def daemon_log_problems(name: str, text: str, forbidden: list[str]) -> list[str]:
    """What a daemon's log must not hold: an assert, a caught signal, a
    RocksDB write error (daemon_log.abort_lines), or a forbidden message."""
    found = [f"{name}: {line}" for line in abort_lines(text)]
    return found + [f"{name}: {line.strip()}" for line in forbidden_lines(text.splitlines(), forbidden)]


def pg_problems(pgs: list[dict], scrubbed_after: dict | None = None) -> list[str]:
    """What is wrong with the PGs (`ceph pg ls` entries): a state other than
    active+clean, an inconsistency, a scrub error; with scrubbed_after
    (pgid -> the last_deep_scrub_stamp before the request), a PG whose deep
    scrub did not follow the request."""
    problems = []
    for pg in pgs:
        pgid, state, stats = pg["pgid"], pg["state"], pg.get("stat_sum", {})
        if sorted(state.split("+")) != ["active", "clean"]:
            problems.append(f"{pgid} {state}")
        errors = {k: stats.get(k, 0) for k in ("num_scrub_errors", "num_shallow_scrub_errors",
                                                "num_deep_scrub_errors") if stats.get(k, 0)}
        if errors:
            problems.append(f"{pgid} " + ", ".join(f"{k} {v}" for k, v in errors.items()))
        if scrubbed_after is not None and pg.get("last_deep_scrub_stamp") == scrubbed_after.get(pgid, ""):
            problems.append(f"{pgid} not deep-scrubbed since the request")
    if scrubbed_after is not None:
        missing = set(scrubbed_after) - {pg["pgid"] for pg in pgs}
        problems += [f"{pgid} gone" for pgid in sorted(missing)]
    return problems


def summary(problems: list[str], most: int = 8) -> str:
    return "; ".join(problems[:most]) + (f"; and {len(problems) - most} more" if len(problems) > most else "")
