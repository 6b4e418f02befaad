"""The skeleton every producing stage shares: one output directory keyed by
its hashed inputs, made under a lock, swapped into place whole, stamped.

A stage whose inputs have not changed does nothing. An interrupted stage
leaves either the previous complete output or none, never a half-written one:
the new output is made in a sibling directory that a later run discards.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from .common import locked, log, read_stamp, replace_dir, rmtree, write_atomic, write_stamp

# In a resumable stage's unfinished output: the inputs it is being made from.
RESUME_MARK = ".inputs"


def current(out: Path, key: str, valid: Callable[[dict], bool] = lambda stamp: True) -> dict | None:
    """The stamp of `out` if it was made from these inputs (and `valid` accepts it)."""
    stamp = read_stamp(out / "stamp.json")
    if stamp and stamp.get("inputs") == key and valid(stamp):
        return stamp
    return None


def produce(out: Path, key: str, make: Callable[[Path], dict], *,
            valid: Callable[[dict], bool] = lambda stamp: True, force: bool = False,
            keep_failed: bool = False, resumable: bool = False, resume_key: str | None = None) -> dict:
    """`out`'s stamp, making `out` first unless it is current.

    make(new) fills the fresh directory `new` and returns the fields to stamp
    it with; `new` then replaces `out` in one step. A concurrent run of the
    same stage waits for the lock and then finds the output current.
    keep_failed leaves what a failing make() wrote in `new`, for diagnosis
    (its logs); the next run discards it.
    resumable keeps an interrupted or failed make()'s `new` for the next run
    with the same inputs, whose make() takes it up where its own markers say
    the last one stopped (a run with other inputs, or forced, discards it):
    for a stage whose first step takes hours and whose checks take minutes.
    resume_key (default: key) is what an unfinished output must have been
    started with to be taken up: the inputs of the long step alone, so that
    a change to what only the checks read (their rules) resumes at them.
    """
    with locked(out.with_name(f".{out.name}.lock")):
        stamp = None if force else current(out, key, valid)
        if stamp:
            log(f"up to date (inputs unchanged): {out}")
            return stamp
        new = out.with_name(f".{out.name}.new")
        mark = new / RESUME_MARK
        resume_key = resume_key or key
        if resumable and not force and mark.is_file() and mark.read_text() == resume_key:
            log(f"resuming {new}: an earlier run with these inputs stopped before it was done")
        else:
            rmtree(new)  # whatever an interrupted run left is never trusted
            new.mkdir(parents=True)
            if resumable:
                write_atomic(mark, resume_key)
        try:
            fields = make(new)
        except BaseException:
            if not (keep_failed or resumable):
                rmtree(new)
            raise
        mark.unlink(missing_ok=True)
        write_stamp(new / "stamp.json", inputs=key, **fields)
        replace_dir(new, out)
    return read_stamp(out / "stamp.json")
