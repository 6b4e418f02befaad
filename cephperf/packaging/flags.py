"""Judging real compile commands: effective optimisation, NDEBUG, hardening, portability."""
from __future__ import annotations

import shlex

# Translation units whose flags we show; every C/C++ command is still checked.
ROCKSDB_PROBE = "db/db_impl/db_impl.cc"
CEPH_PROBES = ("src/osd/PrimaryLogPG.cc", "src/os/bluestore/BlueStore.cc",
               "src/msg/async/AsyncConnection.cc", "src/common/TrackedOp.cc")
SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx")


def args_of(entry: dict) -> list[str]:
    return entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])


def effective(args: list[str]) -> dict:
    """What the compiler would act on: the last -O wins, -D/-U NDEBUG and
    _FORTIFY_SOURCE in order (a later -U undoes an earlier -D)."""
    opt, ndebug, g, fortify, lto, interposable, profile = "-O0", False, False, False, False, True, None
    for a in args:
        if a.startswith(("-fprofile-generate", "-fprofile-use")):
            profile = "generate" if a.startswith("-fprofile-generate") else "use"
        elif a in ("-fno-profile-generate", "-fno-profile-use"):
            profile = None
        elif a.startswith("-flto") or a == "-fno-lto":
            lto = a != "-fno-lto"
        elif a in ("-fno-semantic-interposition", "-fsemantic-interposition"):
            interposable = a == "-fsemantic-interposition"
        elif a.startswith("-D_FORTIFY_SOURCE="):
            fortify = a[-1] in "23"
        elif a == "-U_FORTIFY_SOURCE":
            fortify = False
        elif a.startswith("-O"):
            opt = "-O1" if a == "-O" else a
        elif a in ("-DNDEBUG", "-DNDEBUG=1"):
            ndebug = True
        elif a == "-UNDEBUG":
            ndebug = False
        elif a.startswith("-g") and a not in ("-g0",):
            g = True
        elif a == "-g0":
            g = False
    return {
        "opt": opt, "ndebug": ndebug, "g": g,
        "stack_protector": any(a.startswith("-fstack-protector") for a in args),
        "fortify": fortify, "lto": lto, "no_interposition": not interposable,
        # profile-guided optimisation: "generate" (instrumented), "use", or None
        "profile": profile,
        "native": [a for a in args if a in ("-march=native", "-mtune=native", "-mcpu=native")],
        "portable": "-DROCKSDB_PORTABLE" in args,
    }


def summary(e: dict) -> str:
    parts = [e["opt"], "-g" if e["g"] else "no -g", "-DNDEBUG" if e["ndebug"] else "no -DNDEBUG"]
    parts.append("hardening" if e["stack_protector"] and e["fortify"] else "no hardening")
    if e["lto"]:
        parts.append("-flto" + (" -fno-semantic-interposition" if e["no_interposition"] else ""))
    if e["profile"]:
        parts.append(f"-fprofile-{e['profile']}")
    return " ".join(parts)


def _sources(db: list[dict]) -> list[dict]:
    return [x for x in db if x["file"].endswith(SOURCE_SUFFIXES)]


def unit_problems(e: dict, area: str, require_hardening: bool, require_whole_program: bool,
                  require_profile_use: bool = False) -> list[str]:
    """What is wrong with one compile command's effective flags, by kind."""
    kinds = []
    if e["profile"] == "generate":
        kinds.append("instrumented")
    elif require_profile_use and e["profile"] != "use":
        kinds.append("profile_use")
    if e["opt"] not in ("-O2", "-O3"):
        kinds.append("opt")
    if not e["ndebug"]:
        kinds.append("ndebug")
    if e["native"]:
        kinds.append("native")
    if area == "RocksDB" and not e["portable"]:
        kinds.append("portable")
    if require_hardening and not (e["stack_protector"] and e["fortify"]):
        kinds.append("hardening")
    if require_whole_program and not (e["lto"] and e["no_interposition"]):
        kinds.append("whole_program")
    return kinds


MESSAGES = {
    "opt": "{area} lacks -O2: {k} of {n} compile commands at {opt} or below (e.g. {f})",
    "ndebug": "{area} lacks -DNDEBUG: {k} of {n} compile commands (e.g. {f})",
    "native": "{area}: -march/-mtune=native in {k} commands: packages must run on any x86-64",
    "portable": "{area}: built with PORTABLE=OFF (no -DROCKSDB_PORTABLE) in {k} commands: "
                "packages must run on any x86-64",
    "hardening": "{area}: dpkg hardening flags missing in {k} of {n} commands (e.g. {f})",
    "whole_program": "{area}: -flto and -fno-semantic-interposition missing in {k} of {n} commands (e.g. {f})",
    "instrumented": "{area}: instrumented for profile training (-fprofile-generate) in {k} of {n} commands "
                    "(e.g. {f}): the build profile pkg.ceph.pgo-generate is for ci/pgo-train, never a release",
    "profile_use": "{area}: -fprofile-use missing in {k} of {n} commands (e.g. {f})",
}


