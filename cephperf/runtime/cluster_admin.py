"""Pool and OSD administration of a bench cluster, as an operator does it
(ceph CLI, run-time options, a PG split carried out by ceph-mgr, an OSD
restart, a deep scrub), for the steps of ci/rados-model-test and
ci/cluster-test; each waits for its effect."""
from __future__ import annotations

import json
import time

from .cluster import Cluster
from .daemon_log import exit_status
from .record import NodeError
from .shell import sh

# how often a wait polls the cluster
POLL_SECONDS = 1


def wait_until(what: str, seconds: float, check, cluster: Cluster):
    """check()'s first true value, polled while the cluster's daemons stay alive; fails after `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        cluster.check_alive()
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise NodeError(f"{what}: not within {seconds} s")
        time.sleep(POLL_SECONDS)


def ceph_json(cluster: Cluster, *args) -> dict | list:
    return json.loads(cluster.ceph(*args, "--format", "json").stdout)


def tell_osd_option(cluster: Cluster, key: str, value: str) -> None:
    """At run time, as an operator would; the OSD must report it back."""
    cluster.ceph("tell", "osd.0", "config", "set", key, value)
    got = ceph_json(cluster, "tell", "osd.0", "config", "get", key)
    if not same_value(str(got.get(key)), value):
        raise NodeError(f"osd.0 did not take {key} = {value}: {got}")


def same_value(reported: str, value: str) -> bool:
    """The OSD reports a float option in its own format (0 as 0.000000)."""
    try:
        return float(reported) == float(value)
    except ValueError:
        return reported == value


def autoscale_off(cluster: Cluster, pool: str) -> None:
    # pg_num changes only when this test makes them
    cluster.ceph("osd", "pool", "set", pool, "pg_autoscale_mode", "off")


def make_pool(cluster: Cluster, name: str, pgs: int) -> None:
    cluster.ceph("osd", "pool", "create", name, str(pgs), str(pgs), "replicated")
    cluster.ceph("osd", "pool", "set", name, "size", "1", "--yes-i-really-mean-it")
    cluster.ceph("osd", "pool", "application", "enable", name, "rados")
    autoscale_off(cluster, name)


def pool_pgs(cluster: Cluster, pool: str) -> tuple[int, list[str]]:
    """The pool's pg_num in the OSD map, and its PGs' states as the mgr has them from the OSD."""
    pools = ceph_json(cluster, "osd", "pool", "ls", "detail")
    pg_num = next(p["pg_num"] for p in pools if p["pool_name"] == pool)
    listing = ceph_json(cluster, "pg", "ls-by-pool", pool)
    return pg_num, [pg["state"] for pg in listing.get("pg_stats", [])]


def osd_pg_count(cluster: Cluster) -> int:
    return ceph_json(cluster, "tell", "osd.0", "perf", "dump", "osd")["osd"]["numpg"]


def split_pool(cluster: Cluster, pool: str, conf: dict) -> dict:
    """Raise the pool's pg_num and wait until the split really happened."""
    before, _ = pool_pgs(cluster, pool)
    target = conf["pg_num"]
    if target <= before:
        raise NodeError(f"[split] pg_num = {target}: the pool already has {before} PGs; a split needs more")
    osd_before = osd_pg_count(cluster)
    cluster.ceph("osd", "pool", "set", pool, "pg_num", str(target))

    def split_done():
        pg_num, states = pool_pgs(cluster, pool)
        return (pg_num == target and len(states) == target and all("active" in s for s in states)
                and osd_pg_count(cluster) >= osd_before + target - before)

    wait_until(f"the split of pool {pool} from {before} to {target} PGs (by ceph-mgr)", conf["seconds"],
               split_done, cluster)
    return {"pg_num_from": before, "pg_num_to": target, "osd_pgs_from": osd_before, "osd_pgs_to": osd_pg_count(cluster)}


def admin(cluster: Cluster, *args) -> str:
    """An admin socket command of osd.0; its output."""
    return sh("ceph", "--admin-daemon", cluster.state / "run" / "osd.0.asok", *args, timeout=60).stdout


def newest_map(cluster: Cluster) -> int:
    """The newest osdmap epoch osd.0 holds (each one it stores is two new
    objects: the full and the incremental map)."""
    return json.loads(admin(cluster, "status"))["newest_map"]


def osd_up_from(cluster: Cluster, osd_id: int = 0) -> int:
    """The OSD map epoch the OSD came up in, 0 while it is down."""
    osd = next(o for o in ceph_json(cluster, "osd", "dump")["osds"] if o["osd"] == osd_id)
    return osd["up_from"] if osd["up"] else 0


