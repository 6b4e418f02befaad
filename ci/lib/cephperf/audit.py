"""Reading what the compiler did, from the DWARF and symbols of built binaries.

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

from .archive import unpack_deb
from .common import REPO, StageError, EXIT_ERROR, load_toml

RULES = REPO / "cmake" / "audit-rules.toml"


def in_areas(area: str, prefixes: list[str]) -> bool:
    return any(area == p or area.startswith(p + "/") for p in prefixes)


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


def build_id(path: Path) -> str | None:
    m = re.search(r"Build ID:\s*([0-9a-f]+)", readelf("-n", str(path)))
    return m.group(1) if m else None


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
        e["build_id"] = build_id(e["path"])
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


def assert_call_sites(binary: Path, debug: Path, units: list[dict]) -> collections.Counter:
    """Areas of the compile units holding call sites of __assert_fail.

    assert() compiles to such a call only without NDEBUG, so a unit with one
    was compiled without it, whether the assert sits in its own source or in a
    header it inlined. Units are found by address through .debug_aranges.
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
    area_by_cu = {u["offset"]: area_of(u["name"]) for u in units}
    for a in addrs:
        i = bisect.bisect_right(starts, a) - 1
        if i >= 0 and ranges[i][0] <= a < ranges[i][1]:
            areas[area_by_cu.get(ranges[i][2], "other")] += 1
        else:
            areas["(no compile unit)"] += 1
    return areas


def audit_elfs(elfs: list[dict], rules: dict | None = None) -> dict:
    rules = rules or load_toml(RULES)
    min_units = rules.get("coverage", {}).get("min_units", {})
    opt_areas, allowed = rules["optimisation"]["areas"], rules["optimisation"]["allowed"]
    nd_areas, nd_symbols = rules["ndebug"]["areas"], rules["ndebug"]["symbols"]
    problems, binaries = [], []
    areas: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    audited = 0
    for e in elfs:
        entry = {"label": e["label"], "build_id": e["build_id"]}
        binaries.append(entry)
        if e["debug"] is None:
            entry["status"] = "no DWARF (give its -dbg or dbgsym package)"
            entry["ceph_units"] = {}
            problems += coverage_problems(e["label"], {}, None, min_units)
            continue
        units = compile_units(e["debug"])
        audited += 1
        entry["units"] = len(units)
        per: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        bad = []
        for u in units:
            lang = u["producer"].split(" ")[1] if u["producer"].startswith("GNU ") else u["producer"][:12]
            area = area_of(u["name"])
            if not u["producer"].startswith(("GNU C", "clang")):
                per[area][f"({lang or 'no producer'})"] += 1
                continue
            lvl = opt_level(u["producer"])
            per[area][lvl] += 1
            if in_areas(area, opt_areas) and lvl not in allowed:
                bad.append(f"{u['name']} ({lvl})")
        for area, c in per.items():
            areas[area].update(c)
        entry["areas"] = {a: dict(c) for a, c in sorted(per.items())}
        entry["ceph_units"] = {a: sum(c.values()) for a, c in sorted(per.items()) if in_areas(a, opt_areas)}
        problems += coverage_problems(e["label"], entry["ceph_units"], per, min_units)
        if bad:
            problems.append(f"{e['label']}: {len(bad)} Ceph/RocksDB compile unit(s) without -O2, e.g. {bad[0]}")
        unreadable = sum(c for a, cnt in per.items() if in_areas(a, opt_areas)
                         for k, c in cnt.items() if k.startswith("("))
        if unreadable:
            problems.append(f"{e['label']}: {unreadable} compile unit(s) whose producer could not be read")
        syms = symbols(e["debug"])
        hits = sorted(n for n in nd_symbols if n in syms)
        if hits:
            problems.append(f"{e['label']}: built without -DNDEBUG: {hits[0]} is compiled in")
        entry["ndebug_only_symbols"] = hits
        if has_text(e["sections"]):
            sites = assert_call_sites(e["path"], e["debug"], units)
            entry["assert_sites"] = dict(sites.most_common())
            for area, n in sites.items():
                if in_areas(area, nd_areas):
                    problems.append(f"{e['label']}: {area} built without -DNDEBUG: {n} assert() call site(s)")
        else:
            entry["assert_sites"] = None  # only the debug file was given: no code to disassemble
    ceph_units = sum(n for b in binaries for n in b["ceph_units"].values())
    return {"schema": 1, "ok": ceph_units > 0 and not problems, "audited": audited, "ceph_units": ceph_units,
            "problems": problems,
            "areas": {a: dict(c) for a, c in sorted(areas.items())}, "binaries": binaries}


def binary_name(label: str) -> str:
    """The file name a coverage minimum is keyed on: /usr/bin/ceph-osd in a .deb is "ceph-osd"."""
    return Path(label.rsplit(":", 1)[-1]).name


def coverage_problems(label: str, ceph_units: dict[str, int], per: dict | None, min_units: dict) -> list[str]:
    """A binary the rules name must show enough compile units in Ceph's areas:
    an audit that recognised too few of them has checked too little to pass."""
    name = binary_name(label)
    need = min_units.get(name)
    found = sum(ceph_units.values())
    if need is None or found >= need:
        return []
    if per is None:
        cause = "no DWARF: no debug package given (add its -dbg or dbgsym .deb)"
    else:
        other = sum(sum(c.values()) for a, c in per.items() if a == "other")
        cause = (f"its DWARF paths were not recognised as Ceph source paths ({other} unit(s) in area 'other'; "
                 "see area_of() in the audit)" if other >= found else "it holds far less of Ceph than expected")
    return [f"{label}: {found} compile unit(s) in Ceph areas, fewer than the {need} that "
            f"{RULES.relative_to(REPO)} requires of {name}; likely cause: {cause}"]


def render_markdown(r: dict) -> str:
    lines = ["# Flag audit of built binaries (DW_AT_producer)", "",
             "| area | compile units | -O levels seen |", "|---|---|---|"]
    for area, c in r["areas"].items():
        total = sum(c.values())
        seen = ", ".join(f"{k} ×{v}" for k, v in sorted(c.items(), key=lambda kv: -kv[1]))
        lines.append(f"| {area} | {total} | {seen} |")
    lines += ["", "| binary | units | units audited, by Ceph/RocksDB area | assert() call sites, by area of the compile unit holding them (none under -DNDEBUG) | NDEBUG-only symbols |",
              "|---|---|---|---|---|"]
    for b in r["binaries"]:
        if "status" in b:
            lines.append(f"| {b['label']} | - | 0 | {b['status']} | - |")
            continue
        covered = sum(b["ceph_units"].values())
        by_area = ", ".join(f"{a} {n}" for a, n in sorted(b["ceph_units"].items(), key=lambda kv: -kv[1]))
        covered = f"{covered}: {by_area}" if covered else "0"
        sites = b.get("assert_sites")
        if sites is None:
            shown = "not checked (no code given)"
        else:
            shown = ", ".join(f"{a} {n}" for a, n in sites.items()) or "none"
        syms = ", ".join(b["ndebug_only_symbols"]) or "none"
        lines.append(f"| {b['label']} | {b['units']} | {covered} | {shown} | {syms} |")
    lines += ["", "Result: " + ("PASS" if r["ok"] else "FAIL"), ""]
    lines += [f"- {p}" for p in r["problems"]]
    return "\n".join(lines) + "\n"
