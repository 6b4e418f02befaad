"""The one way a node-side run ends: a record in its state directory, whatever happened."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from pathlib import Path

from .spec import RECORD


class NodeError(Exception):
    """The run could not do what it was asked; the message names the cause."""


def _interrupt(signum, frame):
    raise KeyboardInterrupt


@contextlib.contextmanager
def recorded(state_dir: Path):
    """Yields the record (a dict) to fill. It is written atomically to
    state_dir/record.json when the block ends: ok when the block finished,
    otherwise with the error that ended it. SIGTERM ends it like Ctrl-C."""
    signal.signal(signal.SIGTERM, _interrupt)
    result = {"ok": False}
    try:
        yield result
        result["ok"] = True
    except (NodeError, subprocess.TimeoutExpired) as e:
        result["error"] = str(e)
    except KeyboardInterrupt:
        result["error"] = "interrupted"
    except Exception as e:  # a bug here must still end the run with a record
        result["error"] = f"internal error on the node side: {type(e).__name__}: {e}"
    finally:
        tmp = Path(state_dir) / f"{RECORD}.tmp"
        tmp.write_text(json.dumps(result, indent=2))
        os.replace(tmp, Path(state_dir) / RECORD)
