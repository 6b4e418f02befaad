"""Loop devices over files, for an OSD whose device must say it is flash.

The kernel marks a loop device rotational when its backing file lies on a
rotational disk, as these hosts' disks are; the flag is the block queue's
own (/sys/block/loopN/queue/rotational), which root may set. BlueStore reads
that flag when it opens its device and derives from it what a flash OSD
runs with: the SSD cache, throttle and deferred-write settings, eight op
shards of two threads, mClock's SSD capacity. The data still goes to the
same file on the same disk as a file-backed device's (direct I/O on both
levels), so two layouts differ in what the OSD believes, not in the disk.

Every device is made with the kernel's autoclear flag and held open by this
process: it is detached when the last holder closes it, so a run that is
killed leaves no device behind. Python's stdlib only (ioctl), no losetup.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import struct
from pathlib import Path

LOOP_CTL_GET_FREE = 0x4C82
LOOP_CONFIGURE = 0x4C0A
LO_FLAGS_AUTOCLEAR = 4
LO_FLAGS_DIRECT_IO = 16
# struct loop_config: fd, block_size, struct loop_info64 (lo_device, lo_inode,
# lo_rdevice, lo_offset, lo_sizelimit; lo_number, lo_encrypt_type,
# lo_encrypt_key_size, lo_flags; lo_file_name[64], lo_crypt_name[64],
# lo_encrypt_key[32]; lo_init[2]), __reserved[8]
LOOP_CONFIG = struct.Struct("=II QQQQQ IIII 64s64s32s QQ 8Q")


class LoopError(RuntimeError):
    pass


def loop_config(backing_fd: int, flags: int, name: str) -> bytes:
    return LOOP_CONFIG.pack(backing_fd, 0, 0, 0, 0, 0, 0, 0, 0, 0, flags, name.encode()[:63], b"", b"", 0, 0,
                            *([0] * 8))


def queue_file(device: str, name: str) -> Path:
    return Path("/sys/block") / Path(device).name / "queue" / name


def attach(backing: Path, rotational: bool, stack: contextlib.ExitStack) -> str:
    """/dev/loopN over `backing`, held open until `stack` closes, with its
    rotational flag set as asked (read back: a kernel that ignores the write
    is an error, not a mislabelled layout)."""
    try:
        with open("/dev/loop-control", "rb") as control:
            number = fcntl.ioctl(control.fileno(), LOOP_CTL_GET_FREE)
        device = f"/dev/loop{number}"
        loop_fd = os.open(device, os.O_RDWR | os.O_CLOEXEC)
    except OSError as e:
        raise LoopError(f"no loop device for {backing}: {e} (needs root and /dev/loop-control)")
    stack.callback(os.close, loop_fd)
    backing_fd = os.open(backing, os.O_RDWR | os.O_CLOEXEC)
    try:
        try:
            fcntl.ioctl(loop_fd, LOOP_CONFIGURE,
                        loop_config(backing_fd, LO_FLAGS_AUTOCLEAR | LO_FLAGS_DIRECT_IO, str(backing)))
        except OSError as e:
            if e.errno == errno.EBUSY:  # taken between GET_FREE and CONFIGURE by another run
                raise LoopError(f"{device} was taken by another process; run again")
            raise LoopError(f"{device} over {backing}: LOOP_CONFIGURE failed: {e}")
    finally:
        os.close(backing_fd)  # the device holds its own reference to the file
    flag = queue_file(device, "rotational")
    try:
        flag.write_text("1" if rotational else "0")
        seen = flag.read_text().strip()
    except OSError as e:
        raise LoopError(f"{device}: could not set {flag}: {e}")
    if seen != ("1" if rotational else "0"):
        raise LoopError(f"{device}: {flag} reads {seen} after it was set to {int(rotational)}")
    return device


def devices(files: list[Path], size_bytes: int, rotational: bool, stack: contextlib.ExitStack) -> list[str]:
    """One loop device per file (each made sparse, of size_bytes), held by `stack`."""
    found = []
    for f in files:
        f.parent.mkdir(parents=True, exist_ok=True)
        with open(f, "wb") as fh:
            fh.truncate(size_bytes)
        found.append(attach(f, rotational, stack))
    return found
