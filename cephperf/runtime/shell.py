"""Commands on the node side: bounded in time, failures named."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

from .record import NodeError


def sh(*cmd, timeout=120, check=True, **kw):
    try:
        r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired:
        raise NodeError(f"{' '.join(map(str, cmd[:6]))} did not finish within {timeout} s")
    if check and r.returncode != 0:
        raise NodeError(f"{' '.join(map(str, cmd))} failed (exit {r.returncode}): {(r.stderr or r.stdout).strip()[-800:]}")
    return r


def log(msg):
    print(f"[node] {msg}", file=sys.stderr, flush=True)


def stop_session(proc: subprocess.Popen, grace: float) -> None:
    """End a process started in a session of its own, with all it started
    there: SIGTERM to its process group, SIGKILL after `grace` seconds."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
