"""Kept gate results: one small JSON file per gate report, in results/gate/.

A result is what a table of releases needs from one `bench/gate` run, and
no more: the release (+perfN) it belongs to, profile, layout, variant and
mode, both sides (a label such as "stock" or "+perf14", the source given to
the gate, the ceph-osd's GNU build ID where known), and per judged metric
the two sides' medians, the ratio (candidate/baseline), its 95% interval,
the pairs and the verdict; then the date, the ceph-perf commit and the
command. Its `source` says where the figures come from and `reproduced`
whether they were read from a kept report.json (true, with the report's
path) or transcribed from the docs' text, the report itself not kept
(false).

This module loads and checks those files, makes one from a gate report
(import_report), and finds the figures of a text that no result backs
(unbacked_figures). The tables are in history_table.py.
"""
from __future__ import annotations

import json
import math
import re
import statistics
import time
from pathlib import Path

from .. import paths
from ..common import EXIT_ERROR, StageError, write_atomic
from .report import values

RESULTS = paths.REPO / "results" / "gate"
RELEASE = re.compile(r"^\+perf(\d+)$")
MODES = {"native", "counted", "both"}
REQUIRED = ("release", "date", "profile", "layout", "variant", "mode", "baseline", "candidate", "metrics",
            "source", "reproduced")
# A figure as the docs write a ratio or an interval's bound: four decimals.
FIGURE = re.compile(r"(?<![\d.,])[0-9]\.[0-9]{4}(?![\d])")
RELEASE_IN_TEXT = re.compile(r"\+perf(\d+)\b")


def release_number(release: str) -> int:
    m = RELEASE.match(release or "")
    if not m:
        raise StageError(f"{release!r} is not a release name (+perfN)", EXIT_ERROR)
    return int(m.group(1))


def check_result(res, where: Path) -> dict:
    """res, if it is a result file's content; else a StageError naming the file."""
    if not isinstance(res, dict):
        raise StageError(f"{where}: not a result (a JSON object)", EXIT_ERROR)
    missing = [k for k in REQUIRED if k not in res]
    if missing:
        raise StageError(f"{where}: missing {', '.join(missing)}", EXIT_ERROR)
    if not RELEASE.match(str(res["release"])):
        raise StageError(f"{where}: release {res['release']!r} is not +perfN", EXIT_ERROR)
    if res["mode"] not in MODES:
        raise StageError(f"{where}: mode {res['mode']!r} is not one of {', '.join(sorted(MODES))}", EXIT_ERROR)
    if not isinstance(res["reproduced"], bool) or (res["reproduced"] and not res.get("report")):
        raise StageError(f"{where}: reproduced must be true (with the report's path) or false", EXIT_ERROR)
    for side in ("baseline", "candidate"):
        if not isinstance(res[side], dict) or not res[side].get("label"):
            raise StageError(f"{where}: {side} needs a label", EXIT_ERROR)
    if not isinstance(res["metrics"], list) or not res["metrics"]:
        raise StageError(f"{where}: no metrics", EXIT_ERROR)
    for m in res["metrics"]:
        if not isinstance(m, dict) or not m.get("metric") or not isinstance(m.get("ratio"), (int, float, type(None))):
            raise StageError(f"{where}: a metric without its name or with a ratio that is not a number", EXIT_ERROR)
        ci = m.get("interval")
        if ci is not None and not (isinstance(ci, list) and len(ci) == 2
                                   and all(isinstance(v, (int, float)) for v in ci)):
            raise StageError(f"{where}: {m['metric']}: interval must be [low, high]", EXIT_ERROR)
    return res


def load_results(folder: Path = RESULTS) -> list[dict]:
    """Every result under folder (each file checked), with its path as "_file"."""
    if not folder.is_dir():
        raise StageError(f"{folder}: no such folder of results", EXIT_ERROR)
    out = []
    for f in sorted(folder.rglob("*.json")):
        try:
            res = json.loads(f.read_text())
        except json.JSONDecodeError as e:
            raise StageError(f"{f}: not JSON: {e}", EXIT_ERROR)
        out.append({**check_result(res, f), "_file": str(f)})
    return out


def figures_of(res: dict) -> set[str]:
    """A result's ratios and interval bounds, each as four decimals."""
    out = set()
    for m in res["metrics"]:
        for v in [m.get("ratio"), *(m.get("interval") or [])]:
            if isinstance(v, (int, float)):
                out.add(f"{v:.4f}")
    return out


def unbacked_figures(text: str, results: list[dict]) -> list[tuple[str, str | None, str]]:
    """The figures of text that no kept result backs: (figure, release, the
    line it stands on). A figure is four decimals (0.7099); the release named
    next to it is the nearest +perfN before it in its paragraph (or, with
    none before, the first after it). It is backed when a result of that
    release has it as a ratio or an interval's bound."""
    by_release: dict[str, set[str]] = {}
    for res in results:
        by_release.setdefault(res["release"], set()).update(figures_of(res))
    missing = []
    for para in re.split(r"\n\s*\n", text):
        names = [(m.start(), f"+perf{m.group(1)}") for m in RELEASE_IN_TEXT.finditer(para)]
        for m in FIGURE.finditer(para):
            before = [n for pos, n in names if pos < m.start()]
            after = [n for pos, n in names if pos > m.start()]
            release = before[-1] if before else (after[0] if after else None)
            if release is None or m.group(0) not in by_release.get(release, set()):
                line = para[para.rfind("\n", 0, m.start()) + 1:].split("\n", 1)[0]
                missing.append((m.group(0), release, line.strip()))
    return missing


