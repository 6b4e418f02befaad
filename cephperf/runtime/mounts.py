"""Detaching a round's mounts (python3 stdlib only)."""
from __future__ import annotations

import ctypes
import errno
import os
from pathlib import Path

from .shell import log


def unmount(mnt: Path) -> None:
    """Detach a mount (MNT_DETACH). Nothing here touches the file system: a
    stat of a FUSE mount whose daemon is stuck would block."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.umount2(str(mnt).encode(), MNT_DETACH) != 0 and ctypes.get_errno() != errno.EINVAL:  # EINVAL: not mounted
        log(f"could not unmount {mnt}: {os.strerror(ctypes.get_errno())} (it goes with the round's namespace)")


MNT_DETACH = 2
