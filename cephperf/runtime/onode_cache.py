"""Runs inside a throwaway overlay of the trixie runtime root (ci/onode-cache-test).

Checks patches/bluestore-onode-lookup-once.patch on a one-OSD cluster running
the candidate's ceph-osd: absent objects remembered in the onode cache
(bluestore_onode_cache_absent), and upstream's key self-check, which no option
turns off, stopping an injected key error. Each round sets the option at run
time, as an operator would (`ceph tell osd.0 config set`), then:
  1. reads one missing object READS times: the onode cache's miss counter
     (onode_misses) grows once with absent entries on, once per read
     with them off;
  2. an object read while missing, then written, reads back as written;
  3. an object written, removed, read while missing and written again reads
     back its second contents, and a removed one stays missing;
  4. a copy (`rados cp`, the OSD's copy-from) to a name read while missing,
     larger than one copy chunk: the OSD writes a temporary object and
     renames it into place (PrimaryLogPG::process_copy_chunk), which
     replaces the absent entry;
  5. after a pool snapshot, an object is overwritten (BlueStore creates its
     clone): the snapshot reads the old contents, the head the new.
Then:
  6. switching absent entries off at run time drops those already cached:
     the next read of an object remembered absent misses the onode cache;
  7. a key error injected (bluestore_debug_inject_onode_key_error), which
     the OSD reads at start only, and only when set for it alone: set at
     run time (`ceph tell osd.0 config set` and the monitors' `ceph config
     set osd.0`) it is refused, and a new object is written and reads back;
     left in the monitors' central configuration, the OSD takes it when it
     restarts but does not abort: it ignores it (its log says why) and a
     new object reads back; set on its command line, the OSD aborts in the
     key self-check at its first onode lookup (its superblock's, while it
     starts), before any key is stored; restarted without it, the OSD comes
     up.
Last, the OSD restarts and every object reads back as last written.
Every wait is bounded; a step that fails is named in the record (record.json).
"""
import dataclasses
import json
import sys
from pathlib import Path

from .checks import Objects, candidate_check_main
from .cluster import Cluster
from .cluster_admin import newest_map
from .record import NodeError
from .shell import sh
from .spec import NodeSpec
from .onode_key_injection import (injection_at_run_time_ignored, injection_at_start_aborts,
                                  injection_from_central_configuration_ignored)

READS = 20
# copy-from moves this much per round trip; an object larger than one chunk is
# copied into a temporary object, renamed into place at the end
COPY_CHUNK = 65536
COPY_SIZE = 5 * COPY_CHUNK
# bluestore_onode_cache_absent per round: the default first
ROUNDS = [True, False]


class Store(Objects):
    """Objects with known contents, and the ones that must be missing."""

    def rados(self, *args, timeout=120, check=True):
        return sh(*self.cluster.rados, *args, timeout=timeout, check=check)

    def remove(self, name: str) -> None:
        self.rados("rm", name)
        del self.sums[name], self.sizes[name]

    def check(self, step: str, name: str, snap: str | None = None, want: str | None = None) -> None:
        if self.read_sum(name, snap) != (want or self.sums[name]):
            raise NodeError(f"{step}: {name}{'@' + snap if snap else ''} does not read back as written")

    def missing(self, step: str, name: str) -> None:
        r = self.rados("stat", name, check=False)
        if r.returncode == 0 or "No such file" not in r.stderr:
            raise NodeError(f"{step}: stat of {name} should fail with ENOENT; got exit {r.returncode}: "
                            f"{(r.stdout + r.stderr).strip()[-200:]}")


def onode_counters(cluster: Cluster) -> tuple[int, int]:
    dump = json.loads(cluster.ceph("tell", "osd.0", "perf", "dump", "bluestore").stdout)["bluestore"]
    return dump["onode_hits"], dump["onode_misses"]


def set_cache_absent(cluster: Cluster, cache_absent: bool) -> None:
    key, value = "bluestore_onode_cache_absent", str(cache_absent).lower()
    cluster.ceph("tell", "osd.0", "config", "set", key, value)
    got = cluster.ceph("tell", "osd.0", "config", "get", key).stdout
    if json.loads(got).get(key) != value:
        raise NodeError(f"osd.0 did not take {key} = {value}: {got.strip()}")


