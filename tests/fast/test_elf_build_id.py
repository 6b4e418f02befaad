"""The runtime's ELF build-ID reader: on small ELF files made here (64-bit
little-endian and 32-bit big-endian, the build ID after another GNU note),
on a real binary against readelf, and on a file that is not ELF."""
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from cephperf.runtime.elf_build_id import NotElf, gnu_build_id

NT_GNU_ABI_TAG = 1
NT_GNU_BUILD_ID = 3


def padded(b: bytes) -> bytes:
    return b + b"\0" * (-len(b) % 4)


def note(order: str, kind: int, name: bytes, desc: bytes) -> bytes:
    return struct.pack(order + "III", len(name), len(desc), kind) + padded(name) + padded(desc)


def program_header(is64: bool, order: str, kind: int, offset: int, size: int) -> bytes:
    if is64:  # p_type, p_flags, p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_align
        return struct.pack(order + "IIQQQQQQ", kind, 4, offset, 0, 0, size, size, 4)
    # p_type, p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_flags, p_align
    return struct.pack(order + "IIIIIIII", kind, offset, 0, 0, size, size, 4, 4)


def tiny_elf(is64: bool, order: str, notes: bytes) -> bytes:
    """An ELF header, one PT_LOAD and one PT_NOTE program header, then the notes."""
    ehsize, phentsize = (64, 56) if is64 else (52, 32)
    notes_at = ehsize + 2 * phentsize
    ident = b"\x7fELF" + bytes([2 if is64 else 1, 1 if order == "<" else 2, 1]) + b"\0" * 9
    word = "Q" if is64 else "I"
    header = ident + struct.pack(order + "HHI" + word * 3 + "IHHHHHH",
                                 2, 62, 1, 0, ehsize, 0, 0, ehsize, phentsize, 2, 0, 0, 0)
    return (header + program_header(is64, order, 1, 0, notes_at)
            + program_header(is64, order, 4, notes_at, len(notes)) + notes)


ID = bytes(range(0xA0, 0xB4))


class GnuBuildIdTest(unittest.TestCase):
    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="cp-elf-"))
        self.addCleanup(shutil.rmtree, self.dir, True)

    def write(self, data: bytes) -> Path:
        path = self.dir / f"f{len(list(self.dir.iterdir()))}"
        path.write_bytes(data)
        return path

    def test_the_build_id_after_another_gnu_note_in_both_classes_and_byte_orders(self):
        for is64, order in ((True, "<"), (False, ">")):
            with self.subTest(is64=is64, order=order):
                notes = (note(order, NT_GNU_ABI_TAG, b"GNU\0", struct.pack(order + "IIII", 0, 3, 2, 0))
                         + note(order, NT_GNU_BUILD_ID, b"GNU\0", ID))
                self.assertEqual(gnu_build_id(self.write(tiny_elf(is64, order, notes))), ID.hex())

    def test_a_build_id_type_under_another_owner_is_not_taken(self):
        notes = note("<", NT_GNU_BUILD_ID, b"Go\0", b"\x01" * 8)
        self.assertIsNone(gnu_build_id(self.write(tiny_elf(True, "<", notes))))

    def test_a_real_binary_agrees_with_readelf(self):
        binary = Path(sys.executable).resolve()
        out = subprocess.run(["readelf", "-n", str(binary)], capture_output=True, text=True, check=True).stdout
        expected = next(line.split(":", 1)[1].strip() for line in out.splitlines() if "Build ID:" in line)
        self.assertEqual(gnu_build_id(binary), expected)

    def test_a_separate_debug_file_agrees_with_readelf(self):
        # what ci/audit-flags pairs a stripped binary with, by this ID
        binary = Path(sys.executable).resolve()
        debug = self.dir / "python.debug"
        subprocess.run(["objcopy", "--only-keep-debug", str(binary), str(debug)], check=True)
        out = subprocess.run(["readelf", "-n", str(debug)], capture_output=True, text=True, check=True).stdout
        expected = next(line.split(":", 1)[1].strip() for line in out.splitlines() if "Build ID:" in line)
        self.assertEqual(gnu_build_id(debug), expected)

    def test_a_file_that_is_not_elf_is_named(self):
        path = self.write(b"#!/bin/sh\nexit 0\n")
        with self.assertRaisesRegex(NotElf, f"{path}: not an ELF file"):
            gnu_build_id(path)


if __name__ == "__main__":
    unittest.main()
