"""Runs inside a throwaway overlay of the trixie runtime root (ci/io-mock-test).

Checks bluestore_io_mock (patches/bluestore-io-mock.patch) on a one-OSD
cluster running the candidate's ceph-osd:
  1. an OSD configured with the option from the start: mkfs is not mocked,
     the daemon's first start is; the BLUESTORE_IO_MOCK health warning shows;
  2. objects of 1 B to 4 MiB written; the pool lists every one, stat gives
     each one's size, a read returns that many zeros, omap reads back;
  3. restart with the option still set: the OSD refuses to mount, exits,
     and its log names the mode; restart with the option off: refuses again;
  4. a second OSD that already holds objects: the option alone is refused
     (exit, message names bluestore_io_mock_force); with the force option it
     comes up mocked, its earlier objects read back intact, new ones as zeros.
Every wait is bounded; a step that fails is named in the record (record.json).
"""
import dataclasses
import json
import re
import subprocess
import sys
import time
from pathlib import Path

from .checks import Objects, candidate_check_main
from .cluster import Cluster
from .shell import log, sh
from .record import NodeError
from .spec import NodeSpec

EXIT_WAIT = 180  # a refused mount must end the daemon well within this


def set_osd_option(cluster: Cluster, key: str, value: str) -> None:
    """Rewrite one [osd] option in ceph.conf (the next OSD start reads it)."""
    text = re.sub(rf"^{key} = .*\n", "", cluster.conf.read_text(), flags=re.M)
    cluster.conf.write_text(text.replace("[osd]\n", f"[osd]\n{key} = {value}\n", 1))


def osd_log(cluster: Cluster) -> str:
    f = cluster.state / "log" / "osd.0.log"
    return f.read_text(errors="replace") if f.exists() else ""


def expect_refusal(cluster: Cluster, proc: subprocess.Popen, pattern: str, step: str) -> str:
    try:
        rc = proc.wait(timeout=EXIT_WAIT)
    except subprocess.TimeoutExpired:
        raise NodeError(f"{step}: the OSD neither refused nor exited within {EXIT_WAIT} s")
    cluster.procs.pop("osd.0")
    m = re.search(pattern, osd_log(cluster))
    if rc == 0 or not m:
        raise NodeError(f"{step}: expected a refusal matching {pattern!r}, got exit {rc}; "
                        f"last log lines: {cluster.log_tail('osd.0', 8)}")
    line = next(ln for ln in osd_log(cluster).splitlines() if m.group(0) in ln)
    log(f"{step}: refused (exit {rc}): {line.strip()[-220:]}")
    return line.strip()


def wait_for_health_check(cluster: Cluster, check: str, timeout: int = 180) -> str:
    """Poll `ceph health detail` until `check` shows (the mgr reports it on its own period)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        cluster.check_alive()
        # no sleep: each `ceph health` round trip (a client start-up) paces the poll
        r = sh("ceph", "-c", cluster.conf, "health", "detail", "--format", "json", timeout=30, check=False)
        try:
            checks = json.loads(r.stdout).get("checks", {})
        except ValueError:
            checks = {}
        if check in checks:
            return checks[check]["summary"]["message"]
    raise NodeError(f"health check {check} did not show within {timeout} s")


def check_stat(cluster: Cluster, objects: Objects) -> None:
    for name, size in objects.sizes.items():
        stat = sh(*cluster.rados, "stat", name, timeout=120).stdout
        if not re.search(rf"size {size}\b", stat):
            raise NodeError(f"rados stat {name}: {stat.strip()}, expected size {size}")


def mocked_osd(spec: NodeSpec, state: Path, steps: list) -> None:
    cluster = Cluster(dataclasses.replace(spec, state_dir=str(state), mgr=True,
                                          conf={"osd": {"bluestore_io_mock": "true"}}))
    try:
        cluster.up()
        if "bluestore_io_mock is ON" not in osd_log(cluster):
            raise NodeError("the OSD came up without the mode on (no 'bluestore_io_mock is ON' in its log)")
        msg = wait_for_health_check(cluster, "BLUESTORE_IO_MOCK")
        steps.append(f"fresh OSD with the option: up, mocked; health: BLUESTORE_IO_MOCK: {msg}")
        objects = Objects(cluster, state)
        objects.write("mock")
        sh(*cluster.rados, "setomapval", "mock-0-1", "key", "value", timeout=60)
        check_stat(cluster, objects)
        n = objects.verify("mocked writes", zeros=True)
        omap = sh(*cluster.rados, "getomapval", "mock-0-1", "key", timeout=60).stdout
        if "value" not in omap:
            raise NodeError(f"omap does not read back: {omap.strip()}")
        steps.append(f"{n} objects written: all listed, stat gives their sizes, reads return that many zeros, "
                     "omap reads back")
        cluster.stop_osd()
        line = expect_refusal(cluster, cluster.start_osd(), r"ran with bluestore_io_mock.*cannot be mounted again",
                              "restart with the option set")
        steps.append(f"restart with the option set: refused, exit non-zero; log: {line[line.find('this OSD'):][:160]}")
        set_osd_option(cluster, "bluestore_io_mock", "false")
        expect_refusal(cluster, cluster.start_osd(), r"ran with bluestore_io_mock", "restart with the option off")
        steps.append("restart with the option off: refused the same way")
    finally:
        cluster.down()


def osd_with_data(spec: NodeSpec, state: Path, steps: list) -> None:
    cluster = Cluster(dataclasses.replace(spec, state_dir=str(state)))
    try:
        cluster.up()
        objects = Objects(cluster, state)
        objects.write("real")
        earlier = list(objects.sums)
        set_osd_option(cluster, "bluestore_io_mock", "true")
        cluster.stop_osd()
        expect_refusal(cluster, cluster.start_osd(), r"bluestore_io_mock refused.*bluestore_io_mock_force",
                       "switching on for an OSD with data")
        steps.append(f"OSD holding {len(earlier)} objects: switching the mode on is refused "
                     "(names bluestore_io_mock_force)")
        set_osd_option(cluster, "bluestore_io_mock_force", "true")
        cluster.start_osd()
        n = objects.verify("forced: earlier objects", earlier)  # a read blocks until the PG is active
        if "bluestore_io_mock is ON" not in osd_log(cluster):
            raise NodeError("forced: the OSD came up without the mode on")
        objects.write("mock")
        m = objects.verify("forced: mocked writes", [k for k in objects.sums if k not in earlier], zeros=True)
        steps.append(f"forced: the OSD comes up mocked; its {n} earlier objects read back intact, "
                     f"{m} written in the mode read as zeros")
    finally:
        cluster.down()


def io_mock_checks(spec: NodeSpec, state: Path, steps: list) -> None:
    first, second = spec.spare_ports[:2], spec.spare_ports[2:4]
    mocked_osd(dataclasses.replace(spec, port=first[0], v1_port=first[1]), state / "mocked", steps)
    osd_with_data(dataclasses.replace(spec, port=second[0], v1_port=second[1]), state / "with-data", steps)


def main():
    return candidate_check_main("bluestore_io_mock", "bluestore-io-mock.patch", io_mock_checks)


if __name__ == "__main__":
    sys.exit(main())
