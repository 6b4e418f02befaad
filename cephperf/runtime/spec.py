"""The node contract: what the host writes and every node-side run reads.

One definition, imported on both sides (the runtime package is stdlib only,
so the host can import it too). The host saves it as JSON in the run's state
directory; the node loads it, and an unknown field is an error on both sides.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path


@dataclass
class NodeSpec:
    # Where the run keeps its cluster, logs and record (a host path, bound into the root).
    state_dir: str
    # The mon's msgr v2 and v1 ports on 127.0.0.1; spare_ports for a second cluster.
    port: int = 0
    v1_port: int = 0
    spare_ports: list[int] = field(default_factory=list)
    device_gib: float = 4
    # The OSDs' device layout (bench/layouts.toml, one table resolved, with its
    # name): what the host makes for them and what the running OSD must report.
    layout: dict = field(default_factory=dict)
    # Block devices the host attached for the layout, one per OSD in id order
    # (cephperf/loop_devices.py); empty: BlueStore's own file-backed device.
    block_devices: list[str] = field(default_factory=list)
    # OSDs on this host, each with its own device; the pool's size is their
    # number (replication between them), so the messenger carries replica ops.
    osds: int = 1
    # The PGs of the cluster's pool, "bench".
    pool_pgs: int = 32
    # ceph.conf sections set from mkfs on, and [osd] options set once the OSD is up.
    conf: dict = field(default_factory=dict)
    runtime_conf: dict = field(default_factory=dict)
    mgr: bool = False
    # What the side runs: .debs laid over the stock packages, an apt line, or a built ceph-osd.
    debs: list[str] = field(default_factory=list)
    apt_line: str | None = None
    osd_binary: str | None = None
    ld_library_path: str | None = None
    # Extra environment of ceph-osd (ci/pgo-train: GCOV_PREFIX, where an
    # instrumented OSD writes its counts).
    osd_environment: dict = field(default_factory=dict)
    # The benchmark of a round (a profile's [bench] table) and how it is watched.
    bench: dict = field(default_factory=dict)
    io_mock: bool = False
    stall_seconds: int = 20
    # CPU placement, {"osd": [1], "others": [0]}: ceph-osd on the first CPUs,
    # the mon, the mgr, the benchmark client and the node process on the
    # others (cephperf/runtime/osd_stats.py placement_plan). Empty: unpinned.
    cpu_pinning: dict = field(default_factory=dict)
    # A SCHED_IDLE busy loop on each CPU the round may use, from the cluster's
    # start to its end (cephperf/runtime/poll_idle.py says why). Native rounds only.
    poll_idle: bool = False
    perf: bool = False
    threads: bool = False
    progress: bool = False
    # "callgrind": ceph-osd runs under callgrind, instrumented over the window
    # only, after `warmup_seconds` of the same workload (instructions per op).
    # Native rados rounds run the same warm-up before their window too.
    instrument: str | None = None
    # Counted rounds: before the window, the idle cluster counted for this
    # long (no client I/O), so that the report can say which share of each
    # op's figure the idle cluster spends anyway (instrument.idle_share).
    counted_idle_seconds: int = 0
    warmup_seconds: int = 0
    # Write profiles count ops, not seconds: the warm-up and the window write
    # exactly this many objects each, under fixed object names (below).
    warmup_ops: int = 0
    window_ops: int = 0
    # An existing cluster to measure instead of bringing one up: conf, keyring, pool.
    external: dict | None = None

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, path: Path) -> "NodeSpec":
        data = json.loads(Path(path).read_text())
        unknown = set(data) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"{path}: fields the node contract does not define: {sorted(unknown)}")
        return cls(**data)


# Every node-side run leaves its result here, in its state directory.
RECORD = "record.json"
