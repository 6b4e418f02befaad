"""Turning profiles, variants, sides and overrides into rounds run inside the runtime root."""
from __future__ import annotations

import configparser
import os
import re
import tempfile
import time
from pathlib import Path

from ..common import StageError, EXIT_ERROR, load_toml
from .. import paths
from ..nodes import free_port, run_in_runtime
from ..runtime.spec import NodeSpec
from .layouts import load_layout


def load_profile(name: str, variant: str) -> dict:
    """A profile by name (bench/profiles/NAME.toml) or by path to a .toml file."""
    path = Path(name) if name.endswith(".toml") else paths.PROFILES / f"{name}.toml"
    if not path.exists():
        known = sorted(p.stem for p in paths.PROFILES.glob("*.toml") if p.stem != "variants")
        raise StageError(f"{path}: no such profile; known: {', '.join(known)}", EXIT_ERROR)
    prof = load_toml(path)
    check_bench(path, prof)
    variants = load_toml(paths.PROFILES / "variants.toml")
    if variant not in variants:
        raise StageError(f"no variant {variant!r} in bench/profiles/variants.toml; known: {', '.join(variants)}", EXIT_ERROR)
    var = resolve_variant(variants, variant)
    if var.get("writes_only") and prof["bench"]["mode"] != "write":
        raise StageError(f"variant {variant!r} only writes (reads of mocked objects hang); "
                         f"profile {name!r} reads: choose a write profile", EXIT_ERROR)
    prof["name"], prof["variant"], prof["conf"] = path.stem, variant, var.get("conf", {})
    prof["runtime_conf"] = var.get("runtime", {})
    apply_native_settings(prof, var, variant)
    # instruction-counted rounds of a profile that names no [counted] window
    prof.setdefault("counted", {"warmup_seconds": 10, "seconds": 40})
    prof["io_mock"] = bool(var.get("io_mock"))
    prof["osds"] = int(var.get("osds", 1))
    prof["counted_idle_seconds"] = int(var.get("counted_idle_seconds", 0))
    # why instruction-counted rounds cannot run this profile, if they cannot
    prof["native_only"] = ("writers through ceph-fuse are limited by the kernel's inode lock, which instruction "
                           "counts do not see" if prof["bench"]["tool"] == "fio-cephfs" else
                           "latency is a native round's: callgrind's OSD is some 30 times slower"
                           if prof["bench"]["tool"] == "rados-latency" else None)
    return prof


def resolve_variant(variants: dict, name: str, seen: tuple = ()) -> dict:
    """A variant's settings, over those of the variant it `extends` (tables
    merged key by key), so that a variant names only what it changes."""
    var = dict(variants[name])
    base = var.pop("extends", None)
    if base is None:
        return var
    if base not in variants or base in seen + (name,):
        why = "no such variant" if base not in variants else "a cycle"
        raise StageError(f"bench/profiles/variants.toml: [{name}] extends {base!r}: {why}", EXIT_ERROR)
    return merged(resolve_variant(variants, base, seen + (name,)), var)


