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
     comes up mocked, its earlier objects read back intact, new ones as zeros;
  5. on the first OSD, before its restart: a snapshot's clone of a mocked
     object with omap is made (no assert) and reads as zeros (not a device
     read that fails its checksum);
  6. a third cluster that sets the mode for every OSD before one is created,
     in the monitors' central configuration and in ceph.conf's [osd] section:
     the new OSD refuses it (its log says why, BLUESTORE_IO_MOCK_REFUSED
     shows), stores its objects and reads them back intact, before and after
     a restart.
Every wait is bounded; a step that fails is named in the record (record.json).
"""
import dataclasses
import hashlib
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


# The mode is honoured only where it names the OSD: its own section.
OWN_SECTION = "osd.0"


def write_own_section_option(cluster: Cluster, key: str, value: str) -> None:
    """Rewrite one option in osd.0's own section of ceph.conf (the next OSD start reads it)."""
    text = re.sub(rf"^{key} = .*\n", "", cluster.conf.read_text(), flags=re.M)
    header = f"[{OWN_SECTION}]\n"
    if header not in text:
        text += f"\n{header}"
    cluster.conf.write_text(text.replace(header, f"{header}{key} = {value}\n", 1))


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


def mocked_clone(cluster: Cluster, objects: Objects) -> str:
    """A snapshot's clone of a mocked object, with omap: made, and read as zeros."""
    name, size = "mock-cloned", 65536
    objects.put(name, size)
    sh(*cluster.rados, "setomapval", name, "key", "value", timeout=60)
    sh(*cluster.rados, "mksnap", "before-overwrite", timeout=60)
    objects.put(name, size)  # the overwrite makes BlueStore clone the object for the snapshot
    cluster.check_alive()
    zeros = hashlib.sha256(bytes(size)).hexdigest()
    if objects.read_sum(name, snap="before-overwrite") != zeros:
        raise NodeError(f"the snapshot's clone of mocked {name} does not read as {size} zeros")
    return f"a snapshot's clone of a mocked object with omap: made, reads as {size} zeros"


def refused_without_the_label(cluster: Cluster) -> str:
    """The store's own mark, which releases that know no io_mock label read:
    ceph-bluestore-tool opens the store without looking at the label, and so
    does Debian's stock ceph-osd after a downgrade; both refuse it."""
    store = cluster.state / "osd" / "ceph-0"
    r = sh("ceph-bluestore-tool", "fsck", "--path", store, timeout=300, check=False, env=cluster.osd_env)
    output = (r.stdout + r.stderr).strip()
    if r.returncode == 0 or "compat_ondisk_format is" not in output:
        raise NodeError(f"ceph-bluestore-tool fsck of the mocked store (exit {r.returncode}) did not refuse it for its "
                        f"on-disk format: {' | '.join(output.splitlines()[-5:])}")
    line = next(ln for ln in output.splitlines() if "compat_ondisk_format is" in ln)
    return f"opened without its label (as a stock release would): refused, {line.strip()[-110:]}"


def mocked_osd(spec: NodeSpec, state: Path, steps: list) -> None:
    cluster = Cluster(dataclasses.replace(spec, state_dir=str(state), mgr=True,
                                          conf={OWN_SECTION: {"bluestore_io_mock": "true"}}))
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
        steps.append(mocked_clone(cluster, objects))
        cluster.stop_osd()
        line = expect_refusal(cluster, cluster.start_osd(), r"ran with bluestore_io_mock.*cannot be mounted again",
                              "restart with the option set")
        steps.append(f"restart with the option set: refused, exit non-zero; log: {line[line.find('this OSD'):][:160]}")
        write_own_section_option(cluster, "bluestore_io_mock", "false")
        expect_refusal(cluster, cluster.start_osd(), r"ran with bluestore_io_mock", "restart with the option off")
        steps.append("restart with the option off: refused the same way")
        steps.append(refused_without_the_label(cluster))
    finally:
        cluster.down()


def osd_with_data(spec: NodeSpec, state: Path, steps: list) -> None:
    cluster = Cluster(dataclasses.replace(spec, state_dir=str(state)))
    try:
        cluster.up()
        objects = Objects(cluster, state)
        objects.write("real")
        earlier = list(objects.sums)
        write_own_section_option(cluster, "bluestore_io_mock", "true")
        cluster.stop_osd()
        expect_refusal(cluster, cluster.start_osd(), r"bluestore_io_mock refused.*bluestore_io_mock_force",
                       "switching on for an OSD with data")
        steps.append(f"OSD holding {len(earlier)} objects: switching the mode on is refused "
                     "(names bluestore_io_mock_force)")
        write_own_section_option(cluster, "bluestore_io_mock_force", "true")
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


def set_centrally(spec: NodeSpec, state: Path, steps: list) -> None:
    """The mode where every OSD reads it, before any OSD exists: the monitors'
    central configuration, and the [osd] section of ceph.conf (where
    orchestrators put cluster-wide settings)."""
    cluster = Cluster(dataclasses.replace(spec, state_dir=str(state), mgr=True,
                                          conf={"osd": {"bluestore_io_mock": "true"}}))
    try:
        for d in ("run", "log", "mon/ceph-a", "osd/ceph-0"):
            (state / d).mkdir(parents=True, exist_ok=True)
        cluster.write_conf()
        cluster.start_mon()
        # --force: a stock monitor does not know the option, and stores it anyway
        cluster.ceph("config", "set", "osd", "bluestore_io_mock", "true", "--force")
        cluster.make_osd()
        cluster.make_pool()
        cluster.check_alive()
        if "bluestore_io_mock is ON" in osd_log(cluster):
            raise NodeError("set in the central configuration, bluestore_io_mock switched a new OSD's mode on")
        refusal = next((ln for ln in osd_log(cluster).splitlines() if "not for this OSD alone" in ln), None)
        if refusal is None:
            raise NodeError("the OSD did not log that it refused the centrally set bluestore_io_mock")
        msg = wait_for_health_check(cluster, "BLUESTORE_IO_MOCK_REFUSED")
        objects = Objects(cluster, state)
        objects.write("central")
        n = objects.verify("set centrally: writes")
        cluster.stop_osd()
        cluster.start_osd()
        objects.verify("set centrally: after a restart")
        steps.append(f"set in the central configuration and the [osd] section: refused (log: "
                     f"{refusal.strip()[-120:]}; health: "
                     f"BLUESTORE_IO_MOCK_REFUSED: {msg}); {n} objects read back intact, also after a restart")
    finally:
        cluster.down()


def io_mock_checks(spec: NodeSpec, state: Path, steps: list) -> None:
    first, second, third = spec.spare_ports[:2], spec.spare_ports[2:4], spec.spare_ports[4:6]
    mocked_osd(dataclasses.replace(spec, port=first[0], v1_port=first[1]), state / "mocked", steps)
    osd_with_data(dataclasses.replace(spec, port=second[0], v1_port=second[1]), state / "with-data", steps)
    set_centrally(dataclasses.replace(spec, port=third[0], v1_port=third[1]), state / "central", steps)


def main():
    return candidate_check_main("bluestore_io_mock", "bluestore-io-mock.patch", io_mock_checks)


if __name__ == "__main__":
    sys.exit(main())
