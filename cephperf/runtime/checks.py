"""Checks on the node side: objects with known contents, installed versions,
the packages a side runs, and which IO-mock mechanism a ceph-osd offers."""
from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from .cluster import Cluster
from .shell import log, sh
from .record import NodeError, recorded
from .spec import NodeSpec

OBJECT_SIZES = [1, 4096, 65536, 1 << 20, 4 << 20]


class Objects:
    """Objects of 1 B to 4 MiB with known contents, written and checked with rados."""

    def __init__(self, cluster: Cluster, work):
        self.cluster, self.work, self.sums, self.sizes = cluster, Path(work), {}, {}

    def put(self, name: str, size: int = 4096) -> None:
        data = os.urandom(size)
        path = self.work / f"{name}.put"
        path.write_bytes(data)
        sh(*self.cluster.rados, "put", name, path, timeout=180)
        path.unlink()
        self.sums[name], self.sizes[name] = hashlib.sha256(data).hexdigest(), size

    def read_sum(self, name: str, snap: str | None = None) -> str:
        """sha256 of what the object (at a pool snapshot) reads back."""
        out = self.work / f"{name}.read"
        # a read blocks until the PG is active again: the wait is the read
        sh(*self.cluster.rados, *(["-s", snap] if snap else []), "get", name, out, timeout=300)
        got = hashlib.sha256(out.read_bytes()).hexdigest()
        out.unlink()
        return got

    def write(self, tag):
        for i, size in enumerate(OBJECT_SIZES):
            self.put(f"{tag}-{i}-{size}", size)

    def verify(self, step, names=None, zeros=False):
        """Every object listed and read back intact (or, zeros=True, as that many zero bytes)."""
        names = list(names or self.sums)
        listed = set(sh(*self.cluster.rados, "ls", timeout=180).stdout.split())
        missing = set(names) - listed
        if missing:
            raise NodeError(f"{step}: objects missing from the pool listing: {sorted(missing)}")
        for name in names:
            want = hashlib.sha256(bytes(self.sizes[name])).hexdigest() if zeros else self.sums[name]
            got = self.read_sum(name)
            if got != want:
                what = f"{self.sizes[name]} zero bytes" if zeros else "as written"
                raise NodeError(f"{step}: object {name} does not read back {what} (sha256 {got})")
        log(f"{step}: {len(names)} objects read back {'as zeros' if zeros else 'intact'}")
        return len(names)


def installed_version(pkg):
    return sh("dpkg-query", "-W", "-f", "${Version}", pkg).stdout.strip()


def add_apt_line(line: str, name: str = "ceph-perf") -> None:
    Path(f"/etc/apt/sources.list.d/{name}.list").write_text(line + "\n")
    sh("apt-get", "update", "-q", timeout=600)


def install_packages(spec: NodeSpec):
    """What the side runs, over the root's stock packages: .debs, or an apt repository's."""
    if spec.debs:
        log(f"installing {len(spec.debs)} package(s) over the stock ones")
        sh("dpkg", "-i", "--force-confold", *spec.debs, timeout=600)
    if spec.apt_line:
        add_apt_line(spec.apt_line, "ceph-perf-candidate")
        sh("apt-get", "install", "-y", "ceph-osd", "ceph-mon", "ceph-common", timeout=900)


def osd_has_option(osd_bin, name, env=None):
    return sh(osd_bin, "--show-config-value", name, check=False, env=env).returncode == 0


def candidate_check_main(option: str, patch: str, body) -> int:
    """main() of a node-side check of a candidate's ceph-osd: the spec named
    on the command line, the record, the packages installed (their ceph-osd
    must have `option`, else it was not built with `patch`), then
    body(spec, state_dir, steps). Exit 0 when every step passed."""
    spec = NodeSpec.load(Path(sys.argv[1]))
    state = Path(spec.state_dir)
    with recorded(state) as result:
        result["steps"] = []
        install_candidate(spec, result, option, patch)
        body(spec, state, result["steps"])
    return 0 if result["ok"] else 1


def install_candidate(spec: NodeSpec, result: dict, option: str, patch: str) -> None:
    """The candidate's packages over the stock ones, its ceph-osd version in
    the record; a ceph-osd without `option` was not built with `patch`."""
    install_packages(spec)
    result["candidate"] = version = installed_version("ceph-osd")
    if not osd_has_option("/usr/bin/ceph-osd", option):
        raise NodeError(f"ceph-osd {version} has no {option} option (it is not built with patches/{patch})")


# Upstream's way to skip device IO, for a ceph-osd without bluestore_io_mock
# (Debian's stock packages). Set at run time, once the pool is active: set from
# mkfs on, the pool's PGs never become active (measured: the first write hangs).
UPSTREAM_IO_MOCK = {"bluestore_debug_omit_block_device_write": "true", "bluestore_debug_omit_kv_commit": "true"}


def choose_io_mock(spec: NodeSpec, cluster: Cluster) -> str:
    """The IO-mock variant: our bluestore_io_mock where this ceph-osd has it,
    upstream's two debug options otherwise. Returns which one, for the record."""
    if osd_has_option(cluster.osd_bin, "bluestore_io_mock", cluster.osd_env):
        # honoured only where it names the OSD: its own [osd.N] section
        for n in range(spec.osds):
            spec.conf.setdefault(f"osd.{n}", {})["bluestore_io_mock"] = "true"
        return "bluestore_io_mock"
    spec.runtime_conf.setdefault("osd", {}).update(UPSTREAM_IO_MOCK)
    return "upstream debug options (this ceph-osd has no bluestore_io_mock)"
