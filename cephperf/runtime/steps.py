"""The steps of a node-side check on a cluster (rados_model.py, cluster_test.py):
each step's time and counts on the record, a line each on the log, a
failed step named with what a dead OSD's log says, and the check's main()."""
from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from pathlib import Path

from .cluster import Cluster
from .daemon_log import abort_lines
from .record import NodeError, recorded
from .shell import log
from .spec import NodeSpec


class NotExercised(NodeError):
    """The run ended before it did what it must (the workload was too short): no verdict on the OSD."""


class Steps:
    """The record's steps: a line each on the log, and each one's time and counts."""

    def __init__(self, result: dict, cluster: Cluster):
        self.result, self.cluster = result, cluster
        result["steps"], result["checks"] = [], []

    @contextlib.contextmanager
    def step(self, name: str):
        entry = {"step": name}
        self.result["checks"].append(entry)
        t0 = time.monotonic()
        try:
            yield entry
        except (NodeError, subprocess.TimeoutExpired) as e:
            entry["error"] = f"{abort_summary(self.cluster)}{e}"
            raise (type(e) if isinstance(e, NodeError) else NodeError)(f"{name}: {entry['error']}") from None
        finally:
            entry["seconds"] = round(time.monotonic() - t0, 1)

    def line(self, text: str) -> None:
        self.result["steps"].append(text)
        log(text)


def abort_summary(cluster: Cluster) -> str:
    """What each dead OSD's log says of its end, above the backtrace cause()
    shows: the assertion, the signal and the RocksDB error before them."""
    said = []
    for name in cluster.osd_names():
        if cluster.procs[name].poll() is None:
            continue
        log_file = cluster.state / "log" / f"{name}.log"
        with open(log_file, "rb") as f:
            f.seek(max(0, log_file.stat().st_size - (4 << 20)))
            found = abort_lines(f.read().decode(errors="replace"))
        if found:
            said.append(f"{name} died ({' | '.join(found[:4])}); ")
    return "".join(said)


def describe(counts: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))


def check_main(body) -> int:
    """main() of a check: the spec named on the command line, body(spec,
    result) under its record, and the record's verdict as the exit code.
    Until body marks could_not_run False (its cluster is up), a failure
    says nothing about the OSD; NotExercised says the same."""
    spec = NodeSpec.load(Path(sys.argv[1]))
    t0 = time.monotonic()
    with recorded(Path(spec.state_dir)) as result:
        result["could_not_run"] = True
        try:
            body(spec, result)
        except NotExercised:
            result["could_not_run"] = True
            raise
        finally:
            result["seconds"] = round(time.monotonic() - t0)
    return 0 if result["ok"] else 1
