"""A long build's output: all of it to build.log, to the console only what a
person (or a CI system with a log limit) needs.

The console gets the build's progress (make's `[ 45%]` lines, one per new
percentage), each debhelper step as it starts, and a heartbeat when nothing
else was printed for a while, so a CI job that kills silent jobs sees life.
A failed build's console ends with the last lines of the log.
"""
from __future__ import annotations

import collections
import os
import queue
import re
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Callable

from .. import paths
from ..common import StageError

HEARTBEAT_SECONDS = 300
TAIL_LINES = 40
PERCENT = re.compile(r"^\[\s*(\d+)%\]")
# dpkg-buildpackage's own steps and debhelper's, as dh prints them ("   dh_strip -a")
STEP = re.compile(r"^(dpkg-buildpackage: info: |dpkg-source: info: |   (dh_\S+|debian/rules \S+))")


class Console:
    """Decides which build lines reach the console; pure, so tests feed it lines and times."""

    def __init__(self, heartbeat: float = HEARTBEAT_SECONDS):
        self.heartbeat = heartbeat
        self.percent = -1
        self.lines = 0
        self.last_said = None
        self.started = None

    def line(self, text: str, now: float) -> str | None:
        """What to print for one line of the build's output, if anything."""
        self.started = now if self.started is None else self.started
        self.lines += 1
        m = PERCENT.match(text)
        if m and int(m.group(1)) != self.percent:
            self.percent = int(m.group(1))
            return self._said(f"build {self.percent}%: {text[m.end():].strip()[:120]}", now)
        if STEP.match(text):
            return self._said(text.strip(), now)
        return self.tick(now)

    def tick(self, now: float) -> str | None:
        """The heartbeat, when nothing was printed for `heartbeat` seconds."""
        self.started = now if self.started is None else self.started
        if now - (self.last_said or self.started) >= self.heartbeat:
            where = f"{self.percent}%" if self.percent >= 0 else "before the compile"
            return self._said(f"still building after {(now - self.started) / 60:.0f} min ({where}, "
                              f"{self.lines} log lines)", now)
        return None

    def _said(self, text: str, now: float) -> str:
        self.last_said = now
        return text


def follow(stream: IO[str], logf: IO[str], say: Callable[[str], None] | None = None,
           clock: Callable[[], float] = time.monotonic, console: Console | None = None,
           poll: float = 30, label: str = "build-debs") -> list[str]:
    """Copy every line of `stream` to logf and print the console's choice, with
    a heartbeat through silent stretches (a long link prints nothing); the
    last TAIL_LINES lines once the stream ends."""
    say = say or (lambda s: print(s, file=sys.stderr, flush=True))
    console = console or Console()
    lines: queue.Queue = queue.Queue()
    reader = threading.Thread(target=lambda: [*map(lines.put, stream), lines.put(None)], daemon=True)
    reader.start()
    tail: collections.deque = collections.deque(maxlen=TAIL_LINES)
    while True:
        try:
            text = lines.get(timeout=poll)
        except queue.Empty:
            shown = console.tick(clock())
        else:
            if text is None:
                break
            logf.write(text)
            logf.flush()
            tail.append(text.rstrip("\n"))
            shown = console.line(text.rstrip("\n"), clock())
        if shown:
            say(f"[{label}] {shown}")
    reader.join()
    return list(tail)


def run_logged(start: Callable[[IO[str]], int], logf: IO[str], label: str = "build-debs") -> tuple[int, list[str]]:
    """start(pipe) runs the build with its output into `pipe` and returns its
    exit code; the output is followed (logf, console) meanwhile. The build runs
    in the calling (main) thread, where an interrupt stops it; the follower
    ends when the last writer closes the pipe. (exit code, last lines)."""
    read_end, write_end = os.pipe()
    tail: list[str] = []
    follower = threading.Thread(target=lambda: tail.extend(follow(os.fdopen(read_end), logf, label=label)))
    follower.start()
    try:
        with os.fdopen(write_end, "w") as pipe:
            rc = start(pipe)
    finally:
        follower.join()
    return rc, tail


def build_in_root(root, script: Path, env: dict, logf: IO[str], label: str, failed: str, code: int,
                  binds: list = (), mounts: dict | None = None) -> None:
    """`bash script` in the root (a Root), its output followed into logf and the
    console. On failure the log's last lines are printed and StageError(code)
    says `failed` (what failed, and what to do)."""
    # bash reads a script as it runs it, so an edit of the repository's copy
    # during an hour's build would change the lines it has yet to read (an
    # instrumented build was lost so, 2026-11-27). The build runs a copy of the
    # scripts' directory (the script and what it sources) taken as it starts.
    with tempfile.TemporaryDirectory(prefix="build-scripts-", dir=paths.scratch_dir()) as snapshot:
        copy = Path(snapshot) / script.parent.name
        shutil.copytree(script.parent, copy)
        # stdbuf keeps make's progress lines flowing through the pipe as they are printed
        rc, tail = run_logged(lambda pipe: root.run(["stdbuf", "-oL", "-eL", "bash", str(copy / script.name)],
                                                    stdout=pipe, binds=binds, env=env, mounts=mounts),
                              logf, label=label)
    if rc != 0:
        print("\n".join(tail), file=sys.stderr)
        raise StageError(f"{failed} (exit {rc}); the last lines of its log are above", code)
