"""Commands on the node side: bounded in time, failures named."""
from __future__ import annotations

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
