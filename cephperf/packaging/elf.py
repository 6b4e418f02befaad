"""Reading what the compiler did from built binaries: ELF files in .debs,
debug files paired by build-id, compile units' DW_AT_producer and
DW_AT_name, symbols, and the compile units holding assert() call sites.

readelf does the DWARF decoding: only the compilation-unit DIEs are dumped
(--dwarf-depth=1), which is enough for DW_AT_producer and DW_AT_name.
"""
from __future__ import annotations

import bisect
import collections
import os
import re
import subprocess
from pathlib import Path

from ..common import StageError, EXIT_ERROR
from ..runtime.elf_build_id import gnu_build_id
from .archive import unpack_deb


def is_elf(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def readelf(*args: str) -> str:
    r = subprocess.run(["readelf", "-W", *args], capture_output=True, text=True, errors="replace")
    if r.returncode != 0 and not r.stdout:
        raise StageError(f"readelf {' '.join(args)} failed: {r.stderr.strip()[:500]}", EXIT_ERROR)
    return r.stdout




def sections(path: Path) -> dict[str, str]:
    """{section name: type} from one `readelf -S`."""
    out = {}
    for line in readelf("-S", str(path)).splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+(\S+)", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def has_dwarf(secs: dict[str, str]) -> bool:
    return any(secs.get(n, "NOBITS") != "NOBITS" for n in (".debug_info", ".zdebug_info"))


def has_text(secs: dict[str, str]) -> bool:
    return secs.get(".text", "NOBITS") != "NOBITS"


def collect_elfs(inputs: list[Path], workdir: Path) -> list[dict]:
    """ELF files from the inputs (unpacking .debs), paired with debug files by build-id."""
    found = []
    for i, item in enumerate(inputs):
        if item.suffix in (".deb", ".ddeb"):
            dest = unpack_deb(item, workdir / f"{i}-{item.stem}")
            for p in sorted(dest.rglob("*")):
                if p.is_file() and not p.is_symlink() and is_elf(p):
                    found.append({"path": p, "label": f"{item.name}:/{p.relative_to(dest)}"})
        elif is_elf(item):
            found.append({"path": item, "label": str(item)})
        else:
            raise StageError(f"{item}: neither an ELF file nor a .deb", EXIT_ERROR)
    for e in found:
        e["build_id"] = gnu_build_id(e["path"])
        e["sections"] = sections(e["path"])
        e["dwarf"] = has_dwarf(e["sections"])
        e["is_debug_file"] = "/usr/lib/debug/" in e["label"]
    debug_by_id = {e["build_id"]: e for e in found if e["is_debug_file"] and e["dwarf"] and e["build_id"]}
    out, used = [], set()
    for e in found:
        if e["is_debug_file"]:
            continue
        if e["dwarf"]:
            out.append({**e, "debug": e["path"]})
        elif e["build_id"] in debug_by_id:
            d = debug_by_id[e["build_id"]]
            used.add(id(d))
            out.append({**e, "debug": d["path"]})
        else:
            out.append({**e, "debug": None})
    out += [{**d, "debug": d["path"]} for d in debug_by_id.values() if id(d) not in used]
    return out


def area_of(name: str) -> str:
    n = name.replace("\\", "/")
    # With -ffile-prefix-map=SRC=. a path reads BUILDDIR/sub/./src/osd/x.cc:
    # the part after the last "/./" is the source path.
    if "/./" in n:
        n = n.rsplit("/./", 1)[1]
    n = os.path.normpath(n)
    m = re.search(r"(?:^|/)src/(.*)$", n)
    if not m:
        return "other"
    rest = m.group(1).split("/")
    return "src" if len(rest) == 1 else "src/" + rest[0]


def compile_units(path: Path) -> list[dict]:
    """[{name, producer}] for every compile unit (dwz partial units skipped)."""
    proc = subprocess.Popen(["readelf", "-W", "--debug-dump=info", "--dwarf-depth=1", str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, errors="replace")
    units, cur, offset = [], None, None
    # "DW_AT_producer : (strp) (offset: 0x2d716c): GNU C++20 ..." and older
    # "(indirect string, offset: 0x..): ..." forms; the value follows the parentheses.
    value = re.compile(r"DW_AT_(producer|name|comp_dir)\s*:\s*(?:\([^)]*\)\s*)*:?\s*(.*)$")
    for line in proc.stdout:
        m = re.match(r"\s*Compilation Unit @ offset (0x[0-9a-f]+|0):", line)
        if m:
            offset = int(m.group(1), 16)
        elif "DW_TAG_compile_unit" in line:
            cur = {"name": "", "producer": "", "comp_dir": "", "offset": offset}
            units.append(cur)
        elif "DW_TAG_" in line:
            cur = None
        elif cur is not None and "DW_AT_" in line:
            m = value.search(line)
            if m and not cur[m.group(1)]:
                cur[m.group(1)] = m.group(2).strip()
    proc.wait()
    return units


def opt_level(producer: str) -> str:
    level = "-O0"
    for tok in producer.split():
        if tok.startswith("-O"):
            level = "-O1" if tok == "-O" else tok
    return level


def symbols(path: Path) -> set[str]:
    names = set()
    for line in readelf("-s", str(path)).splitlines():
        parts = line.split()
        if len(parts) >= 8 and parts[0].endswith(":"):
            names.add(parts[7].split("@")[0])
    return names


def cu_ranges(debug: Path) -> list[tuple[int, int, int]]:
    """[(start, end, CU offset in .debug_info)] from .debug_aranges, sorted."""
    ranges, cu = [], None
    for line in readelf("--debug-dump=aranges", str(debug)).splitlines():
        m = re.match(r"\s*Offset into \.debug_info:\s*(0x[0-9a-f]+|\d+)", line)
        if m:
            cu = int(m.group(1), 0)
            continue
        m = re.match(r"\s*([0-9a-f]{8,})\s+([0-9a-f]{8,})\s*$", line)
        if m and cu is not None:
            start, length = int(m.group(1), 16), int(m.group(2), 16)
            if length:
                ranges.append((start, start + length, cu))
    ranges.sort()
    return ranges


def is_link_time(unit: dict) -> bool:
    """A unit GCC's link-time optimiser made (one per LTRANS partition, named
    <artificial>): it holds the code, while the units of the compile step keep
    only their declarations and the flags they were compiled with."""
    return unit["producer"].startswith("GNU GIMPLE")


def innermost_sources(debug: Path, addrs: list[int]) -> list[str]:
    """The source file of each address's innermost inlined frame: where the
    code at that address was written (`addr2line -a -i`, one batch)."""
    out = subprocess.run(["addr2line", "-a", "-i", "-e", str(debug), *(hex(a) for a in addrs)],
                         capture_output=True, text=True, errors="replace").stdout
    files: list[str] = []
    for line in out.splitlines():
        if line.startswith("0x"):
            files.append("")  # a new address; its first frame is the innermost
        elif files and not files[-1]:
            files[-1] = line.rsplit(":", 1)[0]
    return files


def assert_call_sites(binary: Path, debug: Path, units: list[dict]) -> collections.Counter:
    """Areas of the code holding call sites of __assert_fail.

    assert() compiles to such a call only without NDEBUG, so a unit with one
    was compiled without it, whether the assert sits in its own source or in a
    header it inlined. Units are found by address through .debug_aranges.
    Under link-time optimisation the code sits in the optimiser's own units,
    which have no source of their own; a call site there counts for the file
    its assert() was written in, found through the line table.
    """
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(binary)],
                         capture_output=True, text=True, errors="replace").stdout
    addrs = [int(line.split(":", 1)[0].strip(), 16) for line in dis.splitlines()
             if "call" in line and "<__assert_fail@plt>" in line]
    areas = collections.Counter()
    if not addrs:
        return areas
    ranges = cu_ranges(debug)
    starts = [r[0] for r in ranges]
    by_offset = {u["offset"]: u for u in units}
    link_time = []
    for a in addrs:
        i = bisect.bisect_right(starts, a) - 1
        if not (i >= 0 and ranges[i][0] <= a < ranges[i][1]):
            areas["(no compile unit)"] += 1
            continue
        unit = by_offset.get(ranges[i][2], {"name": "", "producer": ""})
        if is_link_time(unit):
            link_time.append(a)
        else:
            areas[area_of(unit["name"])] += 1
    for source in innermost_sources(debug, link_time):
        areas[area_of(source) if source and not source.startswith("??") else "(no line information)"] += 1
    return areas
