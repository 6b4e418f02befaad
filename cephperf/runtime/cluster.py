"""Bring-up and teardown of the single-node cluster, inside the runtime root.

One mon (msgr v2 and v1 on 127.0.0.1) and one OSD, BlueStore on a
file-backed device, a size-1 pool; a mgr only when the spec asks (the
IO-mock test reads a health warning); no cephadm, no systemd. The daemons are
children of this process and are stopped by it; the namespaces they run in
make sure nothing outlives it.
"""
from __future__ import annotations

import json
import os
import signal
import re
import subprocess
import uuid
from pathlib import Path
from typing import NamedTuple

from . import instrument, poll_idle
from .mounts import unmount
from .daemon_log import cause, exit_status
from .osd_stats import cpu_list, placement_plan
from .record import NodeError
from .shell import log, sh
from .cluster_conf import base_conf, conf_value, debug_subsystems
from .spec import NodeSpec


# An OSD's ceph-osd and its environment (a rolling upgrade's cluster runs two builds: cluster_test.py).
OsdBuild = NamedTuple("OsdBuild", [("binary", str), ("env", dict)])


class Cluster:
    def __init__(self, spec: NodeSpec):
        self.spec = spec
        self.state = Path(spec.state_dir)
        self.conf = self.state / "ceph.conf"
        self.procs = {}
        self.mounts = []  # ceph-fuse mounts (cephperf/runtime/cephfs.py), unmounted first at teardown
        self.osd_bin = spec.osd_binary or "/usr/bin/ceph-osd"
        if spec.external:  # an existing cluster: no bring-up, its own conf, keyring and pool
            ext = spec.external
            self.conf = Path(ext["conf"])
            self.rados = ["rados", "-c", ext["conf"], "-k", ext["keyring"], "-p", ext["pool"]]
        else:
            self.rados = ["rados", "-c", str(self.conf), "-p", "bench"]
        self.osd_env = dict(os.environ)
        if spec.ld_library_path:
            self.osd_env["LD_LIBRARY_PATH"] = spec.ld_library_path
        self.osd_env.update(spec.osd_environment)
        self.osd_builds: dict[int, OsdBuild] = {}  # where an OSD runs another build than osd_bin
        # pin()'s {"osd": CPUs, "others": CPUs} (None: unpinned); the last client's CPUs (measure.py)
        self.placement: dict | None = None
        self.client_cpus: set[int] | None = None

    def ceph(self, *args, timeout=60):
        auth = ["-k", self.spec.external["keyring"]] if self.spec.external else []
        return sh("ceph", "-c", self.conf, *auth, *args, timeout=timeout)

    def write_conf(self):
        conf = base_conf(self.state, self.spec)
        layers = instrument.COUNTED_CONF if self.spec.instrument else ()
        for section, values in (kv for layer in [*layers, self.spec.conf] for kv in layer.items()):
            for k, v in values.items():
                names = debug_subsystems() if k == "debug_*" else [k]  # every debug subsystem this build knows
                for name in names:
                    conf.setdefault(section, {})[name] = conf_value(v)
        self.conf.write_text("".join(f"[{sec}]\n" + "".join(f"{k} = {v}\n" for k, v in vals.items()) + "\n"
                                     for sec, vals in conf.items()))

    def start(self, name, argv, env=None):
        logf = open(self.state / "log" / f"{name}.stdout", "w")
        self.procs[name] = subprocess.Popen([str(a) for a in argv], stdout=logf, stderr=subprocess.STDOUT,
                                            env=env or os.environ)

    def osd_build(self, osd_id: int) -> OsdBuild:
        return self.osd_builds.get(osd_id) or OsdBuild(self.osd_bin, self.osd_env)

    def osd_argv(self, osd_id: int) -> list:
        argv = [self.osd_build(osd_id).binary, "-c", self.conf, "-i", str(osd_id), "-f"]
        if self.spec.instrument == "callgrind":
            argv = instrument.wrap(argv, self.callgrind_out_of(osd_id))
        # pinned before exec, so every thread the OSD makes inherits it (taskset execs: the pid is the OSD's)
        return ["taskset", "--cpu-list", cpu_list(self.placement["osd"]), *argv] if self.placement else argv

    def start_osd(self, osd_id: int = 0):
        self.start(f"osd.{osd_id}", self.osd_argv(osd_id), env=self.osd_build(osd_id).env)
        return self.procs[f"osd.{osd_id}"]

    def osd_names(self) -> list[str]:
        return [name for name in self.procs if name.startswith("osd.")]

    def osd_pids(self) -> list[int]:
        """Every OSD's pid: the CPU of a replicated write is spent in all of them."""
        return [self.procs[name].pid for name in self.osd_names()]

    @property
    def callgrind_out(self) -> Path:
        return self.callgrind_out_of(0)

    def callgrind_out_of(self, osd_id: int) -> Path:
        """Where osd.N's callgrind dumps go (osd.0's where a one-OSD round's always went)."""
        return self.state / ("callgrind.out" if osd_id == 0 else f"callgrind.osd{osd_id}.out")

    def stop_osd(self, osd_id: int = 0) -> None:
        """Stop the OSD, which must exit 0: any other end is a failure on its way
        down (a crash in shutdown's last flush, an assert in umount)."""
        proc = self.procs.pop(name := f"osd.{osd_id}")
        proc.terminate()
        status = proc.wait(timeout=120)
        if status != 0:
            raise NodeError(f"{name} exited with {exit_status(status)} when stopped: {self.cause(name)}")

    def osd_pid(self) -> int:
        return self.procs["osd.0"].pid

    def start_mon(self):
        s = self.state
        fsid = re.search(r"fsid = (\S+)", self.conf.read_text()).group(1)
        sh("monmaptool", "--create", "--fsid", fsid, "--addv", "a",
           f"[v2:127.0.0.1:{self.spec.port},v1:127.0.0.1:{self.spec.v1_port}]", s / "monmap")
        sh("ceph-authtool", "--create-keyring", s / "mon.keyring", "--gen-key", "-n", "mon.", "--cap", "mon", "allow *")
        sh("ceph-mon", "-c", self.conf, "--mkfs", "-i", "a", "--monmap", s / "monmap", "--keyring", s / "mon.keyring")
        self.start("mon.a", ["ceph-mon", "-c", self.conf, "-i", "a", "-f"])
        self.wait_for_mon()
        if self.spec.mgr:  # only what reads health checks from the OSD needs one
            (s / "mgr" / "ceph-x").mkdir(parents=True, exist_ok=True)
            self.start("mgr.x", ["ceph-mgr", "-c", self.conf, "-i", "x", "-f"])

    def wait_for_mon(self):
        """Block until the mon answers (bounded); a mon dead at start (ENOSPC:
        daemon_log.ERRNO_EXITS) is named with its exit status, not a timeout."""
        try:
            self.ceph("--connect-timeout", "60", "mon", "stat", timeout=90)
        except NodeError:
            self.check_alive()
            raise

    def make_osd(self):
        for n in range(self.spec.osds):
            osd_uuid = str(uuid.uuid4())
            osd_id = self.ceph("osd", "new", osd_uuid).stdout.strip()
            if osd_id != str(n):
                raise NodeError(f"expected osd.{n}, the mon allocated osd.{osd_id}")
            (self.state / "osd" / f"ceph-{n}").mkdir(parents=True, exist_ok=True)
            binary, env = self.osd_build(n)
            sh(binary, "-c", self.conf, "-i", str(n), "--mkfs", "--osd-uuid", osd_uuid, timeout=300, env=env)
            self.start_osd(n)
        if self.spec.instrument and self.spec.osds > 1:
            # counted per role: osd.0 the primary of every PG, the others its replicas
            for n in range(1, self.spec.osds):
                self.ceph("osd", "primary-affinity", f"osd.{n}", "0")

    def make_pool(self):
        self.ceph("osd", "pool", "create", "bench", *[str(self.spec.pool_pgs)] * 2, "replicated")
        self.ceph("osd", "pool", "set", "bench", "size", str(self.spec.osds), "--yes-i-really-mean-it")
        # an RBD image's pool is an rbd pool, as `rbd pool init` makes it
        app = "rbd" if self.spec.bench.get("tool") == "fio-rbd" else "rados"
        self.ceph("osd", "pool", "application", "enable", "bench", app)
        # A write blocks until the pool's PG is active: the wait is the write itself.
        try:
            sh("rados", "-c", self.conf, "-p", "bench", "put", "ceph-perf-probe", self.conf, timeout=180)
        except NodeError as e:
            raise NodeError(f"the pool never became writable: {e}; {self.cause()}")
        sh("rados", "-c", self.conf, "-p", "bench", "rm", "ceph-perf-probe", timeout=60)

    def pin(self):
        """spec.cpu_pinning applied, or the run fails: this process, and so the
        mon, mgr and clients it starts, on the others' CPUs (osd_argv: the OSD's)."""
        try:
            self.placement = placement_plan(self.spec.cpu_pinning, os.sched_getaffinity(0))
            os.sched_setaffinity(0, self.placement["others"])  # before any thread or child is made
        except (ValueError, OSError) as e:
            raise NodeError(f"CPU pinning asked for but not applied: {e}")
        log(f"CPU pinning: ceph-osd on {cpu_list(self.placement['osd'])}, mon, mgr and clients on "
            f"{cpu_list(self.placement['others'])}")

    def up(self):
        for d in ("run", "log", "mon/ceph-a", "osd/ceph-0"):
            (self.state / d).mkdir(parents=True, exist_ok=True)
        if self.spec.cpu_pinning:
            self.pin()
        self.write_conf()
        self.start_mon()
        self.make_osd()
        self.make_pool()
        self.check_alive()
        # Options that only work once the OSD is up (the IO-mock switches: with
        # them set from mkfs on, the pool never becomes active).
        for k, v in self.spec.runtime_conf.get("osd", {}).items():
            self.ceph("tell", "osd.0", "config", "set", k, conf_value(v))
            log(f"osd.0: {k} = {v} set at run time")
        if self.spec.poll_idle:
            poll_idle.start_loops(self)
        osds = "osd.0" if self.spec.osds == 1 else f"osd.0-{self.spec.osds - 1}, pool size {self.spec.osds}"
        log(f"cluster up: mon v2 127.0.0.1:{self.spec.port}, {osds} ({self.osd_bin}), "
            f"{self.spec.device_gib} GiB device{'s' if self.spec.osds > 1 else ''}")

    def check_alive(self):
        for name, p in self.procs.items():
            if p.poll() is not None:
                raise NodeError(f"{name} exited with {exit_status(p.returncode)}: {self.cause(name)}")

    def log_tail(self, name, n=15):
        lines = []
        for f in (self.state / "log" / f"{name}.log", self.state / "log" / f"{name}.stdout"):
            if f.exists():
                with open(f, "rb") as fh:
                    fh.seek(max(0, f.stat().st_size - 200_000))
                    lines += fh.read().decode(errors="replace").splitlines()[-n:]
        return lines[-n:]

    def cause(self, name="osd.0"):
        return cause(self.log_tail(name, 40), self.log_tail(name, 15), name)

    def down(self):
        # A mount goes first: detached, it never waits on the daemons it
        # needs; then its FUSE daemon, whose end fails every request still
        # waiting on it (a writer blocked on a full OSD), so that nothing hangs.
        for mnt in reversed(self.mounts):
            unmount(mnt)
        if self.mounts:
            for pid in self.fuse_daemons():
                os.kill(pid, signal.SIGKILL)
        for name in reversed(list(self.procs)):
            p = self.procs[name]
            if p.poll() is None:
                p.terminate()
        for name, p in self.procs.items():
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def fuse_daemons(self) -> list[int]:
        """ceph-fuse processes of this cluster (they run in the background, not as our children)."""
        found = []
        for d in Path("/proc").iterdir():
            try:
                argv = (d / "cmdline").read_bytes().decode(errors="replace").split("\0")
            except OSError:
                continue
            if d.name.isdigit() and os.path.basename(argv[0]) == "ceph-fuse" and str(self.conf) in argv:
                found.append(int(d.name))
        return found

    def osd_metadata(self) -> dict:
        """What the OSD reports of itself that bears on its numbers (rotational flags included)."""
        md = json.loads(self.ceph("osd", "metadata", "0", "--format", "json").stdout)
        return {k: md.get(k) for k in OSD_METADATA_KEPT if k in md}

    def osdmap_full(self):
        try:
            dump = json.loads(self.ceph("osd", "dump", "--format", "json", timeout=20).stdout)
        except (NodeError, ValueError, subprocess.TimeoutExpired):
            return False
        return "full" in dump.get("flags", "") or any("full" in o.get("state", []) for o in dump.get("osds", []))


OSD_METADATA_KEPT = ("ceph_version", "osd_objectstore", "bluestore_bdev_type", "bluestore_bdev_rotational",
                     "rotational", "journal_rotational", "bluestore_bdev_size", "kernel_version", "cpu",
                     "mem_total_kb", "osd_data")
