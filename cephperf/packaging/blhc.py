"""blhc on a build log, judged against the exceptions in cmake/blhc.toml.

blhc (build log hardening check) reads every compile and link line of a
dpkg-buildpackage log and warns where the flags dpkg-buildflags gives are
missing. A release build passes when every warning is explained by an
exception (a regular expression and its reason); anything else fails it.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

from ..common import StageError, EXIT_ERROR

WARNING = re.compile(r"^(?:(\d+):)?([A-Z]+FLAGS missing \([^)]*\)|[A-Z][^:]*):\s(.*)$")


def warnings(output: str) -> list[str]:
    """blhc's warning lines (its --line-numbers prefix kept)."""
    return [line for line in output.splitlines() if WARNING.match(line)]


def judge(lines: list[str], exceptions: list[dict]) -> dict:
    """{explained: {reason: count}, unexplained: [line, ...]}."""
    explained: dict[str, int] = {}
    unexplained = []
    compiled = [(re.compile(e["match"]), e["reason"]) for e in exceptions]
    for line in lines:
        text = line.split(":", 1)[1] if re.match(r"^\d+:", line) else line
        reason = next((r for rx, r in compiled if rx.search(text)), None)
        if reason:
            explained[reason] = explained.get(reason, 0) + 1
        else:
            unexplained.append(line)
    return {"explained": explained, "unexplained": unexplained}


# blhc's exit status is a bit mask; these bits mean it could not judge the log
CANNOT_JUDGE = {1: "no compiler commands found", 2: "invalid arguments", 4: "not a verbose build log",
                16: "a hardening wrapper was used, nothing was checked"}


def run_blhc(build_log: Path) -> str:
    """blhc's output on one log (Debian's settings: PIE is the compiler's default)."""
    try:
        r = subprocess.run(["blhc", "--debian", "--line-numbers", str(build_log)], capture_output=True, text=True)
    except FileNotFoundError:
        raise StageError("blhc is not installed (ci/setup-host installs it)", EXIT_ERROR)
    why = [text for bit, text in CANNOT_JUDGE.items() if r.returncode & bit]
    if why:
        raise StageError(f"blhc could not judge {build_log}: {'; '.join(why)} (exit {r.returncode})", EXIT_ERROR)
    return r.stdout
