"""ci/upstream-standalone: upstream's qa/standalone tests on the candidate's ceph-osd, alone and mixed with stock.

  ci/upstream-standalone [--candidate SRC] [--mode stock|candidate|mixed]... [--script PATH]... [--test GLOBS] [--jobs N]
                         [--list FILE] [--out DIR] [--rerun-stock] [--force]

Runs the scripts FILE (default cmake/upstream-standalone.toml) lists, from
the pinned tree's qa/standalone/, unchanged, through upstream's own helpers,
against the packages installed in the trixie runtime root (Debian's stock
ones): each TEST_ function alone (`bash SCRIPT TEST_NAME`, as upstream's
main() runs one), in a fresh empty directory and a runtime root of its own
(PID and network namespaces: --jobs N tests at once, default 3), stopped
after its script's test_seconds. Modes:

  stock      Debian's ceph-osd for every OSD: the reference
  candidate  the candidate's ceph-osd for every OSD
  mixed      stock for even OSD ids, the candidate for odd ones (mkfs too)

(--mode, repeatable; default candidate and mixed). The candidate and mixed
modes put `ceph-osd` in the test's directory, which the helpers put first
on PATH: cephperf/runtime/scripts/osd-by-id.sh, which reads the OSD id as
Ceph does (-i N, --id N, --name osd.N) and execs the build it chooses.
SRC is as for bench/gate: a directory holding a built ceph-osd (ci/build-osd
--release's out/), a directory of .debs (the release's: its ceph-osd .deb's
binary is used; default $CEPH_PERF_CACHE/builds/release-osd-only/out), or
'debian' (stock as the candidate: a check of the test itself).

Stock runs first. Its results are kept in $CEPH_PERF_CACHE/upstream-standalone/
keyed by the runtime root, the script and upstream's helpers, the test, its
bound and the code that runs it; a later run takes them from there
(--rerun-stock runs stock again). A failure is cached only when FILE lists
it as a known stock failure. Then, test by test: the candidate, and the
mixed cluster, must pass every test stock passes. A test stock fails is
reported as a known stock failure when FILE lists it with its cause (and is
not run in the other modes); never as a pass.

Exit 0 when every test passed or is a known stock failure; 1 when the
candidate or the mixed cluster failed a test stock passes (with --mode stock
alone: when stock failed a test FILE does not list); 2 when it could not run,
or when stock failed a test FILE does not list (nothing to judge the candidate
by). The report goes to --out (default build/reports/upstream-standalone/):
report.json, report.md (per test and mode: result and seconds), and each
failed test's output and daemon logs (logs/MODE/TEST/). A selection that
passed on the same candidate before is not repeated (--force repeats it).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from cephperf import paths
from cephperf.bench.rounds import parse_source
from cephperf.common import (EXIT_ERROR, StageError, hash_inputs, log, main_wrapper, pid_alive, read_stamp, rmtree,
                             sha256_file, write_atomic)
from cephperf.imports import code_inputs
from cephperf.packaging.archive import unpack_deb
from cephperf.packaging.roots import Root
from cephperf.packaging.source_tree import assembled_tree
from cephperf.runtime.spec import RECORD
from cephperf.stage import produce
from cephperf.standalone import MODES, exit_code, known_failures, load_list, select
from cephperf.standalone_report import markdown, script_seconds, verdicts

LIST = paths.CMAKE / "upstream-standalone.toml"
NODE_MODULE = "cephperf.runtime.upstream_standalone"
WRAPPER = paths.RUNTIME / "scripts" / "osd-by-id.sh"
STOCK_OSD = Path("/usr/bin/ceph-osd")


def stock_cache() -> Path:
    return paths.cache_dir() / "upstream-standalone" / "stock"


def stock_key(test: dict, standalone: Path, root_key: str) -> str:
    """What a stock result vouches for: the root (Debian's packages), the script and upstream's helpers, the test,
    its bound, and the code that runs it in the root."""
    return hash_inputs([("root", root_key), ("script", standalone / test["script"]),
                        ("helpers", standalone / "ceph-helpers.sh"), ("test", test["test"]),
                        ("limit", str(test["limit_seconds"])), *code_inputs(NODE_MODULE)])[:32]


def candidate_of(src: str) -> dict:
    """What the candidate and mixed modes run as the candidate's ceph-osd (bench/gate's reading of SRC)."""
    side = parse_source(src)
    if side["source"] == "debian":
        return {"source": "debian", "candidate_osd": str(STOCK_OSD), "bind": None,
                "sha256": sha256_file(Root("runtime").ensure_extracted() / STOCK_OSD.relative_to("/"))}
    if side.get("osd_binary"):
        return {"source": side["source"], "candidate_osd": side["osd_binary"], "bind": side["bind"],
                "candidate_libs": side.get("ld_library_path") or "", "sha256": sha256_file(Path(side["osd_binary"]))}
    osd_debs = [d for d in side.get("debs", []) if Path(d).name.startswith("ceph-osd_")]
    if len(osd_debs) != 1:
        raise StageError(f"--candidate {src}: expected one ceph-osd_*.deb there, found {len(osd_debs)}"
                         if side.get("debs") else f"--candidate {src}: an apt line is not taken here; give a "
                         "directory of .debs or one holding a built ceph-osd", EXIT_ERROR)
    return {"source": side["source"], "deb": osd_debs[0], "sha256": sha256_file(Path(osd_debs[0]))}


@contextlib.contextmanager
def unpacked(candidate: dict | None):
    """The candidate with a ceph-osd to run: a .deb's is unpacked once, for every run, and removed afterwards."""
    if not candidate or "deb" not in candidate:
        yield candidate
        return
    dest = paths.scratch_dir() / f"upstream-standalone-candidate-{os.getpid()}"
    rmtree(dest)
    try:
        unpack_deb(Path(candidate["deb"]), dest)
        binary = dest / STOCK_OSD.relative_to("/")
        if not binary.is_file():
            raise StageError(f"{candidate['deb']}: no {STOCK_OSD} in it", EXIT_ERROR)
        yield {**candidate, "candidate_osd": str(binary), "bind": str(dest)}
    finally:
        rmtree(dest)


