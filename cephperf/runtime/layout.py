"""The layout an OSD actually runs with, read from the running OSD (node side).

What a round's report says of its layout comes from here, never from what
was asked: BlueStore's view of its device (the OSD's metadata), the op
shards its op queue has (the admin socket's dump_op_pq_state lists one
queue per shard) and the op threads it runs (its tasks named tp_osd_tp).
A layout's [expect] (bench/layouts.toml) is checked against them.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from .record import NodeError
from .shell import sh

METADATA = ("bluestore_bdev_rotational", "rotational", "journal_rotational", "bluestore_bdev_type")
OP_THREAD_NAME = "tp_osd_tp"


def op_threads(pid: int) -> int:
    count = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            count += (task / "comm").read_text().strip() == OP_THREAD_NAME
        except OSError:
            continue  # a thread that ended meanwhile
    return count


def metadata(cluster, osd_id: int, seconds: int = 60) -> dict:
    """osd.N's metadata, once the mon has it: an OSD sends it as it boots, so
    the mon may answer ENOENT for a moment after the pool became writable
    (seen for osd.2 of three). No sleep: each `ceph` call paces the poll."""
    deadline = time.monotonic() + seconds
    while True:
        cluster.check_alive()
        try:
            return json.loads(cluster.ceph("osd", "metadata", str(osd_id), "--format", "json").stdout)
        except NodeError:
            if time.monotonic() > deadline:
                raise


def seen(cluster, osd_id: int = 0) -> dict:
    """The layout osd.N runs with, as the running OSD reports it."""
    md = metadata(cluster, osd_id)
    queues = json.loads(sh("ceph", "--admin-daemon", cluster.state / "run" / f"osd.{osd_id}.asok",
                           "dump_op_pq_state", timeout=120).stdout)
    out = {k: md[k] for k in METADATA if k in md}
    out["op_shards"] = len(queues.get("pq", queues))
    out["op_threads"] = op_threads(cluster.procs[f"osd.{osd_id}"].pid)
    return out


def mismatches(layout: dict, found: dict) -> list[str]:
    """Each expected value the running OSD does not have, named."""
    return [f"{k} is {found.get(k)!r}, the layout needs {v!r}" for k, v in layout.get("expect", {}).items()
            if str(found.get(k)) != str(v)]


def checked(cluster) -> dict:
    """Every OSD's layout; a NodeError naming what differs from the spec's."""
    layout = cluster.spec.layout
    found = {name: seen(cluster, int(name.split(".")[1])) for name in cluster.osd_names()}
    wrong = [f"{name}: {m}" for name, f in found.items() for m in mismatches(layout, f)]
    if wrong:
        raise NodeError(f"the OSD does not run the {layout.get('name')} layout: " + "; ".join(wrong))
    return {"name": layout.get("name"), "devices": cluster.spec.block_devices, "osds": found}