def one_round(cluster: Cluster, store: Store, tag: str, cache_absent: bool) -> list[str]:
    set_cache_absent(cluster, cache_absent)
    setting = f"cache_absent={cache_absent}"
    steps = []

    hits0, misses0, epoch0 = *onode_counters(cluster), newest_map(cluster)
    for _ in range(READS):
        store.missing("repeated reads of a missing object", f"{tag}-never")
    hits1, misses1, epoch1 = *onode_counters(cluster), newest_map(cluster)
    misses, hits = misses1 - misses0, hits1 - hits0
    # The first read misses, one more is slack; each osdmap epoch the OSD stores
    # meanwhile adds two misses the counters cannot tell from the test's own.
    if cache_absent and misses > 2 + 2 * (epoch1 - epoch0):
        raise NodeError(f"{setting}: {READS} reads of one missing object missed the onode cache "
                        f"{misses} times ({epoch1 - epoch0} new osdmap epoch(s) meanwhile); an absent "
                        "entry should answer all but the first")
    if not cache_absent and misses < READS:
        raise NodeError(f"{setting}: {READS} reads of one missing object missed the onode cache only "
                        f"{misses} times with absent entries off")
    epochs = f" ({epoch1 - epoch0} new osdmap epoch(s) stored meanwhile)" if epoch1 > epoch0 else ""
    steps.append(f"{setting}: {READS} reads of a missing object: {misses} onode cache misses, {hits} hits{epochs}")

    store.missing("read before the write", f"{tag}-new")
    store.put(f"{tag}-new")
    store.check("written after a read found it missing", f"{tag}-new")

    store.put(f"{tag}-again")
    store.remove(f"{tag}-again")
    store.missing("read after remove", f"{tag}-again")
    store.put(f"{tag}-again")
    store.check("written again after remove", f"{tag}-again")
    store.put(f"{tag}-gone")
    store.remove(f"{tag}-gone")
    store.missing("removed object", f"{tag}-gone")

    store.put(f"{tag}-src", COPY_SIZE)
    store.missing("read of the copy's target", f"{tag}-dst")
    store.rados("cp", f"{tag}-src", f"{tag}-dst", timeout=300)
    store.sums[f"{tag}-dst"], store.sizes[f"{tag}-dst"] = store.sums[f"{tag}-src"], COPY_SIZE
    store.check("copied through a temporary object", f"{tag}-dst")

    store.put(f"{tag}-snapped")
    store.rados("mksnap", f"{tag}-snap")
    old = store.sums[f"{tag}-snapped"]
    store.put(f"{tag}-snapped")  # creates the clone
    store.check("head after the overwrite", f"{tag}-snapped")
    store.check("snapshot after the overwrite", f"{tag}-snapped", snap=f"{tag}-snap", want=old)
    steps.append(f"{setting}: written after a miss, rewritten after remove, copied to a missed name "
                 f"({COPY_SIZE} B in {COPY_CHUNK} B chunks), cloned by a snapshot: all read back")
    return steps


def absent_entries_dropped(cluster: Cluster, store: Store) -> str:
    """Absent entries switched off at run time: those already cached go."""
    set_cache_absent(cluster, True)
    store.missing("an object remembered absent", "dropped-never")
    store.missing("an object remembered absent, again", "dropped-never")
    set_cache_absent(cluster, False)
    hits0, misses0 = onode_counters(cluster)
    store.missing("the first read once absent entries are off", "dropped-never")
    hits1, misses1 = onode_counters(cluster)
    if misses1 == misses0:
        raise NodeError(f"absent entries switched off at run time: the object remembered absent was still "
                        f"answered from the onode cache ({hits1 - hits0} hits, no miss)")
    set_cache_absent(cluster, True)
    return ("absent entries switched off at run time: the entry cached before is gone "
            f"(the next read missed the onode cache {misses1 - misses0} time(s))")


def onode_cache_osd(spec: NodeSpec, state: Path, steps: list) -> None:
    conf = {"osd": {"osd_copyfrom_max_chunk": str(COPY_CHUNK)}}
    cluster = Cluster(dataclasses.replace(spec, state_dir=str(state), conf=conf))
    try:
        cluster.up()
        store = Store(cluster, state)
        for i, cache_absent in enumerate(ROUNDS):
            steps += one_round(cluster, store, f"r{i}", cache_absent)
        steps.append(absent_entries_dropped(cluster, store))
        steps.append(injection_at_run_time_ignored(cluster, store))
        steps.append(injection_from_central_configuration_ignored(cluster, store))
        steps.append(injection_at_start_aborts(cluster))
        cluster.stop_osd()
        cluster.start_osd()
        for name in sorted(store.sums):
            store.check("after an OSD restart", name)
        for i in range(len(ROUNDS)):
            store.missing("after an OSD restart", f"r{i}-gone")
        steps.append(f"after an OSD restart: all {len(store.sums)} objects read back, removed ones stay missing")
    finally:
        cluster.down()


def onode_cache_checks(spec: NodeSpec, state: Path, steps: list) -> None:
    onode_cache_osd(dataclasses.replace(spec, port=spec.spare_ports[0], v1_port=spec.spare_ports[1]),
                    state / "osd", steps)


def main():
    return candidate_check_main("bluestore_onode_cache_absent", "bluestore-onode-lookup-once.patch",
                                onode_cache_checks)


if __name__ == "__main__":
    sys.exit(main())
