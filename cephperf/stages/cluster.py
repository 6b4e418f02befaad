"""bench/cluster: a one-mon, one-OSD cluster on 127.0.0.1 inside the runtime root.

  bench/cluster up --packages SRC [--profile NAME] [--name NAME]
  bench/cluster exec [--name NAME] -- CMD...     e.g. -- ceph -s
  bench/cluster status [--name NAME]
  bench/cluster down [--name NAME]

SRC is as for bench/gate: 'debian', a directory of .debs, an apt line, or a
directory holding a built ceph-osd. The cluster lives in private mount and
PID namespaces held by one background process; `down` stops exactly that
process (by its recorded pid), which takes the daemons and every mount with
it. `up` first clears what a crashed earlier run left: a dead holder's pid
file, its state directory and sockets. No mount ever reaches the host.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from cephperf import paths
from cephperf.bench.rounds import load_profile, parse_source, round_spec, run_node
from cephperf.common import EXIT_ERROR, StageError, log, main_wrapper, rmtree
from cephperf.nodes import node_argv


def state_dir(name: str) -> Path:
    return paths.cluster_state(name)


def holder_pid(state: Path) -> int | None:
    """The recorded holder's pid, if that process is alive and is really ours."""
    try:
        pid = int((state / "holder.pid").read_text())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (FileNotFoundError, ValueError, ProcessLookupError):
        return None
    return pid if any(b"bench/cluster" in c for c in cmdline) and b"_hold" in cmdline else None


def node_pid(state: Path) -> int | None:
    """Host pid of the node side (cephperf.runtime.node) serving this cluster (the daemons' parent, inside the root)."""
    want = node_argv("node", ["serve"], state / "node" / "spec.json")
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if (d / "cmdline").read_bytes().decode(errors="replace").split("\0")[:-1] == want:
                    return int(d.name)
            except OSError:
                pass
    return None


def up(args) -> int:
    state = state_dir(args.name)
    if holder_pid(state):
        raise StageError(f"cluster {args.name!r} is already up (holder pid {holder_pid(state)}); "
                         f"run bench/cluster down --name {args.name}", EXIT_ERROR)
    if state.exists():
        log(f"clearing what an earlier run of cluster {args.name!r} left behind")
        rmtree(state)
    state.mkdir(parents=True)
    parse_source(args.packages)  # validate before going to the background
    load_profile(args.profile, "defaults")
    logf = open(state / "holder.log", "w")
    holder = subprocess.Popen([sys.executable, str(paths.BENCH / "cluster"), "_hold", "--name", args.name,
                               "--packages", args.packages, "--profile", args.profile],
                              start_new_session=True, stdout=logf, stderr=logf)
    deadline = time.monotonic() + 600
    while not (state / "node" / "up").exists():
        try:
            holder.wait(timeout=1)  # wakes each second to look for the "up" mark
            raise StageError(f"cluster {args.name!r} failed to come up: "
                             + (state / "holder.log").read_text()[-2000:], EXIT_ERROR)
        except subprocess.TimeoutExpired:
            if time.monotonic() > deadline:
                os.killpg(holder.pid, signal.SIGTERM)
                raise StageError(f"cluster {args.name!r} did not come up within 600 s", EXIT_ERROR)
    conf = json.loads((state / "node" / "up").read_text())["conf"]
    print(f"cluster {args.name!r} up: ceph.conf {conf}; try: bench/cluster exec --name {args.name} -- ceph -s")
    return 0


def hold(args) -> int:
    state = state_dir(args.name)
    (state / "holder.pid").write_text(str(os.getpid()))
    prof = load_profile(args.profile, "defaults")
    side = parse_source(args.packages)
    spec = round_spec(state / "node", prof, side, {}, None, 20, False)
    rec = run_node("serve", spec, [side.get("bind")])
    return 0 if rec.get("error") in (None, "interrupted") else 1


def down(args) -> int:
    state = state_dir(args.name)
    pid = holder_pid(state)
    if pid:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 120
        while holder_pid(state) and time.monotonic() < deadline:
            time.sleep(0.5)  # waiting for an unrelated process to exit: no handle to wait on
        if holder_pid(state):
            os.kill(pid, signal.SIGKILL)  # its namespaces die with it
    rmtree(state)
    print(f"cluster {args.name!r} down")
    return 0


def exec_(args) -> int:
    state = state_dir(args.name)
    npid = node_pid(state) if holder_pid(state) else None
    if not npid:
        raise StageError(f"cluster {args.name!r} is not up", EXIT_ERROR)
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    conf = str(state / "node" / "ceph.conf")
    return subprocess.run(["nsenter", "-t", str(npid), "-m", "-p", "-r", "-w", "--",
                           "env", f"CEPH_CONF={conf}", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", *argv]).returncode


def status(args) -> int:
    state = state_dir(args.name)
    pid = holder_pid(state)
    print(f"cluster {args.name!r}: " + (f"up (holder pid {pid})" if pid else "down"))
    return 0 if pid else 1


def execute():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("up", "_hold", "down", "exec", "status"):
        sp = sub.add_parser(name)
        sp.add_argument("--name", default="default")
        if name in ("up", "_hold"):
            sp.add_argument("--packages", default="debian")
            sp.add_argument("--profile", default="4k-write")
        if name == "exec":
            sp.add_argument("argv", nargs=argparse.REMAINDER)
    args = p.parse_args()
    return {"up": up, "_hold": hold, "down": down, "exec": exec_, "status": status}[args.cmd](args)



def main():
    main_wrapper(execute)
