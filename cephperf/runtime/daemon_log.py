"""What a daemon's log says of its end: the lines that name why an OSD died,
and the one-line kind (full, aborted, stopped) a round's error begins with."""
from __future__ import annotations

import re

# The lines of an OSD's log that say why it died; its crash dump repeats them.
# A signal's name may have spaces in it: "Caught signal (Segmentation fault)".
ABORT_LINE = re.compile(r"rocksdb: submit_common error: .*|FAILED ceph_assert.*|Caught signal \([^)]*\)")


def abort_lines(log_text: str) -> list[str]:
    """Each distinct line of ABORT_LINE in a log, in order, without RocksDB's error code."""
    return list(dict.fromkeys(m.group(0).split(" code =")[0].strip() for m in ABORT_LINE.finditer(log_text)))


def cause(tail40: list[str], tail15: list[str]) -> str:
    """Why a daemon stopped, read from its log's last lines: full, aborted, or just stopped."""
    tail = "\n".join(tail40)
    aborted = re.search(r"Caught signal|ceph_abort|abort\(\)|FAILED ceph_assert|unexpected error", tail)
    if re.search(r"No space left|ENOSPC|\(28\)|_do_alloc_write failed|allocate failed|failsafe full", tail, re.I):
        kind = "OSD full (out of space)" + (", aborted" if aborted else "")
    elif aborted:
        kind = "OSD aborted"
    else:
        kind = "OSD stopped"
    return kind + "; last log lines:\n  " + "\n  ".join(tail15)
