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
    opt, ndebug, g, fortify, lto, interposable = "-O0", False, False, False, False, True
    for a in args:
        if a.startswith("-flto") or a == "-fno-lto":
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
        "native": [a for a in args if a in ("-march=native", "-mtune=native", "-mcpu=native")],
        "portable": "-DROCKSDB_PORTABLE" in args,
    }


def summary(e: dict) -> str:
    parts = [e["opt"], "-g" if e["g"] else "no -g", "-DNDEBUG" if e["ndebug"] else "no -DNDEBUG"]
    parts.append("hardening" if e["stack_protector"] and e["fortify"] else "no hardening")
    if e["lto"]:
        parts.append("-flto" + (" -fno-semantic-interposition" if e["no_interposition"] else ""))
    return " ".join(parts)


def _sources(db: list[dict]) -> list[dict]:
    return [x for x in db if x["file"].endswith(SOURCE_SUFFIXES)]


def judge_case(case: str, ceph_db: list[dict], rocksdb_db: list[dict]) -> dict:
    problems = []
    require_hardening = case.startswith("a")
    # the pkg.ceph.lto build profile: link-time optimisation, no interposition
    require_whole_program = case.endswith("-lto")
    shown = {}

    def check(area: str, db: list[dict], probes: tuple[str, ...]):
        srcs = _sources(db)
        if not srcs:
            problems.append(f"{area}: no C/C++ compile commands found")
            return
        bad_opt, bad_ndebug, native, unhardened, not_portable, not_whole = [], [], [], [], [], []
        for x in srcs:
            e = effective(args_of(x))
            if e["opt"] not in ("-O2", "-O3"):
                bad_opt.append((x["file"], e["opt"]))
            if not e["ndebug"]:
                bad_ndebug.append(x["file"])
            if e["native"]:
                native.append(x["file"])
            if area == "RocksDB" and not e["portable"]:
                not_portable.append(x["file"])
            if require_hardening and not (e["stack_protector"] and e["fortify"]):
                unhardened.append(x["file"])
            if require_whole_program and not (e["lto"] and e["no_interposition"]):
                not_whole.append(x["file"])
            for probe in probes:
                if x["file"].endswith(probe):
                    shown[f"{area}: {probe}"] = summary(e)
        n = len(srcs)
        if bad_opt:
            f, o = bad_opt[0]
            problems.append(f"{area} lacks -O2: {len(bad_opt)} of {n} compile commands at {o} or below (e.g. {f})")
        if bad_ndebug:
            problems.append(f"{area} lacks -DNDEBUG: {len(bad_ndebug)} of {n} compile commands (e.g. {bad_ndebug[0]})")
        if native:
            problems.append(f"{area}: -march/-mtune=native in {len(native)} commands: packages must run on any x86-64")
        if not_portable:
            problems.append(f"{area}: built with PORTABLE=OFF (no -DROCKSDB_PORTABLE) in {len(not_portable)} commands: "
                            "packages must run on any x86-64")
        if unhardened:
            problems.append(f"{area}: dpkg hardening flags missing in {len(unhardened)} of {n} commands (e.g. {unhardened[0]})")
        if not_whole:
            problems.append(f"{area}: -flto and -fno-semantic-interposition missing in {len(not_whole)} of {n} "
                            f"commands (e.g. {not_whole[0]})")
        return n

    n_rocksdb = check("RocksDB", rocksdb_db, (ROCKSDB_PROBE,))
    n_ceph = check("Ceph", ceph_db, CEPH_PROBES)
    return {"case": case, "ran": True, "ok": not problems, "problems": problems,
            "commands": {"rocksdb": n_rocksdb, "ceph": n_ceph}, "probes": shown}


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
