"""Runs inside a throwaway overlay of the trixie runtime root (ci/onode-cache-test).

Checks patches/bluestore-onode-lookup-once.patch on a one-OSD cluster running
the candidate's ceph-osd: absent objects remembered in the onode cache
(bluestore_onode_cache_absent) and the key self-check behind an option
(bluestore_onode_key_self_check). Each round sets the options at run time, as
an operator would (`ceph tell osd.0 config set`), then:
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
  7. with a key error injected (bluestore_debug_inject_onode_key_error), a
     new object's write makes the OSD abort in the key self-check, before
     the key is stored; restarted, the OSD takes the client's resent write
     under the right key, and the object reads back.
Last, the OSD restarts and every object reads back as last written.
Every wait is bounded; a step that fails is named in the record (record.json).
"""
import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from .checks import Objects, candidate_check_main
from .cluster import Cluster
from .cluster_admin import newest_map
from .record import NodeError
from .shell import sh
from .spec import NodeSpec

READS = 20
# copy-from moves this much per round trip; an object larger than one chunk is
# copied into a temporary object, renamed into place at the end
COPY_CHUNK = 65536
COPY_SIZE = 5 * COPY_CHUNK
# (cache_absent, key_self_check) per round: the default first, then each switch
ROUNDS = [(True, True), (False, True), (True, False)]
# the self-check must stop the OSD well within this
ABORT_WAIT = 120


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


def set_options(cluster: Cluster, cache_absent: bool, self_check: bool) -> None:
    for key, value in (("bluestore_onode_cache_absent", cache_absent),
                       ("bluestore_onode_key_self_check", self_check)):
        cluster.ceph("tell", "osd.0", "config", "set", key, str(value).lower())
        got = cluster.ceph("tell", "osd.0", "config", "get", key).stdout
        if json.loads(got).get(key) != str(value).lower():
            raise NodeError(f"osd.0 did not take {key} = {value}: {got.strip()}")


def one_round(cluster: Cluster, store: Store, tag: str, cache_absent: bool, self_check: bool) -> list[str]:
    set_options(cluster, cache_absent, self_check)
    setting = f"cache_absent={cache_absent}, key_self_check={self_check}"
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
    set_options(cluster, True, True)
    store.missing("an object remembered absent", "dropped-never")
    store.missing("an object remembered absent, again", "dropped-never")
    set_options(cluster, False, True)
    hits0, misses0 = onode_counters(cluster)
    store.missing("the first read once absent entries are off", "dropped-never")
    hits1, misses1 = onode_counters(cluster)
    if misses1 == misses0:
        raise NodeError(f"absent entries switched off at run time: the object remembered absent was still "
                        f"answered from the onode cache ({hits1 - hits0} hits, no miss)")
    set_options(cluster, True, True)
    return ("absent entries switched off at run time: the entry cached before is gone "
            f"(the next read missed the onode cache {misses1 - misses0} time(s))")


def key_self_check_stops_a_bad_key(cluster: Cluster, store: Store) -> str:
    """A corrupted key for a new object: the OSD aborts before storing it; the
    client's write, resent to the restarted OSD, is stored under the right key."""
    name = "self-check-new"
    data = os.urandom(4096)
    src = store.work / f"{name}.put"
    src.write_bytes(data)
    cluster.ceph("tell", "osd.0", "config", "set", "bluestore_debug_inject_onode_key_error", "true")
    osd = cluster.procs["osd.0"]
    # the write waits for the OSD (its retries span the restart): in the background
    writer = subprocess.Popen([*map(str, cluster.rados), "put", name, str(src)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + ABORT_WAIT
        while osd.poll() is None:
            if writer.poll() is not None:
                raise NodeError("a write with a corrupted onode key was acknowledged: the key self-check did not "
                                f"stop it before it was stored (rados put exit {writer.returncode})")
            if time.monotonic() > deadline:
                raise NodeError(f"with a key error injected, the OSD neither aborted nor acknowledged the write "
                                f"within {ABORT_WAIT} s")
            try:
                osd.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass
        cluster.procs.pop("osd.0")
        tail = "\n".join(cluster.log_tail("osd.0", 60))
        if "t == oid" not in tail:
            raise NodeError(f"the OSD exited (status {osd.returncode}), but not in the key self-check: "
                            f"{cluster.cause()}")
        cluster.start_osd()  # the injection was a run-time setting: gone
        out, _ = writer.communicate(timeout=300)
        if writer.returncode != 0:
            raise NodeError(f"the write resent to the restarted OSD failed: {out.strip()[-300:]}")
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
        src.unlink()
    store.sums[name], store.sizes[name] = hashlib.sha256(data).hexdigest(), len(data)
    store.check("written after the self-check stopped its corrupted key", name)
    return ("a corrupted onode key: the OSD aborted in the key self-check before storing it; restarted, it "
            "stored the client's resent write under the right key, which reads back")


def onode_cache_osd(spec: NodeSpec, state: Path, steps: list) -> None:
    conf = {"osd": {"osd_copyfrom_max_chunk": str(COPY_CHUNK)}}
    cluster = Cluster(dataclasses.replace(spec, state_dir=str(state), conf=conf))
    try:
        cluster.up()
        store = Store(cluster, state)
        for i, (cache_absent, self_check) in enumerate(ROUNDS):
            steps += one_round(cluster, store, f"r{i}", cache_absent, self_check)
        steps.append(absent_entries_dropped(cluster, store))
        steps.append(key_self_check_stops_a_bad_key(cluster, store))
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