def run_one(mode: str, test: dict, tree: Path, candidate: dict | None, state_root: Path, new: Path) -> dict:
    """One test in one mode, in a run of the runtime root of its own (its own
    PID and network namespaces); its result. A failed test's output and daemon
    logs go to new/logs/MODE/TEST/."""
    state = state_root / mode / test["id"]
    rmtree(state)
    state.mkdir(parents=True)
    plan = {"state_dir": str(state), "tree": str(tree), "mode": mode, "wrapper": str(WRAPPER), "tests": [test],
            "own_network": True, **{k: v for k, v in (candidate or {}).items() if k.startswith("candidate_")}}
    write_atomic(state / "plan.json", json.dumps(plan, indent=2))
    binds = [paths.build_dir(), *([Path(candidate["bind"])] if candidate and candidate.get("bind") else [])]
    try:
        with open(state / "node.log", "w") as node_log:
            rc = Root("runtime").run(["python3", "-m", NODE_MODULE, str(state / "plan.json")], binds=binds,
                                     cwd=Path("/"), env={"PYTHONPATH": str(paths.REPO)}, network=False,
                                     stdout=node_log)
        record = read_stamp(state / RECORD)
        if record is None or not record.get("ok"):
            raise StageError(f"{mode}: {test['id']}: the run in the runtime root could not run (exit {rc}): "
                             f"{(record or {}).get('error', 'it left no record')}\n"
                             f"{(state / 'node.log').read_text()[-2000:]}", EXIT_ERROR)
        result = {**record["tests"][0], "version": record["versions"].get("candidate" if mode != "stock" else "stock")}
        if result["result"] != "passed" and (state / "tests" / test["id"]).exists():
            shutil.copytree(state / "tests" / test["id"], new / "logs" / mode / test["id"], symlinks=True)
        log(f"{mode}: {test['id']} {result['result']} in {result['seconds']} s")
        return result
    finally:
        rmtree(state)


def run_tests(items: list[tuple[str, dict]], tree: Path, candidate: dict | None, jobs: int, new: Path) -> dict:
    """(mode, test) pairs, up to `jobs` at once; {mode: {test id: result}}."""
    state_root = paths.bench_state(f"upstream-standalone-{os.getpid()}")
    for stale in state_root.parent.glob("upstream-standalone-*"):
        if stale.name.rpartition("-")[2].isdigit() and not pid_alive(int(stale.name.rpartition("-")[2])):
            rmtree(stale)
    state_root.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict] = {}
    pool = ThreadPoolExecutor(max_workers=jobs)
    futures = {pool.submit(run_one, mode, t, tree, candidate, state_root, new): (mode, t) for mode, t in items}
    try:
        for f in as_completed(futures):
            mode, t = futures[f]
            results.setdefault(mode, {})[t["id"]] = f.result()
    except BaseException:
        # a run that could not run, or an interrupt: no new test starts, the running ones are stopped
        pool.shutdown(wait=False, cancel_futures=True)
        stop_runs()
        raise
    finally:
        pool.shutdown(wait=True)
        rmtree(state_root)
    return results


