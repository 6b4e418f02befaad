"""The two model-checked clients of ci/rados-model-test (rados_model.py runs them).

ceph_test_rados, upstream's: every object's contents, xattrs and omap as
its own model says they must be, checked on each read; it aborts on a
difference. Its arguments are built as teuthology's rados task
(qa/tasks/rados.py) builds them.

The omap model, ours, through python3-rados: random write ops on dozens of
objects of one pool, each of one to `max_subops` sub-ops: omap sets, key
removals, key-range removals (remove_omap_range2) and clears. Several in one
op put keys under an object's omap prefix before and after a range deletion
of it in one BlueStore transaction, one RocksDB write batch: the
interleaving RocksDB 7.9's memtable insert hint gets wrong
(facebook/rocksdb#5118). The model applies an op's sub-ops in order once the
OSD has acknowledged it; a read-back compares every object's whole omap
with it, key by key and value by value.

The omap model holds only with DeleteRange forced: below its threshold
BlueStore removes a range (or clears) key by key, as an iterator over
RocksDB finds them, and so misses keys set earlier in the same transaction
(upstream's way since 2017, ceph/ceph#18635): measured on Debian's 18.2.7
at the default threshold, an op that set k00060 and then removed
[k00059, k00197) left k00060 behind.
"""
from __future__ import annotations

import contextlib
import os
import random
import re
import subprocess
from collections import Counter

import rados

from .cluster import Cluster
from .record import NodeError

# each op ceph_test_rados starts prints a line "N: ...", and it ends with "N errors."
OP_LINE = re.compile(rb"^(\d+): ", re.M)
ERRORS_LINE = re.compile(r"^(\d+) errors\.$", re.M)
OP_KIND = re.compile(r"^(?:\d+: (write initial|write \(excl\)|read|write|delete|setattr|rmattr|snap_create|"
                     r"snap_remove|rollback|copy_from)|(append) oid( \(excl\))?)(?= |$)", re.M)