def judge_case(case: str, ceph_db: list[dict], rocksdb_db: list[dict]) -> dict:
    problems, shown, counts = [], {}, {}
    require_hardening = case.startswith("a")
    # the pkg.ceph.lto build profile: link-time optimisation, no interposition
    require_whole_program = "-lto" in case
    # the pkg.ceph.pgo build profile: the training's counts in every command
    require_profile_use = case.endswith("-pgo")
    for area, db, probes in (("RocksDB", rocksdb_db, (ROCKSDB_PROBE,)), ("Ceph", ceph_db, CEPH_PROBES)):
        srcs = _sources(db)
        counts[area] = len(srcs)
        if not srcs:
            problems.append(f"{area}: no C/C++ compile commands found")
            continue
        bad: dict[str, list] = {}
        for x in srcs:
            e = effective(args_of(x))
            for kind in unit_problems(e, area, require_hardening, require_whole_program, require_profile_use):
                bad.setdefault(kind, []).append((x["file"], e["opt"]))
            shown.update({f"{area}: {probe}": summary(e) for probe in probes if x["file"].endswith(probe)})
        for kind, message in MESSAGES.items():
            if kind in bad:
                f, opt = bad[kind][0]
                problems.append(message.format(area=area, k=len(bad[kind]), n=len(srcs), f=f, opt=opt))
    return {"case": case, "ran": True, "ok": not problems, "problems": problems,
            "commands": {"rocksdb": counts["RocksDB"], "ceph": counts["Ceph"]}, "probes": shown}


# The binaries debian/rules stages in the osd-only profile by copying them out
# of the build tree (no "make install", which would build every target). Their
# link commands must already carry the RUNPATH an install would write; and,
# since those packages are installed over Debian's set, each must carry Ceph's
# common code itself (upstream's static "common" archive): Debian's
# libceph-common.so lacks what our series changes (the options it adds,
# TrackedOp's new functions).
STAGED_TARGETS = ("ceph-osd", "ceph-bluestore-tool", "ceph-objectstore-tool", "ceph-osdomap-tool",
                  "ceph-erasure-code-tool", "ceph-fuse")


def staged_runpath_problems(target: str, link_command: str) -> list[str]:
    """A staged binary linked with a library search path an installed system
    lacks: the build tree's (the tools then find no libceph-common.so.2,
    which Debian keeps in /usr/lib/<triplet>/ceph), or CMake's padding of
    empty entries, which only an install rewrites."""
    entries = []
    for word in shlex.split(link_command):
        if word.startswith("-Wl,-rpath,"):
            entries += word[len("-Wl,-rpath,"):].split(":")
    outside = [e for e in entries if not e.startswith("/usr/lib/")]
    if not outside:
        return []
    shown = repr(outside[0]) if outside[0] else "an empty entry"
    return [f"{target} is linked with RUNPATH {shown}, and debian/rules copies it out of the build tree: "
            "configure the osd-only profile with -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON"]


def static_common_problems(target: str, link_command: str) -> list[str]:
    """What is wrong with one target's link command, as CMake wrote it."""
    words = shlex.split(link_command)
    problems = []
    shared = [w for w in words if w == "-lceph-common" or "libceph-common.so" in w]
    if shared:
        problems.append(f"{target} links {shared[0]}: installed over Debian's set it would load Debian's "
                        "common code, which lacks what our series changes there (the options it adds, "
                        "TrackedOp's new functions); link it with global-static and common, as ceph-osd is")
    if not any(w.endswith("/libcommon.a") or w == "libcommon.a" for w in words):
        problems.append(f"{target} does not link the static common archive (libcommon.a)")
    return problems


def render_markdown(results: list[dict]) -> str:
    lines = ["# Configure-level flag check", "",
             "| case | expected | result | time | problems |", "|---|---|---|---|---|"]
    for r in results:
        got = "pass" if r["ok"] else ("fail" if r["ran"] else "did not run")
        probs = "<br>".join(p.replace("|", "\\|") for p in r["problems"][:4]) or "none"
        lines.append(f"| {r['case']} | {r['expected']} | {got} | {r.get('seconds', '?')} s | {probs} |")
    lines += ["", "## Effective flags of probe translation units", ""]
    for r in results:
        for unit, s in r.get("probes", {}).items():
            lines.append(f"- case {r['case']}, {unit}: `{s}`")
    return "\n".join(lines) + "\n"
