"""GCC's warnings of One Definition Rule violations at link time, judged
against the exceptions in cmake/lto-warnings.toml.

Under LTO, GCC sees every translation unit of a link at once. Two
definitions of one name that differ (a class laid out two ways, a function
or variable declared with other types) are undefined behaviour that it can
now optimise across: it warns (-Wodr, -Wlto-type-mismatch), the link
succeeds, and the binary may be silently wrong. A release build therefore
fails on such a warning unless an exception explains it (a regular
expression over the warning line and the reason it is harmless), as
cmake/blhc.toml does for blhc's warnings.
"""
from __future__ import annotations

import re
from pathlib import Path

LTO_WARNING = re.compile(r"warning: .*\[-W(?:odr|lto-type-mismatch)\]")


def lto_warnings(build_log: Path) -> list[str]:
    """The log's ODR warnings, each once (every link that takes in the same
    objects repeats them), numbered by their first line in the log."""
    seen: dict[str, int] = {}
    with open(build_log, errors="replace") as f:
        for n, line in enumerate(f, 1):
            if LTO_WARNING.search(line):
                seen.setdefault(line.strip(), n)
    return [f"{n}:{text}" for text, n in seen.items()]
