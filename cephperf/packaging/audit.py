"""Judging what the compiler did: the -O levels, NDEBUG and coverage rules
of cmake/audit-rules.toml applied to the compile units of built binaries
(read by .elf), and the report.
"""
from __future__ import annotations

import collections
from pathlib import Path

from ..common import load_toml
from ..paths import AUDIT_RULES as RULES, REPO
from .elf import area_of, assert_call_sites, compile_units, has_text, is_link_time, opt_level, symbols

# The units GCC's link-time optimiser made (the pkg.ceph.lto build profile).
# They hold the code and are optimised at the level they record, so they are
# held to the same -O levels as Ceph's own units.
LINK_TIME = "(link-time)"


def in_areas(area: str, prefixes: list[str]) -> bool:
    return any(area == p or area.startswith(p + "/") for p in prefixes)


def unit_levels(units: list[dict], opt_areas: list[str], allowed: list[str]) -> tuple[dict, list[str]]:
    """Per area, how many units at each -O level (or unreadable producer); the units below the allowed levels."""
    per: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    bad = []
    for u in units:
        if is_link_time(u):
            lvl = opt_level(u["producer"])
            per[LINK_TIME][lvl] += 1
            if lvl not in allowed:
                bad.append(f"{LINK_TIME} {u['name']} ({lvl})")
            continue
        lang = u["producer"].split(" ")[1] if u["producer"].startswith("GNU ") else u["producer"][:12]
        area = area_of(u["name"])
        if not u["producer"].startswith(("GNU C", "clang")):
            per[area][f"({lang or 'no producer'})"] += 1
            continue
        lvl = opt_level(u["producer"])
        per[area][lvl] += 1
        if in_areas(area, opt_areas) and lvl not in allowed:
            bad.append(f"{u['name']} ({lvl})")
    return per, bad


def profile_flag(producer: str) -> str | None:
    """"generate" or "use" for a unit compiled with -fprofile-generate or
    -fprofile-use (the last wins, as on the command line), else None."""
    flag = None
    for tok in producer.split():
        if tok.startswith(("-fprofile-generate", "-fprofile-use")):
            flag = "generate" if tok.startswith("-fprofile-generate") else "use"
        elif tok in ("-fno-profile-generate", "-fno-profile-use"):
            flag = None
    return flag


def profile_problems(label: str, units: list[dict], opt_areas: list[str], require_use: bool) -> tuple[dict, list[str]]:
    """Profile-guided optimisation as the units record it: how many of Ceph's
    and the link-time units were instrumented, built with the training's
    counts, or neither; an instrumented unit is never shipped, and a
    pkg.ceph.pgo build must show -fprofile-use in every one."""
    seen: collections.Counter = collections.Counter()
    example: dict[str, str] = {}
    for u in units:
        if not (is_link_time(u) or (u["producer"].startswith(("GNU C", "clang"))
                                    and in_areas(area_of(u["name"]), opt_areas))):
            continue
        flag = profile_flag(u["producer"]) or "none"
        seen[flag] += 1
        example.setdefault(flag, u["name"])
    problems = []
    if seen["generate"]:
        problems.append(f"{label}: {seen['generate']} unit(s) instrumented for profile training "
                        f"(-fprofile-generate), e.g. {example['generate']}: built with pkg.ceph.pgo-generate, "
                        "which is for ci/pgo-train only")
    if require_use and seen["none"]:
        problems.append(f"{label}: {seen['none']} Ceph/RocksDB or link-time unit(s) without -fprofile-use, "
                        f"e.g. {example['none']}, in a pkg.ceph.pgo build")
    return dict(seen), problems


def audit_one(e: dict, rules: dict, entry: dict, require_profile_use: bool = False) -> list[str]:
    """The problems of one ELF with DWARF; fills in its report entry."""
    opt_areas, allowed = rules["optimisation"]["areas"], rules["optimisation"]["allowed"]
    nd_areas, nd_symbols = rules["ndebug"]["areas"], rules["ndebug"]["symbols"]
    units = compile_units(e["debug"])
    per, bad = unit_levels(units, opt_areas, allowed)
    entry["profile"], problems_of_profile = profile_problems(e["label"], units, opt_areas, require_profile_use)
    entry.update(units=len(units), areas={a: dict(c) for a, c in sorted(per.items())},
                 ceph_units={a: sum(c.values()) for a, c in sorted(per.items()) if in_areas(a, opt_areas)})
    problems = coverage_problems(e["label"], entry["ceph_units"], per, rules.get("coverage", {}).get("min_units", {}))
    if bad:
        problems.append(f"{e['label']}: {len(bad)} Ceph/RocksDB or link-time unit(s) without -O2, e.g. {bad[0]}")
    unreadable = sum(c for a, cnt in per.items() if in_areas(a, opt_areas) for k, c in cnt.items() if k.startswith("("))
    if unreadable:
        problems.append(f"{e['label']}: {unreadable} compile unit(s) whose producer could not be read")
    problems += problems_of_profile
    syms = symbols(e["debug"])
    entry["ndebug_only_symbols"] = hits = sorted(n for n in nd_symbols if n in syms)
    if hits:
        problems.append(f"{e['label']}: built without -DNDEBUG: {hits[0]} is compiled in")
    entry["assert_sites"] = None  # only the debug file was given: no code to disassemble
    if has_text(e["sections"]):
        sites = assert_call_sites(e["path"], e["debug"], units)
        entry["assert_sites"] = dict(sites.most_common())
        problems += [f"{e['label']}: {area} built without -DNDEBUG: {n} assert() call site(s)"
                     for area, n in sites.items() if in_areas(area, nd_areas)]
    return problems


def audit_elfs(elfs: list[dict], rules: dict | None = None, require_profile_use: bool = False) -> dict:
    rules = rules or load_toml(RULES)
    problems, binaries = [], []
    areas: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for e in elfs:
        entry = {"label": e["label"], "build_id": e["build_id"], "ceph_units": {}}
        binaries.append(entry)
        if e["debug"] is None:
            entry["status"] = "no DWARF (give its -dbg or dbgsym package)"
            problems += coverage_problems(e["label"], {}, None, rules.get("coverage", {}).get("min_units", {}))
            continue
        problems += audit_one(e, rules, entry, require_profile_use)
        for area, c in entry["areas"].items():
            areas[area].update(c)
    ceph_units = sum(n for b in binaries for n in b["ceph_units"].values())
    return {"schema": 1, "ok": ceph_units > 0 and not problems, "audited": sum("units" in b for b in binaries),
            "profile_use_required": require_profile_use,
            "ceph_units": ceph_units, "problems": problems,
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
    lines += ["", "| binary | units | units audited, by Ceph/RocksDB area | assert() call sites, by area of the compile unit holding them, or under LTO of the source they were written in (none under -DNDEBUG) | NDEBUG-only symbols |",
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
    lines += ["", "Profile-guided optimisation, by unit (Ceph/RocksDB and link-time): "
              + ("-fprofile-use required (a pkg.ceph.pgo build)" if r.get("profile_use_required") else
                 "not required"), ""]
    for b in r["binaries"]:
        if b.get("profile"):
            lines.append(f"- {b['label']}: " + ", ".join(f"{k} ×{v}" for k, v in sorted(b["profile"].items())))
    lines += ["", "Result: " + ("PASS" if r["ok"] else "FAIL"), ""]
    lines += [f"- {p}" for p in r["problems"]]
    return "\n".join(lines) + "\n"