def stop_runs() -> None:
    """SIGTERM to each root run this process started (each leads a session of
    its own: unshare, whose PID 1 passes it on to the run's command)."""
    for task in Path("/proc/self/task").iterdir():
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for pid in children:
            try:
                os.killpg(int(pid), signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass


def stock_results(tests, tree, known, rerun: bool, jobs: int, new: Path) -> dict:
    """Stock's result of each test, from the cache where a run left one, the others run now."""
    standalone, root_key, cache = tree / "qa" / "standalone", Root("runtime").key, stock_cache()
    # keyed before they run: on the code that runs them
    keys = {t["id"]: stock_key(t, standalone, root_key) for t in tests}
    results, missing = {}, []
    for t in tests:
        hit = None if rerun else read_stamp(cache / f"{keys[t['id']]}.json")
        if hit:
            results[t["id"]] = {**hit, "cached": True}
        else:
            missing.append(t)
    log(f"stock: {len(results)} results cached, {len(missing)} to run, {jobs} at once")
    ran = run_tests([("stock", t) for t in missing], tree, None, jobs, new).get("stock", {}) if missing else {}
    for t in missing:
        r = results[t["id"]] = ran[t["id"]]
        if r["result"] == "passed" or (t["script"], t["test"]) in known:
            write_atomic(cache / f"{keys[t['id']]}.json", json.dumps(r, indent=2))
    return results


def run_all(args, tests: list[dict], tree: Path, data: dict, candidate: dict | None, new: Path) -> dict:
    t0 = time.monotonic()
    known = known_failures(data)
    results = {"stock": stock_results(tests, tree, known, args.rerun_stock, args.jobs, new)}
    others = [m for m in MODES if m in args.modes and m != "stock"]
    # a test stock does not pass is not run in the other modes: nothing to judge it by
    passing = [t for t in tests if results["stock"][t["id"]]["result"] == "passed"]
    log(f"{', '.join(others) or 'no other mode'}: {len(passing)} tests stock passes, {args.jobs} at once")
    results.update(run_tests([(m, t) for t in passing for m in others], tree, candidate, args.jobs, new))
    versions = {m: next((r["version"] for r in results.get(m, {}).values() if r.get("version")), "")
                for m in ["stock", *others]}
    rows = verdicts(tests, results, others, known)
    code = exit_code([v for r in rows for v in r["verdicts"].values()], stock_only=not others)
    report = {"verdict": ("pass", "fail", "not judged")[code], "exit": code, "modes": ["stock", *others],
              "tree": str(tree), "list": str(args.list), "versions": versions, "jobs": args.jobs,
              "candidate": ({k: candidate[k] for k in ("source", "sha256")} if candidate else None),
              "wall_seconds": round(time.monotonic() - t0), "script_seconds": script_seconds(rows), "tests": rows}
    write_atomic(new / "report.json", json.dumps(report, indent=2) + "\n")
    write_atomic(new / "report.md", markdown(report))
    return report


def summary(report: dict) -> str:
    bad = [(r["id"], m, v) for r in report["tests"] for m, v in r["verdicts"].items() if v not in ("pass", "known stock failure")]
    known = sum(1 for r in report["tests"] if r["verdicts"]["stock"] == "known stock failure")
    text = f"{len(report['tests'])} tests in modes {', '.join(report['modes'])}; {known} known stock failures"
    return text + "".join(f"\n  {i} ({m}): {v}" for i, m, v in bad)


def execute():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--candidate", default=str(paths.release_out("osd-only")), metavar="SRC")
    p.add_argument("--mode", dest="modes", action="append", choices=MODES)
    p.add_argument("--script", dest="scripts", action="append", default=[], metavar="PATH")
    p.add_argument("--test", metavar="GLOBS", help="TEST_ functions to run (globs separated by ':')")
    p.add_argument("--list", type=Path, default=LIST)
    p.add_argument("--out", type=Path)
    p.add_argument("--jobs", type=int, default=3, help="tests run at once, each in its own namespaces (default 3)")
    p.add_argument("--rerun-stock", action="store_true", help="run stock again instead of taking cached results")
    p.add_argument("--force", action="store_true", help="run even if this selection passed on this candidate before")
    args = p.parse_args()
    args.modes = args.modes or ["candidate", "mixed"]
    args.list = args.list.resolve()
    data = load_list(args.list)
    tree, _ = assembled_tree()
    tests = select(data, args.list, tree / "qa" / "standalone", args.scripts, args.test)
    candidate = candidate_of(args.candidate) if set(args.modes) - {"stock"} else None
    if args.jobs < 1:
        p.error("--jobs must be 1 or more")
    # stock alone (the reference) reports beside a candidate's run, never over it
    out = (args.out or paths.reports("upstream-standalone" + ("-stock" if args.modes == ["stock"] else ""))).resolve()
    key = hash_inputs([("list", args.list), ("tests", json.dumps(tests)), ("modes", " ".join(sorted(args.modes))),
                       ("candidate", json.dumps(candidate, sort_keys=True)), ("qa", tree / "qa" / "standalone"),
                       ("root", Root("runtime").key), ("wrapper", WRAPPER), ("rerun", str(args.rerun_stock)),
                       *code_inputs(__name__), *code_inputs(NODE_MODULE)])

    def make(new: Path) -> dict:
        with unpacked(candidate) as runnable:
            report = run_all(args, tests, tree, data, runnable, new)
        return {"verdict": report["verdict"], "exit": report["exit"], "summary": summary(report)}

    stamp = produce(out, key, make, valid=lambda s: s.get("exit") == 0, force=args.force)
    if stamp["exit"] != 0:
        raise StageError(f"upstream-standalone: {stamp['verdict']}: {stamp['summary']}\nreport: {out / 'report.md'}",
                         stamp["exit"])
    log(f"PASS: {stamp['summary']}; report: {out / 'report.md'}")
    return 0


def main():
    main_wrapper(execute)
