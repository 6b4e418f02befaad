"""How a daemon ended: the lines of its log that name why an OSD died, the
one-line kind (full, aborted, stopped) a round's error begins with, and its
exit status in words."""
from __future__ import annotations

import errno
import os
import re
import signal

# The lines of an OSD's log that say why it died; its crash dump repeats them.
# A signal's name may have spaces in it: "Caught signal (Segmentation fault)".
ABORT_LINE = re.compile(r"rocksdb: submit_common error: .*|FAILED ceph_assert.*|Caught signal \([^)]*\)")


def abort_lines(log_text: str) -> list[str]:
    """Each distinct line of ABORT_LINE in a log, in order, without RocksDB's error code."""
    return list(dict.fromkeys(m.group(0).split(" code =")[0].strip() for m in ABORT_LINE.finditer(log_text)))


def cause(tail40: list[str], tail15: list[str], name: str = "osd.0") -> str:
    """Why a daemon stopped, read from its log's last lines: full, aborted, or just stopped."""
    who = "OSD" if name.startswith("osd.") else name
    tail = "\n".join(tail40)
    aborted = re.search(r"Caught signal|ceph_abort|abort\(\)|FAILED ceph_assert|unexpected error", tail)
    if re.search(r"No space left|ENOSPC|\(28\)|_do_alloc_write failed|allocate failed|failsafe full", tail, re.I):
        kind = f"{who} full (out of space)" + (", aborted" if aborted else "")
    elif aborted:
        kind = f"{who} aborted"
    else:
        kind = f"{who} stopped"
    return kind + "; last log lines:\n  " + "\n  ".join(tail15)


# Exit statuses that Ceph's daemons give as an errno when they refuse to
# start. ceph-mon exits ENOSPC when its data's filesystem is below
# mon_data_avail_crit, before its log is flushed, so the status is all there
# is. Others are not read as errnos: 1 is the daemons' generic failure.
ERRNO_EXITS = (errno.ENOSPC,)


def exit_status(returncode: int) -> str:
    """A daemon's end as words: its signal, or its status (an errno's name where one is known)."""
    if returncode < 0:
        try:
            return f"signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"signal {-returncode}"
    if returncode in ERRNO_EXITS:
        return f"status {returncode} ({errno.errorcode[returncode]}: {os.strerror(returncode)})"
    return f"status {returncode}"