# --- from a gate report -------------------------------------------------------

MODE_OF = {"native": "native", "callgrind": "counted"}


def read_report(path: Path) -> dict:
    try:
        rep = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise StageError(f"{path}: not a JSON report: {e}", EXIT_ERROR)
    rules = ((rep.get("judgement") or {}).get("rules") if isinstance(rep, dict) else None)
    if not isinstance(rules, list) or not rep.get("records") or not rep.get("sides"):
        raise StageError(f"{path}: not a judged report of bench/gate's A/B rounds "
                         "(no judgement.rules, records or sides)", EXIT_ERROR)
    return rep


def report_date(path: Path) -> str:
    """The day the run began, from its directory's name (bench/gate's
    YYYYMMDDTHHMMSSZ-...), else the day its report was written."""
    m = re.match(r"^(\d{4})(\d{2})(\d{2})T\d{6}Z-", path.resolve().parent.name)
    if m:
        return "-".join(m.groups())
    return time.strftime("%Y-%m-%d", time.gmtime(path.stat().st_mtime))


def side_of(rep: dict, side: str, label: str) -> dict:
    versions = ((rep.get("environment") or {}).get("sides") or {}).get(side, {}).get("versions") or {}
    s = rep["sides"].get(side) or {}
    return {"label": label, "source": s.get("source"), "conf": s.get("conf"),
            "version": versions.get("ceph-osd"), "build_id": versions.get("ceph-osd build ID")}


def gate_command(rep: dict) -> str:
    """The bench/gate command the report's fields give (the report does not keep argv)."""
    counted = sum(1 for r in rep["records"] if r.get("side") == "baseline" and r.get("mode") == "callgrind")
    words = ["bench/gate", "--baseline", rep["sides"]["baseline"]["source"],
             "--candidate", rep["sides"]["candidate"]["source"], "--profile", rep["profile"],
             "--variant", rep.get("variant", "defaults"), "--layout", (rep.get("layout") or {}).get("name", "hdd"),
             "--mode", rep.get("mode", "both"), "--rounds", str(rep.get("rounds"))]
    if counted:
        words += ["--counted-rounds", str(counted)]
    for side in ("baseline", "candidate"):
        if rep["sides"][side].get("conf"):
            words += [f"--{side}-conf", rep["sides"][side]["conf"]]
    return " ".join(str(w) for w in words)


def import_report(path: Path, release: str, against: str | None = None, date: str | None = None,
                  release_gate: bool = False) -> dict:
    """The result a gate report.json makes for release (+perfN): its judged
    rules, the two sides' medians from the rounds of each rule's mode."""
    release_number(release)
    rep = read_report(path)
    records, metrics = rep["records"], []
    for r in rep["judgement"]["rules"]:
        if r.get("ratio") is None:
            continue  # not measured: that kind of round did not run
        med = {s: statistics.median(v) for s in ("baseline", "candidate") if (v := values(records, r["metric"], s))}
        metrics.append({"metric": r["metric"], "mode": MODE_OF.get(r.get("mode", "native"), r.get("mode")),
                        "medians": med or None, "ratio": r["ratio"],
                        # one pair has no interval: the gate's [0, inf] is kept as none (JSON has no infinity)
                        "interval": r.get("ci") if all(math.isfinite(v) for v in r.get("ci") or [math.inf]) else None,
                        "pairs": r.get("pairs"), "verdict": r["verdict"], "smallest_detectable": r.get("mde")})
    if not metrics:
        raise StageError(f"{path}: no rule of the report was measured", EXIT_ERROR)
    base_label = against or ("stock" if rep["sides"]["baseline"].get("source") == "debian" else
                             rep["sides"]["baseline"].get("source"))
    try:
        shown = str(path.resolve().relative_to(paths.REPO))
    except ValueError:
        shown = str(path.resolve())
    return {"release": release, "date": date or report_date(path), "profile": rep["profile"],
            "layout": (rep.get("layout") or {}).get("name", "hdd"), "variant": rep.get("variant", "defaults"),
            "mode": rep.get("mode", "both"), "role": "release gate" if release_gate else None,
            "baseline": side_of(rep, "baseline", base_label),
            "candidate": side_of(rep, "candidate", release), "metrics": metrics,
            "verdict": rep.get("verdict"), "command": gate_command(rep),
            "commit": ((rep.get("environment") or {}).get("host") or {}).get("ceph_perf_commit"),
            "source": f"report.json ({shown})", "reproduced": True, "report": shown}


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def result_path(res: dict, folder: Path = RESULTS) -> Path:
    """A new file for res: results/gate/perfN/DATE-PROFILE-VARIANT-LAYOUT-vs-BASELINE.json,
    never over an older one."""
    base = (f"{res['date']}-{res['profile']}-{res['variant']}-{res['layout']}"
            f"-vs-{slug(res['baseline']['label'])}")
    d = folder / f"perf{release_number(res['release'])}"
    out, n = d / f"{base}.json", 1
    while out.exists():
        n += 1
        out = d / f"{base}.{n}.json"
    return out


def add_reports(reports: list[Path], release: str, folder: Path = RESULTS, against: str | None = None,
                date: str | None = None, release_gate: bool = False) -> list[Path]:
    """Import reports into folder, each an atomic write of a new file, none
    written unless every report reads; the new files' paths."""
    results = [check_result(import_report(p, release, against, date, release_gate), p) for p in reports]
    kept = []
    for res in results:
        out = result_path(res, folder)
        write_atomic(out, json.dumps(res, indent=2, ensure_ascii=False) + "\n")
        kept.append(out)
    return kept
