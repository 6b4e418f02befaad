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
     comes up mocked and reads of the old objects return zeros.
Every wait is bounded; a step that fails is named in result.json.
"""
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from node import Cluster, GateError, install_packages, log, sh  # noqa: E402

OBJECT_SIZES = [1, 4096, 65536, 1 << 20, 4 << 20]
EXIT_WAIT = 180  # a refused mount must end the daemon well within this


def set_osd_option(cluster: Cluster, key: str, value: str) -> None:
    """Rewrite one [osd] option in ceph.conf (the next OSD start reads it)."""
    text = cluster.conf.read_text()
    text = re.sub(rf"^{key} = .*\n", "", text, flags=re.M)
    cluster.conf.write_text(text.replace("[osd]\n", f"[osd]\n{key} = {value}\n", 1))


def osd_log(cluster: Cluster) -> str:
    f = cluster.state / "log" / "osd.0.log"
    return f.read_text(errors="replace") if f.exists() else ""


def restart_osd(cluster: Cluster) -> subprocess.Popen:
    proc = cluster.procs.pop("osd.0")
    proc.terminate()
    proc.wait(timeout=120)
    cluster.start("osd.0", [cluster.osd_bin, "-c", cluster.conf, "-i", "0", "-f"], env=cluster.osd_env)
    return cluster.procs["osd.0"]


def expect_refusal(cluster: Cluster, proc: subprocess.Popen, pattern: str, step: str) -> str:
    try:
        rc = proc.wait(timeout=EXIT_WAIT)
    except subprocess.TimeoutExpired:
        raise GateError(f"{step}: the OSD neither refused nor exited within {EXIT_WAIT} s")
    cluster.procs.pop("osd.0")
    m = re.search(pattern, osd_log(cluster))
    if rc == 0 or not m:
        raise GateError(f"{step}: expected a refusal matching {pattern!r}, got exit {rc}; "
                        f"last log lines: {cluster.log_tail('osd.0', 8)}")
    line = next(ln for ln in osd_log(cluster).splitlines() if m.group(0) in ln)
    log(f"{step}: refused (exit {rc}): {line.strip()[-220:]}")
    return line.strip()


def wait_for_health_check(cluster: Cluster, check: str, timeout: int = 180) -> str:
    """Poll `ceph health detail` until `check` shows (the mgr reports it on its own period)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        cluster.check_alive()
        r = sh("ceph", "-c", cluster.conf, "health", "detail", "--format", "json", timeout=30, check=False)
        try:
            checks = json.loads(r.stdout).get("checks", {})
        except ValueError:
            checks = {}
        if check in checks:
            return checks[check]["summary"]["message"]
        # no sleep: each `ceph health` round trip (a client start-up) paces the poll
    raise GateError(f"health check {check} did not show within {timeout} s")


def zeros_sha(size: int) -> str:
    return hashlib.sha256(bytes(size)).hexdigest()


def mocked_objects_behave(cluster: Cluster, work: Path, names: dict) -> int:
    listed = set(sh(*cluster.rados, "ls", timeout=120).stdout.split())
    missing = set(names) - listed
    if missing:
        raise GateError(f"objects missing from the pool listing: {sorted(missing)}")
    for name, size in names.items():
        stat = sh(*cluster.rados, "stat", name, timeout=120).stdout
        if not re.search(rf"size {size}\b", stat):
            raise GateError(f"rados stat {name}: {stat.strip()}, expected size {size}")
        out = work / f"{name}.read"
        sh(*cluster.rados, "get", name, out, timeout=120)
        got = hashlib.sha256(out.read_bytes()).hexdigest()
        out.unlink()
        if got != zeros_sha(size):
            raise GateError(f"rados get {name}: not {size} zero bytes (sha256 {got})")
    return len(names)


def write_objects(cluster: Cluster, work: Path, tag: str) -> dict:
    names = {}
    for i, size in enumerate(OBJECT_SIZES):
        name, path = f"{tag}-{i}-{size}", work / f"{tag}-{i}"
        path.write_bytes(os.urandom(size))
        sh(*cluster.rados, "put", name, path, timeout=180)
        path.unlink()
        names[name] = size
    return names


