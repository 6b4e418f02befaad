"""Strict application of a quilt series: no fuzz, failures named down to the hunk,
and our patches checked against upstream before they are applied.
"""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from ..common import StageError, log

APPLIED_UPSTREAM_MARK = "applied-upstream"


def parse_series(path: Path) -> list[tuple[str, str]]:
    """[(patch name, annotation after '#')] in order; comment lines skipped."""
    out = []
    for lineno, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, _, note = line.partition("#")
        words = name.split()
        if len(words) != 1:
            raise StageError(f"{path}:{lineno}: expected one patch name per line, got {name.strip()!r}")
        out.append((words[0], note.strip()))
    return out


def quilt_files(series_dir: Path) -> list[tuple[str, Path]]:
    """A quilt directory's series and patches, named by directory and file,
    for a digest of what is applied. The notes and test lists kept beside
    them (README.md, unit-tests.toml) shape neither the tree nor the compiled
    code, so editing them must not re-assemble the tree or make the training
    counts stale."""
    return [(f"{series_dir.name}/{p.name}", p) for p in sorted(series_dir.iterdir())
            if p.is_file() and (p.name == "series" or p.suffix == ".patch")]


def _quilt_env() -> dict:
    env = dict(os.environ)
    env.update(QUILT_PATCHES="debian/patches", QUILT_PC=".pc",
               QUILT_PATCH_OPTS="--reject-format=unified", QUILT_NO_DIFF_TIMESTAMPS="1")
    env.pop("QUILTRC", None)
    return env


def reverse_applies(tree: Path, patch: Path) -> bool:
    """True if the tree already contains the patch's change exactly."""
    r = subprocess.run(["patch", "-p1", "-R", "--dry-run", "--fuzz=0", "-f", "-s", "-i", str(patch)],
                       cwd=tree, capture_output=True, text=True)
    return r.returncode == 0


def explain_failure(tree: Path, patch: Path, name: str, quilt_output: str) -> str:
    """Name the patch, the file and the hunk that failed, and whether fuzz would have hidden it."""
    failed, current = [], None
    for line in quilt_output.splitlines():
        m = re.match(r"patching file (.+)$", line)
        if m:
            current = m.group(1).strip("'")
        m = re.match(r"Hunk #(\d+) FAILED at (\d+)", line)
        if m:
            failed.append((current, m.group(1), m.group(2)))
        if "can't find file to patch" in line or "No file to patch" in line:
            failed.append((current or "?", "-", "-"))
    fuzzy = {}
    r = subprocess.run(["patch", "-p1", "--dry-run", "--fuzz=3", "-f", "-i", str(patch)],
                       cwd=tree, capture_output=True, text=True)
    current = None
    for line in r.stdout.splitlines():
        m = re.match(r"(?:checking|patching) file (.+)$", line)
        if m:
            current = m.group(1).strip("'")
        m = re.match(r"Hunk #(\d+) succeeded at (\d+) with fuzz (\d+)", line)
        if m:
            fuzzy[(current, m.group(1))] = m.group(3)
    parts = []
    for f, hunk, at in failed:
        if (f, hunk) in fuzzy:
            parts.append(f"hunk #{hunk} of {f} needs fuzz {fuzzy[(f, hunk)]} (fuzz is refused; refresh the patch)")
        elif hunk == "-":
            parts.append(f"file {f} does not exist")
        else:
            parts.append(f"hunk #{hunk} of {f} fails at line {at}")
    detail = "; ".join(parts) or quilt_output.strip().splitlines()[-1:]
    return f"patch {name} does not apply: {detail}"


def apply_series(tree: Path, ours: set[str], series_file_for_errors: Path) -> list[str]:
    """Push every patch of debian/patches/series with fuzz 0; return the applied list."""
    env = _quilt_env()
    series = [n for n, _ in parse_series(tree / "debian" / "patches" / "series")]
    for name in series:
        patch = tree / "debian" / "patches" / name
        if name in ours and reverse_applies(tree, patch):
            short = name.split("/", 1)[-1]
            raise StageError(
                f"patch {short} is already applied upstream (it reverse-applies cleanly); "
                f"mark it '{short}  # {APPLIED_UPSTREAM_MARK}' in {series_file_for_errors} or drop it")
        r = subprocess.run(["quilt", "push", "--fuzz=0"], cwd=tree, env=env,
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise StageError(explain_failure(tree, patch, name, r.stdout + r.stderr))
    r = subprocess.run(["quilt", "applied"], cwd=tree, env=env, capture_output=True, text=True)
    applied = [line.strip().removeprefix("debian/patches/") for line in r.stdout.splitlines() if line.strip()]
    if applied != series:
        raise StageError(f"quilt applied lists {len(applied)} patches, the series has {len(series)}")
    log(f"applied {len(applied)} patches with fuzz 0")
    return applied