def restart_osd(cluster: Cluster, seconds: int, osd_id: int = 0, kill: bool = False) -> dict:
    """Stop the OSD and start it again; done when the mon has it up again,
    booted anew. kill: SIGKILL instead (it must not exit by itself first),
    and it starts again once the mon has marked it down."""
    name = f"osd.{osd_id}"
    up_from = osd_up_from(cluster, osd_id)
    if kill:
        proc = cluster.procs.pop(name)
        proc.kill()
        if proc.wait(timeout=60) != -9:
            raise NodeError(f"{name} ended by itself ({exit_status(proc.returncode)}) before its SIGKILL")
        wait_until(f"{name} marked down after its SIGKILL", seconds, lambda: osd_up_from(cluster, osd_id) == 0,
                   cluster)
    else:
        cluster.stop_osd(osd_id)
    cluster.start_osd(osd_id)

    def booted_again() -> int:
        epoch = osd_up_from(cluster, osd_id)
        return epoch if epoch > up_from else 0

    return {"up_from": up_from, "up_again_from": wait_until(f"{name} up again after its restart", seconds,
                                                            booted_again, cluster)}


# A PG neither scrubbed nor scrubbing this long after its deep-scrub request
# is asked again, as an operator does: a request that reaches a PG between
# two intervals is dropped, and a PG that failed to reserve its replicas
# waits out a 300 s penalty (ScrubQueue::move_failed_pgs) unless a new
# request pardons it.
SCRUB_REQUEST_AGAIN_SECONDS = 60


def not_scrubbed(pgs: list[dict], stamps: dict) -> list[str]:
    """The PGs whose last deep scrub is still the one before the request and
    that are not scrubbing now."""
    return [pg["pgid"] for pg in pgs
            if pg.get("last_deep_scrub_stamp") == stamps.get(pg["pgid"]) and "scrubbing" not in pg["state"]]


def deep_scrub_each(cluster: Cluster, listing, stamps: dict, seconds: int, what: str,
                    again_seconds: int = SCRUB_REQUEST_AGAIN_SECONDS) -> tuple[list[dict], dict]:
    """`ceph pg deep-scrub` for each PG of stamps (pgid -> its last deep-scrub
    stamp before the request), and wait until each has scrubbed since and is
    not scrubbing, or a PG of listing() shows an inconsistency or a scrub
    error (the caller judges it); a PG not scrubbed again_seconds after its
    request is asked again. The last listing, and how often each PG was
    asked again."""
    for pgid in stamps:
        cluster.ceph("pg", "deep-scrub", pgid)
    last_request, repeated = time.monotonic(), {}

    def scrubbed():
        nonlocal last_request
        pgs = listing()
        if any("inconsistent" in pg["state"] or pg.get("stat_sum", {}).get("num_scrub_errors") for pg in pgs):
            return pgs
        by_id = {pg["pgid"]: pg for pg in pgs}
        if all(p in by_id and by_id[p]["last_deep_scrub_stamp"] != s and "scrubbing" not in by_id[p]["state"]
               for p, s in stamps.items()):
            return pgs
        if time.monotonic() - last_request > again_seconds:
            for pgid in not_scrubbed(pgs, stamps):
                cluster.ceph("pg", "deep-scrub", pgid)
                repeated[pgid] = repeated.get(pgid, 0) + 1
            last_request = time.monotonic()
        return None

    return wait_until(what, seconds, scrubbed, cluster), repeated


def deep_scrub_pool(cluster: Cluster, pool: str, seconds: int) -> dict:
    """Deep-scrub every PG of the pool, as an operator asks it (ceph pg
    deep-scrub), and check what the scrubs found; done when each PG's last
    deep scrub is newer than the request. The PGs must be active+clean first,
    since a PG scrubs only then."""
    def listing() -> list[dict]:
        return ceph_json(cluster, "pg", "ls-by-pool", pool).get("pg_stats", [])

    def all_clean():
        pgs = listing()
        return pgs if pgs and all("active+clean" in pg["state"] for pg in pgs) else None

    t0 = time.monotonic()
    before = {pg["pgid"]: pg["last_deep_scrub_stamp"]
              for pg in wait_until(f"pool {pool}'s PGs active+clean before a deep scrub", seconds, all_clean, cluster)}
    # The OSD starts at most one scrub per tick, and skips a tick with this
    # probability (0.66 by default): about 3 s per PG instead of 1.
    tell_osd_option(cluster, "osd_scrub_backoff_ratio", "0")
    pgs, _ = deep_scrub_each(cluster, listing, before, seconds,
                             f"a deep scrub of each of pool {pool}'s {len(before)} PGs")
    errors = {pg["pgid"]: (pg["state"], pg["stat_sum"].get("num_scrub_errors", 0)) for pg in pgs
              if "inconsistent" in pg["state"] or pg["stat_sum"].get("num_scrub_errors", 0)}
    if errors:
        raise NodeError(f"the deep scrub of pool {pool} found inconsistencies: "
                        + ", ".join(f"{pgid} {state} ({n} errors)" for pgid, (state, n) in sorted(errors.items())))
    return {"pgs": len(pgs), "objects": sum(pg["stat_sum"].get("num_objects", 0) for pg in pgs),
            "seconds": round(time.monotonic() - t0, 1)}
