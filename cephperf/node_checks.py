"""The node checks of a candidate's OSD, declared in cmake/node-checks.toml:
which node-side module each runs, what its cluster needs, where it reports,
and which options it takes beyond --debs and --out. One stage runs them all
(cephperf/stages/node_check.py); a new check is a table in that file, not a
new stage.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from . import paths
from .bench.rounds import merge_conf, read_conf_file
from .common import EXIT_ERROR, StageError, load_toml, rmtree
from .nodes import check_osd_debs


@dataclass(frozen=True)
class NodeCheck:
    name: str
    runtime: str
    ports: int
    logs: list
    report: str
    what: str
    passed: str
    help: str
    stock: bool = False
    osd_conf: bool = False
    workload: str | None = None


# Each field of a check and its type; the first seven are required.
FIELDS = {"runtime": str, "ports": int, "logs": list, "report": str, "what": str, "passed": str, "help": str,
          "stock": bool, "osd_conf": bool, "workload": str}
REQUIRED = list(FIELDS)[:7]
KINDS = {str: "a string", int: "a whole number", list: "a list", bool: "true or false"}


def load(path: Path | None = None) -> dict[str, NodeCheck]:
    """Every check of the file, each checked for the fields it must give (a
    fault names the file, the check and the field, on one line)."""
    path = path or paths.NODE_CHECKS
    checks = {}
    for name, row in load_toml(path).items():
        if not isinstance(row, dict):
            raise StageError(f"{path}: {name} is not a table", EXIT_ERROR)
        problems = [f"unknown field {k}" for k in row if k not in FIELDS]
        problems += [f"missing {k}" for k in REQUIRED if k not in row]
        problems += [f"{k} must be {KINDS[FIELDS[k]]}" for k, v in row.items()
                     if k in FIELDS and (not isinstance(v, FIELDS[k]) or isinstance(v, bool) != (FIELDS[k] is bool))]
        if problems:
            raise StageError(f"{path}: [{name}]: {'; '.join(problems)}", EXIT_ERROR)
        checks[name] = NodeCheck(name=name, **row)
    return checks


def node_check(name: str, path: Path | None = None) -> NodeCheck:
    checks = load(path)
    if name not in checks:
        raise StageError(f"{path or paths.NODE_CHECKS}: no [{name}]", EXIT_ERROR)
    return checks[name]


def osd_conf(conf_file: Path | None, settings: list[str]) -> dict:
    """The ceph.conf overlay: FILE's sections, then each KEY=VALUE in [osd]."""
    try:
        from_file = read_conf_file(conf_file)
    except StageError as e:
        raise StageError(" ".join(str(e).split()), e.code)  # configparser's messages span lines
    extra = {}
    for setting in settings:
        key, sep, value = setting.partition("=")
        if not sep or not key.strip():
            raise StageError(f"--conf {setting!r}: expected KEY=VALUE", EXIT_ERROR)
        extra[key.strip()] = value.strip()
    return merge_conf(from_file, {"osd": extra} if extra else {})


def run_node_check(check: NodeCheck, debs: Path | None, out: Path, conf: dict | None = None,
                   workload: dict | None = None) -> dict:
    """The check on the ceph-osd .deb in `debs` (None: Debian's stock packages
    as they are); its record in out/result.json, the cluster's logs in out/log
    on a failure, which raises naming the failed step (exit 1, or 2 when it
    could not run)."""
    rmtree(out / "log")  # an earlier failure's logs
    spec_fields = {}
    if check.osd_conf:
        spec_fields["conf"] = conf or {}
    if check.workload:
        spec_fields["bench"] = workload
    return check_osd_debs(check.runtime, debs, out, check.ports, check.logs, check.what, **spec_fields)


def pass_line(check: NodeCheck, result: dict, conf: dict | None = None) -> str:
    settings = "; ".join(f"[{section}] {k} = {v}" for section, values in (conf or {}).items()
                         for k, v in values.items())
    return (f"PASS: {check.passed} (ceph-osd {result.get('candidate') or result.get('stock')}"
            + (f", with {settings}" if settings else "")
            + (f", in {result['seconds']} s" if "seconds" in result else "") + ")")
