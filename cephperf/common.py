"""Helpers every stage uses: paths, pins, errors, stamps, atomic outputs, locks.

Stages are small programs; this module holds the few things they would
otherwise each write again.
"""
from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import shutil
import signal
import sys
import time
import tomllib
import subprocess
from pathlib import Path

from . import paths

# Exit codes shared by all stages: 1 is "the thing checked is bad" (a
# regression, a failing patch, a bad flag), 2 is "the stage could not run".
EXIT_FAIL = 1
EXIT_ERROR = 2


class StageError(Exception):
    """A failure with a message meant for the user; no traceback is shown."""

    def __init__(self, message: str, code: int = EXIT_FAIL):
        super().__init__(message)
        self.code = code


def load_toml(path: Path) -> dict:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise StageError(f"{path}: file not found", EXIT_ERROR)
    except tomllib.TOMLDecodeError as e:
        raise StageError(f"{path}: not valid TOML: {e}", EXIT_ERROR)


def load_pins(path: Path | None = None) -> dict:
    path = path or paths.pins_path()
    pins = load_toml(path)
    for key in ("upstream", "debian", "ours", "files"):
        if key not in pins:
            raise StageError(f"{path}: missing [{key}]", EXIT_ERROR)
    roles = {f.get("role") for f in pins["files"]}
    for role in ("orig", "debian"):
        if role not in roles:
            raise StageError(f"{path}: no [[files]] entry with role = \"{role}\"", EXIT_ERROR)
    for f in pins["files"]:
        s = f.get("sha256", "")
        if len(s) != 64 or any(c not in "0123456789abcdef" for c in s):
            raise StageError(f"{path}: file {f.get('name')!r}: sha256 must be 64 lowercase hex digits", EXIT_ERROR)
    pins["_path"] = str(path)
    return pins


def pinned_file(pins: dict, role: str) -> dict:
    return next(f for f in pins["files"] if f["role"] == role)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def hash_inputs(items: list[tuple[str, bytes | str | Path]]) -> str:
    """One digest over named inputs: file contents, directory trees or strings."""
    h = hashlib.sha256()
    for name, value in items:
        h.update(name.encode() + b"\0")
        if isinstance(value, Path):
            if value.is_dir():
                for p in sorted(value.rglob("*")):
                    if p.is_file() and "__pycache__" not in p.parts:
                        h.update(str(p.relative_to(value)).encode() + b"\0")
                        h.update(p.read_bytes())
            elif value.exists():
                h.update(value.read_bytes())
            else:
                h.update(b"<absent>")
        elif isinstance(value, str):
            h.update(value.encode())
        else:
            h.update(value)
        h.update(b"\0\0")
    return h.hexdigest()


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write a file so that readers see either the old or the whole new content."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    mode = "wb" if isinstance(data, bytes) else "w"
    with open(tmp, mode) as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_stamp(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def write_stamp(path: Path, **fields) -> None:
    fields.setdefault("finished", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    write_atomic(path, json.dumps(fields, indent=2, sort_keys=True) + "\n")


@contextlib.contextmanager
def locked(path: Path):
    """Serialise runs of one stage on one output; a second run waits."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"waiting for another run holding {path}")
            fcntl.flock(f, fcntl.LOCK_EX)
        yield


def rmtree(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


def replace_dir(new: Path, final: Path) -> None:
    """Swap a finished directory into place.

    `final` is never half-written: it is either the previous complete output or
    the new one. Between the two renames it is briefly absent, which a later run
    treats as "no output" and rebuilds.
    """
    old = final.with_name(f".{final.name}.old")
    rmtree(old)
    if final.exists():
        os.rename(final, old)
    os.rename(new, final)
    rmtree(old)


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (owned files of dead runs are stale)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def run(cmd: list, what: str, code: int = EXIT_ERROR, **kw) -> subprocess.CompletedProcess:
    """Run a command, capturing its output; a failure raises a StageError that
    names what was being done, the command and the end of its output."""
    kw.setdefault("capture_output", "stdout" not in kw and "stderr" not in kw)
    kw.setdefault("text", True)
    r = subprocess.run([str(c) for c in cmd], **kw)
    if r.returncode != 0:
        output = ((r.stdout or "") + (r.stderr or "")).strip() if kw.get("text") else ""
        raise StageError(f"{what} failed: {' '.join(map(str, cmd))} (exit {r.returncode})"
                         + (f":\n{output[-3000:]}" if output else ""), code)
    return r


def log(msg: str) -> None:
    print(f"[{Path(sys.argv[0]).name}] {msg}", file=sys.stderr, flush=True)


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main_wrapper(fn) -> None:
    """Run a stage's main(): user-facing errors without tracebacks, and SIGTERM
    and SIGHUP handled like Ctrl-C so that `finally` blocks clean up."""
    signal.signal(signal.SIGTERM, _raise_interrupt)
    signal.signal(signal.SIGHUP, _raise_interrupt)
    try:
        rc = fn()
    except StageError as e:
        print(f"{Path(sys.argv[0]).name}: error: {e}", file=sys.stderr)
        sys.exit(e.code)
    except KeyboardInterrupt:
        print(f"{Path(sys.argv[0]).name}: interrupted; partial outputs removed", file=sys.stderr)
        sys.exit(130)
    except OSError as e:
        # a missing or unreadable input named on the command line: one line, no traceback
        if e.filename is None:
            raise
        print(f"{Path(sys.argv[0]).name}: error: {e.filename}: {e.strerror}", file=sys.stderr)
        sys.exit(EXIT_ERROR)
    sys.exit(rc or 0)


def version_newer(a: str, b: str) -> bool:
    """dpkg's own ordering of Debian versions: is a newer than b?"""
    return subprocess.run(["dpkg", "--compare-versions", a, "gt", b]).returncode == 0


def newest_first(versions) -> list[str]:
    """Distinct Debian versions, newest first, in dpkg's order."""
    return sorted(set(versions), key=functools.cmp_to_key(lambda a, b: -1 if version_newer(a, b) else 1))
