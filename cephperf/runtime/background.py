"""Work the OSD runs as mClock's best effort, queued beside a client's
writes (node side, python3-rados): what a production OSD has in its queues
while clients write, and what throttled background items in the op queue
(mClock's future due times) do to a client write's wake-up.

- A deleted pool: its PGs' objects to remove (PG deletion).
- A removed snapshot: the clones of overwritten objects to trim (snap trim).
"""
from __future__ import annotations

import json

from .cluster import Cluster
from .cluster_admin import admin
from .shell import log

OBJECTS, BLOCK = 2000, 4096
DOOMED, SNAPPED = "ceph-perf-deleted", "ceph-perf-snapped"


def fill(ioctx, n: int, data: bytes) -> None:
    done = [ioctx.aio_write_full(f"obj-{i}", data) for i in range(n)]
    for c in done:
        c.wait_for_complete()


def make_pool(cluster: Cluster, name: str) -> None:
    cluster.ceph("osd", "pool", "create", name, "8", "8", "replicated")
    cluster.ceph("osd", "pool", "set", name, "size", str(cluster.spec.osds), "--yes-i-really-mean-it")
    cluster.ceph("osd", "pool", "application", "enable", name, "rados")


def queue(cluster: Cluster) -> dict:
    """A deleted pool of OBJECTS objects and a removed snapshot of as many clones."""
    # python3-rados is the runtime root's, not the host's, which imports this package too
    import rados
    for name in (DOOMED, SNAPPED):
        make_pool(cluster, name)
    client = rados.Rados(conffile=str(cluster.conf))
    client.connect(timeout=60)
    try:
        with client.open_ioctx(DOOMED) as ioctx:
            fill(ioctx, OBJECTS, b"\x01" * BLOCK)
        with client.open_ioctx(SNAPPED) as ioctx:
            fill(ioctx, OBJECTS, b"\x02" * BLOCK)
            ioctx.create_snap("before")
            fill(ioctx, OBJECTS, b"\x03" * BLOCK)  # each overwrite makes a clone
            ioctx.remove_snap("before")
    finally:
        client.shutdown()
    cluster.ceph("config", "set", "mon", "mon_allow_pool_delete", "true")
    cluster.ceph("osd", "pool", "delete", DOOMED, DOOMED, "--yes-i-really-really-mean-it")
    log(f"background queued: pool {DOOMED} deleted ({OBJECTS} objects), a snapshot of {SNAPPED} removed "
        f"({OBJECTS} clones)")
    return {"deleted_pool_objects": OBJECTS, "removed_snapshot_clones": OBJECTS, "before": still_queued(cluster)}


def still_queued(cluster: Cluster) -> dict:
    """What osd.0 still has of it: PGs being removed, and items in its shards'
    mClock queues (snap trim and PG deletion among them)."""
    counters = json.loads(admin(cluster, "perf", "dump")).get("osd", {})
    shards = json.loads(admin(cluster, "dump_op_pq_state")).get("pq", {})
    queued = sum(s.get("queue_sizes", {}).get("scheduler", 0) for s in shards.values())
    return {"pgs_removing": counters.get("numpg_removing"), "mclock_queued_items": queued}
