"""The bench's node side, run inside the runtime root (python3 stdlib only).

  python3 -m cephperf.runtime.node round SPEC.json     fresh mon + OSD, one benchmark, metrics, teardown
  python3 -m cephperf.runtime.node serve SPEC.json     fresh mon + OSD, then hold until SIGTERM (bench/cluster up)
  python3 -m cephperf.runtime.node external SPEC.json  the benchmark against an existing cluster

The record goes to SPEC.state_dir/record.json, whatever happens.
"""
import json
import signal
import sys
from pathlib import Path

from . import cephfs, fio_rbd, latency, layout
from .checks import choose_io_mock, install_packages, installed_version
from .cluster import Cluster
from .elf_build_id import gnu_build_id
from .shell import sh
from .measure import run_profile
from .osd_stats import perf_supported
from .record import recorded
from .spec import NodeSpec


def round_(command: str, spec: NodeSpec, cluster: Cluster, result: dict) -> None:
    install_packages(spec)
    if spec.perf and not perf_supported():
        spec.perf = False
        result["perf"] = "cycles not supported on this machine"
    if spec.io_mock and command != "external":
        result["io_mock"] = choose_io_mock(spec, cluster)
    if command != "external":
        cluster.up()
        result.update(versions=versions(spec, cluster), osd_metadata=cluster.osd_metadata())
        if spec.layout:
            result["layout"] = layout.checked(cluster)
    if command == "serve":
        (Path(spec.state_dir) / "up").write_text(json.dumps({"conf": str(cluster.conf)}))
        signal.pause()
        return
    bench = {"fio-rbd": fio_rbd.run_profile, "fio-cephfs": cephfs.run_profile,
             "rados-latency": latency.run_profile}.get(spec.bench.get("tool"), run_profile)
    result.update(bench(cluster))
    result.setdefault("perf", "perf stat not requested")


def versions(spec: NodeSpec, cluster: Cluster) -> dict:
    """The packages the round ran, a development build's own version, and the
    build ID of the ceph-osd that ran (the package's or the build's)."""
    out = {p: installed_version(p) for p in ("ceph-osd", "ceph-fuse", "ceph-mon", "ceph-common")}
    if spec.osd_binary:
        out["ceph-osd (built)"] = sh(cluster.osd_bin, "--version", env=cluster.osd_env).stdout.strip()
    out["ceph-osd build ID"] = gnu_build_id(cluster.osd_bin) or "none"
    return out


def main():
    command, spec = sys.argv[1], NodeSpec.load(Path(sys.argv[2]))
    cluster = Cluster(spec)
    with recorded(Path(spec.state_dir)) as result:
        try:
            round_(command, spec, cluster, result)
        finally:
            cluster.down()
    return 0 if result["ok"] else 2


if __name__ == "__main__":
    sys.exit(main())