def test_rados_argv(conf: dict, pool: str) -> list[str]:
    """ceph_test_rados' arguments as teuthology's rados task (qa/tasks/rados.py) builds them."""
    size = conf["object_size"]
    # an erasure-coded pool without overwrites: no omap, and appends instead of writes
    argv = ["ceph_test_rados", *(["--no-omap", "--ec-pool"] if conf.get("ec_pool") else []), "--pool", pool,
            "--max-ops", conf["ops"], "--objects", conf["objects"], "--max-in-flight", conf["max_in_flight"],
            "--size", size,
            "--min-stride-size", conf.get("min_stride_size", size // 10),
            "--max-stride-size", conf.get("max_stride_size", size // 5), "--max-seconds", 0]
    weights = dict(conf["op_weights"])
    if conf.get("write_append_excl", True):
        for op in ("write", "append"):
            if op in weights:
                weights[op] //= 2
                weights[f"{op}_excl"] = weights[op]
    for op, weight in weights.items():
        argv += ["--op", op, weight]
    return [str(a) for a in argv]


class TestRados:
    """ceph_test_rados in the background, its output in the cluster's log directory."""

    def __init__(self, cluster: Cluster, conf: dict, pool: str, name: str = "ceph_test_rados"):
        self.path = cluster.state / "log" / f"{name}.log"
        self.ops, self.started, self.offset = conf["ops"], 0, 0
        with open(self.path, "wb") as out:
            self.proc = subprocess.Popen(test_rados_argv(conf, pool), stdout=out, stderr=subprocess.STDOUT,
                                         env={**os.environ, "CEPH_CONF": str(cluster.conf)})

    def progress(self) -> int:
        """The highest op number it has started, read from its new output."""
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            chunk = f.read()
        whole = chunk[:chunk.rfind(b"\n") + 1]  # a line still being written is read next time
        self.offset += len(whole)
        self.started = max([self.started, *(int(n) for n in OP_LINE.findall(whole))])
        return self.started

    def running(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.running():
            self.proc.kill()
        self.proc.wait()

    def check(self) -> dict:
        """Once it ended: its op counts; it must have exited 0 and counted no error."""
        output = self.path.read_text(errors="replace")
        errors = ERRORS_LINE.findall(output)
        if self.proc.returncode != 0 or errors != ["0"]:
            tail = " | ".join(output.strip().splitlines()[-12:])
            raise NodeError(f"ceph_test_rados failed (exit {self.proc.returncode}, "
                            f"{errors[-1] + ' errors' if errors else 'no error count'}): {tail[-1500:]}")
        return op_counts(output)


def op_counts(output: str) -> dict:
    """How many ops of each kind ceph_test_rados started, from the line each prints
    ("N: read oid 3 ...", "N: write (excl) oid ..."; an append's line has no number)."""
    kinds = Counter(m.group(1) or m.group(2) + (m.group(3) or "") for m in OP_KIND.finditer(output))
    return dict(sorted(kinds.items()))


# omap entries per read op; an object holds at most key_space of them
READ_PAGE = 512


@contextlib.contextmanager
def pool_ioctx(cluster: Cluster, pool: str, op_timeout: int):
    """An ioctx on the pool whose ops fail after op_timeout seconds (a dead OSD
    otherwise blocks them for ever)."""
    client = rados.Rados(conffile=str(cluster.conf), conf={"rados_osd_op_timeout": str(op_timeout),
                                                             "rados_mon_op_timeout": str(op_timeout),
                                                             "client_mount_timeout": str(op_timeout)})
    client.connect()
    try:
        ioctx = client.open_ioctx(pool)
        try:
            yield ioctx
        finally:
            ioctx.close()
    finally:
        client.shutdown()


class OmapModel:
    """Every key and value the objects' omaps must hold, and the ops that got them there."""

    def __init__(self, cluster: Cluster, ioctx, conf: dict, rng: random.Random):
        self.cluster, self.ioctx, self.conf, self.rng = cluster, ioctx, conf, rng
        self.omap = {f"omap-model-{n:03d}": {} for n in range(conf["objects"])}
        self.kinds = list(conf["op_weights"])
        self.weights = [conf["op_weights"][k] for k in self.kinds]
        self.ops, self.subops, self.keys_checked = 0, Counter(), 0
        # each object's ops, numbered, to name the ones that led to a difference
        self.history = {oid: [] for oid in self.omap}

    def key(self, i: int) -> str:
        return f"k{i:05d}"

    def random_keys(self, most: int) -> list[str]:
        n = self.rng.randint(1, min(most, self.conf["key_space"]))
        return [self.key(i) for i in sorted(self.rng.sample(range(self.conf["key_space"]), n))]

    def random_subop(self) -> tuple:
        kind = self.rng.choices(self.kinds, self.weights)[0]
        if kind == "set":
            keys = self.random_keys(self.conf["max_keys_per_set"])
            return kind, keys, [self.rng.randbytes(self.rng.randint(0, self.conf["max_value_bytes"])) for _ in keys]
        if kind == "remove_keys":
            return kind, self.random_keys(self.conf["max_keys_per_set"])
        if kind == "remove_range":
            first = self.rng.randrange(self.conf["key_space"])
            last = self.rng.randint(first + 1, self.conf["key_space"])
            return kind, self.key(first), self.key(last)  # [first, last): k<key_space> is past every key
        return (kind,)

    def create(self) -> None:
        # a removal or clear on a missing object is ENOENT: every object exists first
        for oid in self.omap:
            self.write(oid, "create", lambda op: op.new(rados.LIBRADOS_CREATE_IDEMPOTENT))

    def write(self, oid: str, what: str, build) -> None:
        try:
            with rados.WriteOpCtx() as op:
                build(op)
                self.ioctx.operate_write_op(op, oid)
        except rados.Error as e:
            self.cluster.check_alive()  # a dead OSD is named with its cause, not as a timeout
            raise NodeError(f"{what} on {oid} failed: {type(e).__name__}: {e}")

    def one_op(self) -> None:
        oid = self.rng.choice(list(self.omap))
        subops = [self.random_subop() for _ in range(self.rng.randint(1, self.conf["max_subops"]))]

        def build(op):
            for kind, *args in subops:
                if kind == "set":
                    self.ioctx.set_omap(op, tuple(args[0]), tuple(args[1]))
                elif kind == "remove_keys":
                    self.ioctx.remove_omap_keys(op, tuple(args[0]))
                elif kind == "remove_range":
                    self.ioctx.remove_omap_range2(op, args[0], args[1])
                else:
                    self.ioctx.clear_omap(op)

        self.write(oid, "+".join(s[0] for s in subops), build)
        model = self.omap[oid]
        for kind, *args in subops:
            if kind == "set":
                model.update(zip(args[0], args[1]))
            elif kind == "remove_keys":
                for k in args[0]:
                    model.pop(k, None)
            elif kind == "remove_range":
                for k in [k for k in model if args[0] <= k < args[1]]:
                    del model[k]
            else:
                model.clear()
        self.ops += 1
        self.subops.update(s[0] for s in subops)
        self.history[oid].append((self.ops, subops))

    def run(self, ops: int) -> None:
        for _ in range(ops):
            self.one_op()

    def read(self, oid: str) -> dict:
        got, after = {}, ""
        while True:
            try:
                with rados.ReadOpCtx() as op:
                    it, ret = self.ioctx.get_omap_vals(op, after, "", READ_PAGE)
                    self.ioctx.operate_read_op(op, oid)
                    page = dict(it)
            except rados.Error as e:
                self.cluster.check_alive()
                raise NodeError(f"reading the omap of {oid} failed: {type(e).__name__}: {e}")
            if ret != 0:
                raise NodeError(f"reading the omap of {oid}: omap_get_vals returned {ret}")
            # python-rados gives None for an empty value (librados' c_str() of an empty bufferlist)
            got.update((k, b"" if v is None else v) for k, v in page.items())
            if len(page) < READ_PAGE:
                return got
            after = max(page)

    def verify(self, when: str) -> int:
        """Every object's omap read back equals the model; returns the keys compared."""
        keys = 0
        for oid, want in self.omap.items():
            got = self.read(oid)
            if got != want:
                first = min(k for k in set(want) | set(got) if want.get(k) != got.get(k))
                raise NodeError(f"{when}: the omap of {oid} differs from the model after {self.ops} ops: "
                                f"{difference(want, got)}; the last ops on {first}: "
                                f"{touching(self.history[oid], first)}")
            keys += len(want)
        self.keys_checked += keys
        return keys


def difference(want: dict, got: dict) -> str:
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    changed = sorted(k for k in set(want) & set(got) if want[k] != got[k])
    parts = [f"{len(keys)} {what} ({', '.join(keys[:5])}{', ...' if len(keys) > 5 else ''})"
             for what, keys in (("keys missing", missing), ("keys that should be gone", extra),
                                ("values wrong", changed)) if keys]
    return "; ".join(parts)


def touching(history: list, key: str, last: int = 3) -> str:
    """The last ops of an object's history that set or removed `key`, each with all its sub-ops."""
    def touches(subop):
        kind, *args = subop
        return (kind == "clear" or (kind == "remove_range" and args[0] <= key < args[1])
                or (kind in ("set", "remove_keys") and key in args[0]))

    def show(subop):
        kind, *args = subop
        if kind == "remove_range":
            return f"remove_range [{args[0]}, {args[1]})"
        if kind == "clear":
            return kind
        mark = f", {key}" if key in args[0] else ""
        return f"{kind} {len(args[0])} keys{mark}"

    ops = [(n, subops) for n, subops in history if any(touches(s) for s in subops)][-last:]
    return "; ".join(f"op {n}: " + " + ".join(show(s) for s in subops) for n, subops in ops) or "none"