def mocked_osd(spec: dict, state: Path, steps: list) -> None:
    cluster = Cluster({**spec, "state_dir": str(state), "mgr": True,
                       "conf": {"osd": {"bluestore_io_mock": "true"}}})
    try:
        cluster.up()
        if "bluestore_io_mock is ON" not in osd_log(cluster):
            raise GateError("the OSD came up without the mode on (no 'bluestore_io_mock is ON' in its log)")
        msg = wait_for_health_check(cluster, "BLUESTORE_IO_MOCK")
        steps.append(f"fresh OSD with the option: up, mocked; health: BLUESTORE_IO_MOCK: {msg}")
        names = write_objects(cluster, state, "mock")
        sh(*cluster.rados, "setomapval", "mock-0-1", "key", "value", timeout=60)
        n = mocked_objects_behave(cluster, state, names)
        omap = sh(*cluster.rados, "getomapval", "mock-0-1", "key", timeout=60).stdout
        if "value" not in omap:
            raise GateError(f"omap does not read back: {omap.strip()}")
        steps.append(f"{n} objects written: all listed, stat gives their sizes, reads return that many zeros, "
                     "omap reads back")
        line = expect_refusal(cluster, restart_osd(cluster), r"ran with bluestore_io_mock.*cannot be mounted again",
                              "restart with the option set")
        steps.append(f"restart with the option set: refused, exit non-zero; log: {line[line.find('this OSD'):][:160]}")
        set_osd_option(cluster, "bluestore_io_mock", "false")
        cluster.start("osd.0", [cluster.osd_bin, "-c", cluster.conf, "-i", "0", "-f"], env=cluster.osd_env)
        expect_refusal(cluster, cluster.procs["osd.0"], r"ran with bluestore_io_mock", "restart with the option off")
        steps.append("restart with the option off: refused the same way")
    finally:
        cluster.down()


def osd_with_data(spec: dict, state: Path, steps: list) -> None:
    cluster = Cluster({**spec, "state_dir": str(state)})
    try:
        cluster.up()
        names = write_objects(cluster, state, "real")
        set_osd_option(cluster, "bluestore_io_mock", "true")
        expect_refusal(cluster, restart_osd(cluster), r"bluestore_io_mock refused.*bluestore_io_mock_force",
                       "switching on for an OSD with data")
        steps.append("OSD holding 5 objects: switching the mode on is refused (names bluestore_io_mock_force)")
        set_osd_option(cluster, "bluestore_io_mock_force", "true")
        cluster.start("osd.0", [cluster.osd_bin, "-c", cluster.conf, "-i", "0", "-f"], env=cluster.osd_env)
        n = mocked_objects_behave(cluster, state, names)  # a read blocks until the PG is active
        if "bluestore_io_mock is ON" not in osd_log(cluster):
            raise GateError("forced: the OSD came up without the mode on")
        steps.append(f"forced: the OSD comes up mocked; its {n} earlier objects list and read as zeros")
    finally:
        cluster.down()


def main():
    spec = json.loads(Path(sys.argv[1]).read_text())
    state = Path(spec["state_dir"])
    result = {"ok": False, "steps": []}
    try:
        install_packages(spec)
        version = sh("dpkg-query", "-W", "-f", "${Version}", "ceph-osd").stdout.strip()
        result["candidate"] = version
        r = sh("ceph-osd", "--show-config-value", "bluestore_io_mock", check=False)
        if r.returncode != 0:
            raise GateError(f"ceph-osd {version} has no bluestore_io_mock option "
                            "(it is not built with patches/bluestore-io-mock.patch)")
        mocked_osd({**spec, "port": spec["ports"][0], "v1_port": spec["ports"][1]}, state / "mocked",
                   result["steps"])
        osd_with_data({**spec, "port": spec["ports"][2], "v1_port": spec["ports"][3]}, state / "with-data",
                      result["steps"])
        result["ok"] = True
    except (GateError, subprocess.TimeoutExpired) as e:
        result["error"] = str(e)
    except KeyboardInterrupt:
        result["error"] = "interrupted"
    finally:
        (state / "result.json.tmp").write_text(json.dumps(result, indent=2))
        os.replace(state / "result.json.tmp", state / "result.json")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