def merged(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        out[k] = merged(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def apply_native_settings(prof: dict, var: dict, variant: str) -> None:
    """What a variant sets beyond ceph.conf (bench/profiles/variants.toml):
    bench.KEY over the profile's [bench] (the window's length), a native
    warm-up, CPU pinning, and the gate's defaults for it (rules file, mode,
    pairs). A profile with a variant that sets none of them runs as before."""
    prof["bench"].update(var.get("bench", {}))
    if prof["bench"].get("background") and prof["bench"]["tool"] != "rados-latency":
        raise StageError(f"variant {variant!r} queues background work, which only a rados-latency profile's "
                         f"client does; profile {prof.get('name')!r} runs {prof['bench']['tool']}", EXIT_ERROR)
    prof["warmup_seconds"] = int(var.get("warmup_seconds", 0))
    if prof["warmup_seconds"] and prof["bench"]["tool"] != "rados":
        raise StageError(f"variant {variant!r} warms up with rados bench before the window; profile "
                         f"{prof['name']!r} runs {prof['bench']['tool']}: choose a rados write profile", EXIT_ERROR)
    prof["cpu_pinning"] = dict(var.get("cpu_pinning", {}))
    prof["poll_idle"] = bool(var.get("poll_idle"))
    # the variant's rules file, else the profile's own (the latency profiles'), else the gate's
    prof["rules"] = var.get("rules", prof.get("rules"))
    prof["default_mode"] = var.get("mode")
    prof["pairs"] = var.get("pairs")


# What a profile's [bench] table must name, by the client it runs: rados
# bench, timed qd1 writes, fio's rbd engine against an image (cephperf/runtime/fio_rbd.py), or
# fio's writers on a ceph-fuse mount (cephperf/runtime/cephfs.py).
BENCH_KEYS = {"rados": ("mode", "block_size", "threads", "seconds"),
              # new objects written one at a time, each timed (cephperf/runtime/latency.py)
              "rados-latency": ("block_size", "seconds", "warmup_seconds"),
              "fio-rbd": ("rw", "block_size", "iodepth", "seconds", "image_gib"),
              "fio-cephfs": ("rw", "block_size", "jobs", "files", "file_mib", "seconds")}
FIO_RW = ("randwrite", "randread", "write", "read")


def check_bench(path: Path, prof: dict) -> None:
    bench = prof.get("bench")
    if not isinstance(bench, dict):
        raise StageError(f"{path}: no [bench] table", EXIT_ERROR)
    tool = bench.setdefault("tool", "rados")
    if tool not in BENCH_KEYS:
        raise StageError(f"{path}: [bench] tool = {tool!r}; known: {', '.join(BENCH_KEYS)}", EXIT_ERROR)
    missing = [k for k in BENCH_KEYS[tool] if k not in bench]
    if missing:
        raise StageError(f"{path}: [bench] lacks {', '.join(missing)} (a {tool} profile names "
                         f"{', '.join(BENCH_KEYS[tool])})", EXIT_ERROR)
    if tool == "fio-cephfs" and bench["files"] not in (1, bench["jobs"]):
        raise StageError(f"{path}: [bench] files = {bench['files']}: 1 (shared by every job) or jobs "
                         f"({bench['jobs']}, one each)", EXIT_ERROR)
    if tool == "rados-latency":
        bench["mode"] = "write"
    if tool.startswith("fio-"):
        if bench["rw"] not in FIO_RW:
            raise StageError(f"{path}: [bench] rw = {bench['rw']!r}; one of {', '.join(FIO_RW)}", EXIT_ERROR)
        # what the variants' writes_only check reads
        bench["mode"] = "write" if bench["rw"].endswith("write") else "read"


def read_conf_file(path: Path | None) -> dict:
    """A ceph.conf-style file as {section: {key: value}}."""
    if path is None:
        return {}
    cp = configparser.ConfigParser(interpolation=None, strict=False)
    cp.optionxform = str
    try:
        with open(path) as f:
            cp.read_file(f)
    except FileNotFoundError:
        raise StageError(f"{path}: no such file", EXIT_ERROR)
    except configparser.Error as e:
        raise StageError(f"{path}: not a ceph.conf-style file: {e}", EXIT_ERROR)
    return {s: dict(cp[s]) for s in cp.sections()}


def merge_conf(*layers: dict) -> dict:
    out: dict = {}
    for layer in layers:
        for section, values in layer.items():
            out.setdefault(section, {}).update(values)
    return out


def parse_source(src: str) -> dict:
    """What a side runs: Debian's stock packages, .debs over them, an apt repo, or a dev build."""
    if src == "debian":
        return {"source": "debian"}
    if src.startswith(("deb ", "deb[")):
        # a file: repository and its signed-by key must be visible in the root
        binds = re.findall(r"(?:file:|signed-by=)(/[^\s\]]+)", src)
        return {"source": src, "apt_line": src, "bind": str(Path(os.path.commonpath(binds))) if binds else None}
    p = Path(src).resolve()
    if p.is_dir() and (p / "ceph-osd").is_file():
        lib = p / "lib"
        return {"source": str(p), "osd_binary": str(p / "ceph-osd"),
                "ld_library_path": str(lib) if lib.is_dir() else "", "bind": str(p)}
    # debug symbols are not for running: -dbg/dbgsym go in only where
    # instruction-counted rounds name functions with them
    found = sorted(p.glob("*.deb")) if p.is_dir() else []
    debs = [d for d in found if not d.name.split("_")[0].endswith(("-dbg", "-dbgsym"))]
    if debs:
        return {"source": str(p), "debs": [str(d) for d in debs], "bind": str(p),
                "debug_debs": [str(d) for d in found if d not in debs]}
    raise StageError(f"--packages/--baseline/--candidate {src!r}: expected 'debian', a directory of .debs, "
                     f"a directory holding a built ceph-osd, or an apt line 'deb [trusted=yes] URL trixie main'",
                     EXIT_ERROR)


# A callgrind'ed OSD is some 30 times slower: a second without a completed op is no stall yet.
COUNTED_STALL_SECONDS = 300
# The time limit of a window counted in ops (about 30 s at depth 1 here; a
# debug-20 OSD takes some five times longer).
COUNTED_CAP_SECONDS = 900


def round_spec(state_dir: Path, prof: dict, side: dict, conf: dict, seconds: int | None,
               stall: int, progress: bool, mode: str = "native", layout: dict | None = None) -> NodeSpec:
    """The node contract of one round. mode "callgrind": the profile's [counted]
    window and warm-up, ceph-osd under callgrind, the side's debug packages too.
    layout: a table of bench/layouts.toml (cephperf/bench/layouts.py); the
    default layout when none is given."""
    bench = dict(prof["bench"])
    counted = mode == "callgrind"
    by_ops = counted and "ops" in prof["counted"] and bench["mode"] == "write"
    if counted:
        bench["seconds"] = COUNTED_CAP_SECONDS if by_ops else prof["counted"]["seconds"]
        # the client's concurrency in counted rounds ([counted] threads or iodepth)
        bench.update({k: prof["counted"][k] for k in ("threads", "iodepth") if k in prof["counted"]})
    if seconds:
        bench["seconds"] = seconds
    if "prefill_seconds" in bench and (seconds or counted):
        bench["prefill_seconds"] = min(bench["prefill_seconds"], bench["seconds"])
    debs = (side.get("debs") or []) + (side.get("debug_debs") or [] if counted else [])
    # counted rounds warm up as their [counted] window says, native ones as the variant does
    warmup = ((0 if by_ops else prof["counted"].get("warmup_seconds", 0)) if counted
              else prof.get("warmup_seconds", 0))
    return NodeSpec(
        state_dir=str(state_dir), port=free_port(), v1_port=free_port(),
        device_gib=prof["device"]["size_gib"], osds=prof.get("osds", 1), conf=conf, bench=bench,
        layout=layout or load_layout(),
        runtime_conf=prof.get("runtime_conf", {}), io_mock=prof.get("io_mock", False),
        cpu_pinning=prof.get("cpu_pinning", {}),
        # counted rounds: callgrind runs the OSD's threads one at a time whatever the CPUs do
        poll_idle=prof.get("poll_idle", False) and not counted,
        osd_binary=side.get("osd_binary"), ld_library_path=side.get("ld_library_path"),
        debs=debs, apt_line=side.get("apt_line"), stall_seconds=max(stall, COUNTED_STALL_SECONDS) if counted else stall,
        perf=not counted, progress=progress, instrument="callgrind" if counted else None,
        counted_idle_seconds=prof.get("counted_idle_seconds", 0) if counted else 0,
        warmup_seconds=min(warmup, seconds) if seconds else warmup,
        warmup_ops=prof["counted"].get("warmup_ops", 0) if by_ops else 0,
        window_ops=prof["counted"]["ops"] if by_ops else 0)


def run_node(command: str, spec: NodeSpec, binds: list[str]) -> dict:
    """One round on the node side (or a round against an external cluster)."""
    rc, rec = run_in_runtime("node", [command], spec, binds)
    return rec or {"ok": False, "error": f"the round ended (exit {rc}) without a record; see {spec.state_dir}"}


def runs_dir() -> Path:
    """A new directory for one run's rounds: two gates may start in the same
    second (bench/acceptance --lanes 2)."""
    paths.runs_root().mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=time.strftime("%Y%m%dT%H%M%S-"), dir=paths.runs_root()))
