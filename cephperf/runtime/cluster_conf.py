"""The bench cluster's ceph.conf: every daemon's paths under the run's state,
the mon's addresses, each OSD's device (inside the runtime root, python3
stdlib only)."""
from __future__ import annotations

import uuid
from pathlib import Path

from .record import NodeError
from .shell import sh
from .spec import NodeSpec


def conf_value(v) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def debug_subsystems():
    r = sh("ceph-conf", "-c", "/dev/null", "-D", check=False)
    names = [line.split("=")[0].strip() for line in r.stdout.splitlines() if line.startswith("debug_")]
    if not names:
        raise NodeError("could not list the debug_* options with ceph-conf -D")
    return names


def base_conf(state: Path, spec: NodeSpec) -> dict:
    s, port, v1 = state, spec.port, spec.v1_port
    conf = {
        "global": {
            "fsid": str(uuid.uuid4()),
            "mon_host": f"[v2:127.0.0.1:{port},v1:127.0.0.1:{v1}]",
            "auth_cluster_required": "none", "auth_service_required": "none", "auth_client_required": "none",
            "mon_allow_pool_size_one": "true", "mon_warn_on_pool_no_redundancy": "false",
            "osd_pool_default_size": str(spec.osds), "osd_pool_default_min_size": "1",
            "osd_crush_chooseleaf_type": "0",
            # Sane full ratios, below BlueStore's own failsafe, so that a
            # profile that writes too much is stopped by the mon, not by an abort.
            "mon_osd_full_ratio": "0.90", "mon_osd_backfillfull_ratio": "0.85", "mon_osd_nearfull_ratio": "0.80",
            "run_dir": f"{s}/run", "admin_socket": f"{s}/run/$name.asok",
            "pid_file": f"{s}/run/$name.pid", "log_file": f"{s}/log/$name.log",
            "ms_bind_ipv6": "false", "public_addr": "127.0.0.1",
        },
        "mon": {"mon_data": f"{s}/mon/$cluster-$id"},
        "mgr": {"mgr_data": f"{s}/mgr/$cluster-$id"},
        "mds": {"mds_data": f"{s}/mds/$cluster-$id"},
        "osd": {
            "osd_data": f"{s}/osd/$cluster-$id", "osd_objectstore": "bluestore",
            # one OSD keeps the path every earlier report ran with
            "bluestore_block_path": f"{s}/osd/block" if spec.osds == 1 else f"{s}/osd/block-$id",
            "bluestore_block_create": "true",
            "bluestore_block_size": str(int(spec.device_gib * (1 << 30))),
            "osd_crush_update_on_start": "true",
        },
    }
    if spec.block_devices:
        # the layout's devices, made by the host (cephperf/loop_devices.py): one each, sized already
        osd = conf["osd"]
        del osd["bluestore_block_size"]
        osd["bluestore_block_create"] = "false"
        del osd["bluestore_block_path"]  # each OSD's own section names its device
        for n, device in enumerate(spec.block_devices):
            conf[f"osd.{n}"] = {"bluestore_block_path": device}
    return conf
