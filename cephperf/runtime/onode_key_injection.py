"""The onode key self-check's test injection kept out of production's reach
(ci/onode-cache-test's last steps, inside the runtime root): a key error
injected at run time or from the monitors' central configuration is
ignored; one set for the OSD alone at its start makes the self-check, which
no option turns off, stop the OSD before a wrong key is stored
(patches/bluestore-onode-lookup-once.patch).
"""
from __future__ import annotations

import json
import subprocess
import time
from typing import TYPE_CHECKING

from .cluster import Cluster
from .cluster_admin import osd_up_from, wait_until
from .record import NodeError
from .shell import sh

if TYPE_CHECKING:  # the object store of onode_cache.py, which imports this module
    from .onode_cache import Store

# the self-check must stop the OSD well within this
ABORT_WAIT = 120
INJECT = "bluestore_debug_inject_onode_key_error"
# set in the central configuration after the injection: once osd.0 shows it,
# the push that carried the injection has reached it too
MARKER = ("osd_max_scrubs", "2")


def osd_value(cluster: Cluster, key: str) -> str | None:
    return json.loads(cluster.ceph("tell", "osd.0", "config", "get", key).stdout).get(key)


def injection_at_run_time_ignored(cluster: Cluster, store: Store) -> str:
    """The injection is read at start only: set at run time, through the OSD
    or the monitors, it changes nothing."""
    r = sh("ceph", "-c", cluster.conf, "tell", "osd.0", "config", "set", INJECT, "true", check=False)
    if r.returncode == 0:
        raise NodeError(f"osd.0 took {INJECT} at run time (`ceph tell osd.0 config set`): "
                        f"{(r.stdout + r.stderr).strip()[-200:]}")
    cluster.ceph("config", "set", "osd.0", INJECT, "true", "--force")  # a stock mon does not know it
    cluster.ceph("config", "set", "osd.0", *MARKER)  # pushed after the injection: once seen, both were
    deadline = time.monotonic() + 60
    while osd_value(cluster, MARKER[0]) != MARKER[1]:
        if time.monotonic() > deadline:
            raise NodeError(f"osd.0 did not take {MARKER[0]} from the monitors' central configuration in 60 s")
        time.sleep(1)
    if osd_value(cluster, INJECT) != "false":
        raise NodeError(f"osd.0 took {INJECT} from the monitors' central configuration at run time")
    store.missing("read before a write, the injection set at run time", "inject-runtime")
    store.put("inject-runtime")
    cluster.check_alive()
    store.check("written with the injection set at run time", "inject-runtime")
    cluster.ceph("config", "rm", "osd.0", MARKER[0])  # the injection stays, for the next step
    return (f"{INJECT} set at run time (tell, central configuration): refused; a new object written "
            "then reads back")


def log_size(cluster: Cluster) -> int:
    log_file = cluster.state / "log" / "osd.0.log"
    return log_file.stat().st_size if log_file.exists() else 0


def log_since(cluster: Cluster, offset: int) -> str:
    """What osd.0 logged from offset on (its log is appended at each start)."""
    log_file = cluster.state / "log" / "osd.0.log"
    if not log_file.exists():
        return ""
    with open(log_file, "rb") as f:
        f.seek(offset)
        return f.read().decode(errors="replace")


def injection_from_central_configuration_ignored(cluster: Cluster, store: Store) -> str:
    """Left in the monitors' central configuration, which every OSD reads when
    it starts, the injection reaches osd.0 at its restart and is ignored: it
    was not set for this OSD alone. In effect, it would make every OSD abort
    at every start."""
    since = log_size(cluster)
    cluster.stop_osd()
    osd = cluster.start_osd()
    deadline = time.monotonic() + ABORT_WAIT
    while True:
        if osd.poll() is not None:
            raise NodeError(f"with {INJECT} in the monitors' central configuration only, osd.0 exited at its "
                            f"start ({cluster.cause()}): it must ignore it")
        try:
            r = sh("ceph", "-c", cluster.conf, "tell", "osd.0", "config", "get", INJECT, check=False, timeout=30)
            if r.returncode == 0:
                break
        except NodeError:  # not up yet: the tell waited for it
            pass
        if time.monotonic() > deadline:
            raise NodeError(f"osd.0 did not come up within {ABORT_WAIT} s after its restart")
        time.sleep(1)
    if json.loads(r.stdout).get(INJECT) != "true":
        raise NodeError(f"osd.0 did not take {INJECT} from the monitors' central configuration at its start: "
                        "the step shows nothing")
    store.missing("read before a write, the injection in the central configuration", "inject-central")
    store.put("inject-central")
    cluster.check_alive()
    store.check("written with the injection in the central configuration", "inject-central")
    if f"{INJECT} ignored: not set for this OSD alone" not in log_since(cluster, since):
        raise NodeError(f"started with {INJECT} from the monitors' central configuration, the OSD's log does "
                        "not say it ignored it")
    cluster.ceph("config", "rm", "osd.0", INJECT)
    return (f"{INJECT} in the central configuration at the OSD's start: ignored (logged), no abort; a new "
            "object reads back")


def restart_with(cluster: Cluster, **options) -> subprocess.Popen:
    """osd.0 restarted with these options on its command line (read at start)."""
    cluster.stop_osd()
    args = [f"--{k}={str(v).lower()}" for k, v in options.items()]
    cluster.start("osd.0", [*cluster.osd_argv(0), *args], env=cluster.osd_env)
    return cluster.procs["osd.0"]


def injection_at_start_aborts(cluster: Cluster) -> str:
    """Set for the OSD alone at its start (its command line), the injection
    makes the OSD abort in the key self-check, which no option turns off, at
    its first onode lookup, before any key is stored."""
    osd = restart_with(cluster, **{INJECT: True})
    try:
        osd.wait(timeout=ABORT_WAIT)
    except subprocess.TimeoutExpired:
        raise NodeError(f"started with {INJECT} on its command line, the OSD did not abort within "
                        f"{ABORT_WAIT} s")
    cluster.procs.pop("osd.0")
    if "t == oid" not in "\n".join(cluster.log_tail("osd.0", 60)):
        raise NodeError(f"the OSD exited (status {osd.returncode}), but not in the key self-check: "
                        f"{cluster.cause()}")
    up_from = osd_up_from(cluster)
    cluster.start_osd()  # the injection was on the command line only
    # Up in the osdmap, booted anew: before that, a stop can reach the OSD
    # before its SIGTERM handler is installed, and it dies of the signal.
    wait_until(f"osd.0 up after its restart without {INJECT}", ABORT_WAIT,
               lambda: osd_up_from(cluster) > up_from, cluster)
    return (f"{INJECT} set at start for the OSD alone: the OSD aborted in the key self-check before "
            "storing any key; restarted without it, it came up")
