"""Turning profiles, variants, sides and overrides into rounds run inside the runtime root."""
from __future__ import annotations

import configparser
import json
import os
import re
import socket
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(BENCH.parent / "ci" / "lib"))
from cephperf.common import StageError, EXIT_ERROR, cache_dir, load_toml, rmtree  # noqa: E402
from cephperf.roots import Root  # noqa: E402

NODE = BENCH / "lib" / "node.py"


def load_profile(name: str, variant: str) -> dict:
    """A profile by name (bench/profiles/NAME.toml) or by path to a .toml file."""
    path = Path(name) if name.endswith(".toml") else BENCH / "profiles" / f"{name}.toml"
    if not path.exists():
        known = sorted(p.stem for p in (BENCH / "profiles").glob("*.toml") if p.stem != "variants")
        raise StageError(f"no profile {name!r} (bench/profiles/{name}.toml); known: {', '.join(known)}", EXIT_ERROR)
    prof = load_toml(path)
    variants = load_toml(BENCH / "profiles" / "variants.toml")
    if variant not in variants:
        raise StageError(f"no variant {variant!r} in bench/profiles/variants.toml; known: {', '.join(variants)}", EXIT_ERROR)
    var = variants[variant]
    if var.get("writes_only") and prof["bench"]["mode"] != "write":
        raise StageError(f"variant {variant!r} only writes (reads of mocked objects hang); "
                         f"profile {name!r} reads: choose a write profile", EXIT_ERROR)
    prof["name"], prof["variant"], prof["conf"] = path.stem, variant, var.get("conf", {})
    prof["runtime_conf"] = var.get("runtime", {})
    prof["io_mock"] = bool(var.get("io_mock"))
    return prof


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
        return {"source": src, "apt_source": src, "bind": str(Path(os.path.commonpath(binds))) if binds else None}
    p = Path(src).resolve()
    if p.is_dir() and (p / "ceph-osd").is_file():
        lib = p / "lib"
        return {"source": str(p), "osd_binary": str(p / "ceph-osd"),
                "ld_library_path": str(lib) if lib.is_dir() else "", "bind": str(p)}
    # debug symbols are for the audit, not for running: -dbg/dbgsym are skipped
    debs = [d for d in sorted(p.glob("*.deb")) if not d.name.split("_")[0].endswith(("-dbg", "-dbgsym"))] \
        if p.is_dir() else []
    if debs:
        return {"source": str(p), "debs": [str(d) for d in debs], "bind": str(p)}
    raise StageError(f"--packages/--baseline/--candidate {src!r}: expected 'debian', a directory of .debs, "
                     f"a directory holding a built ceph-osd, or an apt line 'deb [trusted=yes] URL trixie main'",
                     EXIT_ERROR)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def round_spec(state_dir: Path, prof: dict, side: dict, conf: dict, seconds: int | None,
               stall: int, progress: bool) -> dict:
    bench = dict(prof["bench"])
    if seconds:
        bench["seconds"] = seconds
        if "prefill_seconds" in bench:
            bench["prefill_seconds"] = min(bench["prefill_seconds"], seconds)
    return {
        "state_dir": str(state_dir), "port": free_port(), "v1_port": free_port(),
        "device_gib": prof["device"]["size_gib"], "conf": conf, "bench": bench,
        "runtime_conf": prof.get("runtime_conf", {}), "io_mock": prof.get("io_mock", False),
        "osd_binary": side.get("osd_binary"), "ld_library_path": side.get("ld_library_path"),
        "debs": side.get("debs"), "apt_source": side.get("apt_source"),
        "stall_seconds": stall, "perf": True, "progress": progress,
    }


def run_in_runtime(argv: list[str], spec: dict, binds: list, record: str) -> tuple[int, dict | None]:
    """Run a node-side script (argv, then its spec file) inside a fresh runtime
    root, in a clean spec["state_dir"]; returns its exit code and the JSON
    record it left there (None if it left none). Its namespaces end with it."""
    state = Path(spec["state_dir"])
    rmtree(state)
    state.mkdir(parents=True)
    (state / "spec.json").write_text(json.dumps(spec, indent=2))
    # Working directory /, as systemd gives the packaged daemons: Debian's
    # ceph-osd finds its object classes at the relative osd_class_dir
    # lib/x86_64-linux-gnu/rados-classes, so from anywhere else it loads none
    # (rbd create fails with EOPNOTSUPP), and every other relative default
    # resolves as it would in production too.
    rc = Root("runtime").run(["python3", *map(str, argv), str(state / "spec.json")],
                             binds=[Path(b) for b in binds if b], cwd=Path("/"))
    try:
        return rc, json.loads((state / record).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return rc, None


def run_node(command: str, spec: dict, binds: list[str]) -> dict:
    """One node.py run (a round, or a round against an external cluster)."""
    rc, rec = run_in_runtime([NODE, command], spec, binds, "round.json")
    return rec or {"ok": False, "error": f"the round ended (exit {rc}) without a record; see {spec['state_dir']}"}


def runs_dir() -> Path:
    d = cache_dir() / "bench" / "runs" / time.strftime("%Y%m%dT%H%M%S")
    d.mkdir(parents=True, exist_ok=True)
    return d
