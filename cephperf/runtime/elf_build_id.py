"""An ELF file's GNU build ID, read with the standard library alone.

The runtime root has no binutils, and the build ID is what names a binary:
two ceph-osd files with one build ID are one build (the release's and
`ci/build-osd --release`'s, when reproducible), and Debian's -dbgsym
packages are keyed by it. Each gate round records the ID of the ceph-osd it
ran, so a saved report says which binary it measured; ci/audit-flags pairs
stripped binaries with their separate debug files by it
(cephperf/packaging/elf.py), which keep the note segment.
"""
import struct
from pathlib import Path

PT_NOTE = 4
NT_GNU_BUILD_ID = 3


class NotElf(ValueError):
    pass


def gnu_build_id(path: str | Path) -> str | None:
    """The hex build ID from the file's PT_NOTE segments; None if it has none."""
    with open(path, "rb") as f:
        ident = f.read(16)
        if ident[:4] != b"\x7fELF" or ident[4] not in (1, 2) or ident[5] not in (1, 2):
            raise NotElf(f"{path}: not an ELF file")
        is64, order = ident[4] == 2, "<" if ident[5] == 1 else ">"
        header = f.read(48 if is64 else 36)
        # e_phoff, then e_phentsize and e_phnum, at their offsets after e_ident
        (phoff,) = struct.unpack_from(order + ("Q" if is64 else "I"), header, 16 if is64 else 12)
        phentsize, phnum = struct.unpack_from(order + "HH", header, 38 if is64 else 26)
        for i in range(phnum):
            f.seek(phoff + i * phentsize)
            entry = f.read(phentsize)
            if struct.unpack_from(order + "I", entry, 0)[0] != PT_NOTE:
                continue
            # p_offset and p_filesz, with p_vaddr and p_paddr between them
            offset, filesz = (struct.unpack_from(order + "Q16xQ", entry, 8) if is64
                              else struct.unpack_from(order + "I8xI", entry, 4))
            f.seek(offset)
            found = _build_id_in_notes(f.read(filesz), order)
            if found:
                return found
    return None


def _build_id_in_notes(notes: bytes, order: str) -> str | None:
    """Walk one note segment: each note is namesz, descsz, type, then name and desc, each padded to 4 bytes."""
    pos = 0
    while pos + 12 <= len(notes):
        namesz, descsz, kind = struct.unpack_from(order + "III", notes, pos)
        name_at = pos + 12
        desc_at = name_at + (namesz + 3) // 4 * 4
        if kind == NT_GNU_BUILD_ID and notes[name_at:name_at + namesz] == b"GNU\0":
            return notes[desc_at:desc_at + descsz].hex()
        pos = desc_at + (descsz + 3) // 4 * 4
    return None


def build_id_text(path: str | Path) -> str:
    """The build ID for a record: its hex, "none", or "not an ELF file" (a
    wrapper script, e.g. a broken variant made of Debian's ceph-osd and an option)."""
    try:
        return gnu_build_id(path) or "none"
    except NotElf:
        return "not an ELF file"
