"""The host side of the node contract: run a node-side module in a fresh
runtime root and read the record it leaves."""
from __future__ import annotations

import contextlib
import json
import shutil
import socket
from pathlib import Path

from . import loop_devices
from .packaging.roots import Root
from .common import EXIT_ERROR, EXIT_FAIL, StageError, log, rmtree, write_atomic
from .paths import REPO, bench_state
from .runtime.spec import RECORD, NodeSpec


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def node_argv(module: str, args: list[str], spec_file: Path) -> list[str]:
    """The command line of a node-side run, as it shows in /proc (bench/cluster finds its node by it)."""
    return ["python3", "-m", f"cephperf.runtime.{module}", *args, str(spec_file)]


def run_in_runtime(module: str, args: list[str], spec: NodeSpec, binds: list) -> tuple[int, dict | None]:
    """Run cephperf.runtime.MODULE ARGS SPEC.json inside a fresh runtime root,
    in a clean spec.state_dir; returns its exit code and the record it left
    there (None if it left none). Its namespaces end with it."""
    state = Path(spec.state_dir)
    rmtree(state)
    state.mkdir(parents=True)
    with contextlib.ExitStack() as held:
        spec.block_devices = layout_devices(spec, held)
        spec.save(state / "spec.json")
        return _run_in_root(module, args, spec, binds)


def layout_devices(spec: NodeSpec, held: contextlib.ExitStack) -> list[str]:
    """The block devices spec.layout asks for, one per OSD, held by `held`
    (a loop device goes when its last holder closes it); none for BlueStore's
    own file-backed device. The backing files are block-backing-N under the
    state's osd/, where every other device file of a round lies."""
    if spec.layout.get("device", "file") == "file":
        return []
    files = [Path(spec.state_dir) / "osd" / f"block-backing-{n}" for n in range(spec.osds)]
    try:
        return loop_devices.devices(files, int(spec.device_gib * (1 << 30)), spec.layout.get("rotational", False),
                                    held)
    except loop_devices.LoopError as e:
        raise StageError(f"layout {spec.layout.get('name')}: {e}", EXIT_ERROR)


def _run_in_root(module: str, args: list[str], spec: NodeSpec, binds: list) -> tuple[int, dict | None]:
    state = Path(spec.state_dir)
    # Working directory /, as systemd gives the packaged daemons: Debian's
    # ceph-osd finds its object classes at the relative osd_class_dir
    # lib/x86_64-linux-gnu/rados-classes, so from anywhere else it loads none
    # (rbd create fails with EOPNOTSUPP), and every other relative default
    # resolves as it would in production too.
    rc = Root("runtime").run(node_argv(module, args, state / "spec.json"),
                             binds=[Path(b) for b in binds if b], cwd=Path("/"), env={"PYTHONPATH": str(REPO)})
    try:
        return rc, json.loads((state / RECORD).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return rc, None


def run_check(module: str, spec: NodeSpec, binds: list, out: Path, logs: list[str], what: str,
              record: str = "result.json") -> dict:
    """A node-side check (cephperf.runtime.MODULE): its record goes to out/RECORD,
    its steps to the log; a failure keeps the cluster logs (the `logs` subdirectories
    of its state) in out/log and raises, naming the failed step."""
    state = Path(spec.state_dir)
    rc, result = run_in_runtime(module, [], spec, binds)
    if result is None:
        raise StageError(f"the {what} ended (exit {rc}) without a result; logs under {state}", EXIT_ERROR)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / record, json.dumps(result, indent=2) + "\n")
    for step in result.get("steps", []):
        log(step)
    if not result.get("ok"):
        for sub in logs:
            if (state / sub).exists():
                shutil.copytree(state / sub, out / "log" / Path(sub).parent, dirs_exist_ok=True)
        # a record marked could_not_run ended before its checks began: no verdict on what it checks
        if result.get("could_not_run"):
            raise StageError(f"{what} could not run: {result.get('error')}", EXIT_ERROR)
        raise StageError(f"{what} failed: {result.get('error')}", EXIT_FAIL)
    return result


def check_osd_debs(module: str, debs_dir: Path | None, out: Path, ports: int, logs: list[str], what: str,
                   **spec_fields) -> dict:
    """A node-side check (cephperf.runtime.MODULE) of a build's ceph-osd .deb,
    installed over Debian's stock packages in a throwaway overlay of the
    runtime root, or with debs_dir None of the stock packages themselves (a
    check of the test); spec_fields add to its node contract (conf, bench).
    Its state goes once the check passes."""
    debs = sorted(d for d in debs_dir.glob("ceph-osd_*.deb")) if debs_dir else []
    if debs_dir and not debs:
        raise StageError(f"{debs_dir}: no ceph-osd_*.deb; build it with ci/build-debs --profile osd-only "
                         "or name a directory with --debs", EXIT_ERROR)
    state = bench_state(module.replace("_", "-") + "-test")
    spec = NodeSpec(state_dir=str(state), spare_ports=[free_port() for _ in range(ports)], debs=[str(d) for d in debs],
                    **spec_fields)
    packages = ", ".join(d.name for d in debs) or "Debian's stock packages"
    log(f"{what} with {packages}")
    result = run_check(module, spec, [debs_dir], out, logs, what)
    rmtree(state)
    return result
