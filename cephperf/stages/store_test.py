"""ci/store-test: upstream's BlueStore tests (ceph_test_objectstore) on the release's build.

  ci/store-test [--tests DIR | --stock] [--subset FILE] [--pass NAME]... [--filter PATTERNS] [--out DIR] [--force]

Runs the tests that FILE (default cmake/store-test.toml) lists, from
upstream's src/test/objectstore/store_test.cc, on BlueStore, in each of its
passes: the series' options at their defaults, each at its other value, and
RocksDB's DeleteRange for every omap removal. FILE says per test which path
of our series it covers and why, and per pass its options. The binary is the
release build's (DIR, default $CEPH_PERF_CACHE/builds/release-osd-only/out/tests),
built from our patched tree; --stock runs Debian's own from package ceph-test
instead (CI's smoke, where no release build is at hand). Both run in the
trixie runtime root, one test per process, each in a fresh directory under
the cache, which is removed afterwards.

A pass setting an option the binary does not know is skipped, with the reason,
on Debian's binary only: the release's must know every option (exit 1). The
binary itself is asked (--show_config_value NAME: "option not found"), since
it ignores an unknown --NAME=VALUE without a word and would run the defaults.
--pass NAME (repeatable) and --filter PATTERNS (gtest-style globs separated by
':', matched against the test names) run less.
Exit 0 when every test that ran passed, 1 when one failed, crashed or went
over its time (the pass, the test and the end of its output are named), 2
when the tests could not run (no binary, a bad FILE). The report goes to
--out (default build/reports/store-test/, with --stock store-test-stock/):
report.json, report.md, gtest's XML per test (xml/), and a failing pass's
whole output (logs/). A run of the same binary, FILE and selection that
passed before is not repeated (--force repeats it).
"""
from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

from cephperf import paths
from cephperf.common import (EXIT_ERROR, EXIT_FAIL, StageError, hash_inputs, log, main_wrapper, rmtree,
                             sha256_file, write_atomic)
from cephperf.imports import code_inputs
from cephperf.packaging.roots import Root
from cephperf.runtime.spec import RECORD
from cephperf.stage import produce
from cephperf.store_subset import load_subset, select, subset_error

SUBSET = paths.CMAKE / "store-test.toml"
BINARY = "ceph_test_objectstore"
# Debian's, from package ceph-test in the runtime root (cmake/roots.toml)
STOCK_BINARY = Path("/usr/bin") / BINARY
# what runs inside the runtime root; the key covers it and what it imports
NODE_MODULE = "cephperf.runtime.store_test"
# What store_test.cc's fixtures run on; the subset's tests must be these instances.
STORE = "bluestore"


def node(command: str, plan: dict, state: Path, binds: list[Path]) -> dict:
    """cephperf.runtime.store_test COMMAND in the runtime root; its record, or exit 2 naming why there is none."""
    (state / RECORD).unlink(missing_ok=True)
    plan_file = state / f"{command}.json"
    write_atomic(plan_file, json.dumps(plan, indent=2))
    rc = Root("runtime").run(["python3", "-m", NODE_MODULE, command, str(plan_file)],
                             binds=binds, cwd=Path("/"), env={"PYTHONPATH": str(paths.REPO)})
    try:
        record = json.loads((state / RECORD).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        raise StageError(f"the {command} step in the runtime root ended (exit {rc}) without a record", EXIT_ERROR)
    if not record.get("ok"):
        raise StageError(f"the {command} step in the runtime root failed: {record.get('error')}", EXIT_ERROR)
    return record


def decide(passes: list[dict], known: dict, path: Path, stock: bool) -> None:
    """Which passes run: a pass whose options the binary lacks is skipped on Debian's
    binary, with the reason, and refused on the release's; an option value the
    binary reads as something else is a fault of FILE."""
    for p in passes:
        notes, missing = [], []
        for name, value in p["options"].items():
            seen = known[f"{name}={value}"]
            if not seen["known"]:
                missing.append(name)
            elif seen["rejected"]:
                raise subset_error(path, f"pass {p['name']}: {BINARY} rejects --{name}={value}: {seen['rejected']}")
            elif seen["as_given"] != value:
                raise subset_error(path, f"pass {p['name']}: {BINARY} reads --{name}={value} as {seen['as_given']!r}")
            elif seen["default"] == value:
                notes.append(f"{name}: the value given is this binary's default already")
        p["notes"] = notes
        if missing and not stock:
            raise StageError(f"pass {p['name']}: {BINARY} does not know {', '.join(missing)}, which the pass sets: "
                             "a release's binary, built from our series, must know every option (was it?)", EXIT_FAIL)
        if missing:
            p["skipped"] = (f"Debian's {BINARY} does not know {', '.join(missing)} (an option of our series); "
                            "the release's binary runs this pass")
            log(f"pass {p['name']}: skipped: {p['skipped']}")


def check_listed(passes: list[dict], listed: dict, path: Path) -> None:
    for p in passes:
        for t in p["tests"]:
            if t["name"] not in listed:
                raise subset_error(path, f"{t['name']} is not among {BINARY}'s tests (--gtest_list_tests)")
            param = listed[t["name"]]
            if param.startswith('"') and param.strip('"') != STORE:
                raise subset_error(path, f"{t['name']} runs on {param}, not on {STORE}")


def run_passes(binary: Path, host_binary: Path, stock: bool, passes: list[dict], path: Path, new: Path) -> dict:
    state = paths.bench_state("store-test-" + hash_inputs([("out", str(new))])[:8])
    binds = [] if stock else [binary.parent]
    rmtree(state)
    state.mkdir(parents=True)
    t0 = time.monotonic()
    try:
        probe = node("probe", {"state_dir": str(state), "binary": str(binary),
                               "probe": sorted({(k, v) for p in passes for k, v in p["options"].items()})},
                     state, binds)
        check_listed(passes, probe["tests"], path)
        decide(passes, probe["options"], path, stock)
        runnable = [p for p in passes if "skipped" not in p]
        ran = node("run", {"state_dir": str(state), "binary": str(binary), "passes": runnable}, state, binds)["passes"]
        results = {r["name"]: r for r in ran}
        for p in passes:
            planned = p["tests"]
            p.update(results.get(p["name"], {"status": "skipped", "tests": []}))
            for done, plan in zip(p["tests"], planned):
                done["expected_seconds"] = plan["expected_seconds"]
            if p["status"].startswith("failed"):
                shutil.copytree(state / "logs" / p["name"], new / "logs" / p["name"])
        if (state / "xml").exists():
            shutil.copytree(state / "xml", new / "xml")
    finally:
        rmtree(state)
    report = {"binary": str(binary), "sha256": sha256_file(host_binary), "stock": stock, "subset": str(path),
              "wall_seconds": round(time.monotonic() - t0), "passes": passes,
              "verdict": "fail" if any(p["status"].startswith("failed") for p in passes) else "pass"}
    write_atomic(new / "report.json", json.dumps(report, indent=2) + "\n")
    write_atomic(new / "report.md", markdown(report))
    return report


def markdown(report: dict) -> str:
    lines = [f"# store-test: {report['verdict'].upper()}", "",
             f"`{report['binary']}` (sha256 {report['sha256'][:16]}…{', Debian stock' if report['stock'] else ''}), "
             f"subset `{report['subset']}`, {report['wall_seconds']} s.", ""]
    for p in report["passes"]:
        opts = " ".join(f"`--{k}={v}`" for k, v in p["options"].items()) or "the binary's defaults"
        lines += [f"## pass {p['name']}: {p['status']}", "", f"{p['why']} Options: {opts}.", ""]
        lines += [f"- {n}" for n in p.get("notes", [])] + ([f"- skipped: {p['skipped']}"] if "skipped" in p else [])
        if p["tests"]:
            lines += ([""] if lines[-1] else []) + ["| test | result | seconds | Debian's binary here | limit |",
                                                     "|---|---|---|---|---|"]
            lines += [f"| {run_name(t)} | {t['result']} | {t['seconds']} | {t['expected_seconds']} "
                      f"| {t.get('limit_seconds', '')} |" for t in p["tests"]]
        lines.append("")
    return "\n".join(lines)


def run_name(test: dict) -> str:
    return test["name"] + (f" (run {test['run']} of {test['runs']})" if test["runs"] > 1 else "")


def failure(report: dict, out: Path) -> str:
    """Every failed pass and test, and the end of the first one's output."""
    failed = [(p, t) for p in report["passes"] for t in p["tests"] if t.get("tail")]
    heads = [f"pass {p['name']}: {p['status'][len('failed: '):]}" for p in report["passes"]
             if p["status"].startswith("failed")]
    text = "store tests failed: " + "; ".join(heads)
    if failed:
        p, t = failed[0]
        text += (f"\nthe output of {run_name(t)} in pass {p['name']}:\n{t['tail']}\n"
                 f"(whole output: {out / 'logs' / p['name'] / Path(t['log']).name})")
    return text


def run_key(binary: Path, stock: bool, subset: Path, passes: list, root_key: str) -> str:
    """What a passed run vouches for: the binary, the selection, the root it
    ran in, and the code on both sides of the root."""
    return hash_inputs([("binary", sha256_file(binary)), ("stock", str(stock)), ("subset", subset),
                        ("selection", json.dumps(passes, sort_keys=True)), ("root", root_key),
                        *code_inputs(__name__), *code_inputs(NODE_MODULE)])


def execute():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    which = p.add_mutually_exclusive_group()
    which.add_argument("--tests", type=Path, default=paths.release_out("osd-only") / "tests",
                       help="the directory holding the release build's ceph_test_objectstore")
    which.add_argument("--stock", action="store_true", help="Debian's ceph_test_objectstore, in the runtime root")
    p.add_argument("--subset", type=Path, default=SUBSET)
    p.add_argument("--pass", dest="passes", action="append", default=[], metavar="NAME")
    p.add_argument("--filter", metavar="PATTERNS")
    p.add_argument("--out", type=Path, help="default build/reports/store-test/ (--stock: store-test-stock/)")
    p.add_argument("--force", action="store_true", help="run even if this selection passed on this binary before")
    args = p.parse_args()
    path = args.subset.resolve()
    passes = select(load_subset(path), path, args.passes, args.filter)
    if args.stock:
        binary = STOCK_BINARY
        host_binary = Root("runtime").ensure_extracted() / STOCK_BINARY.relative_to("/")
        missing = f"the runtime root has no {STOCK_BINARY} (package ceph-test, cmake/roots.toml [runtime])"
    else:
        binary = host_binary = args.tests.resolve() / BINARY
        missing = (f"{args.tests}: no {BINARY}; the release build leaves it there (ci/build-release), "
                   "or run Debian's with --stock")
    if not host_binary.is_file():
        raise StageError(missing, EXIT_ERROR)
    key = run_key(host_binary, args.stock, path, passes, Root("runtime").key)
    expected = sum(t["expected_seconds"] for x in passes for t in x["tests"])
    log(f"{binary}: {sum(len(x['tests']) for x in passes)} test runs planned in {len(passes)} passes "
        f"({int(expected // 60)} min {int(expected % 60)} s of tests with Debian's binary here)")
    # Debian's binary reports beside the release's, never over it
    out = (args.out or paths.reports("store-test-stock" if args.stock else "store-test")).resolve()

    def make(new: Path) -> dict:
        # a failed run's report is swapped into place too (with its logs); its
        # stamp says so, and the next run, not taking it as current, runs again
        report = run_passes(binary, host_binary, args.stock, passes, path, new)
        return {"verdict": report["verdict"], "binary": report["binary"], "sha256": report["sha256"],
                **({"failure": failure(report, out)} if report["verdict"] != "pass" else {})}

    stamp = produce(out, key, make, valid=lambda s: s.get("verdict") == "pass", force=args.force)
    if stamp["verdict"] != "pass":
        raise StageError(stamp["failure"], EXIT_FAIL)
    report = json.loads((out / "report.json").read_text())
    ran = [x for x in report["passes"] if x["status"] == "passed"]
    skipped = [x["name"] for x in report["passes"] if "skipped" in x]
    log(f"PASS: {sum(len(x['tests']) for x in ran)} test runs in {len(ran)} passes"
        + (f"; skipped (the binary lacks their options): {', '.join(skipped)}" if skipped else "")
        + f"; report: {out / 'report.md'}")
    return 0


def main():
    main_wrapper(execute)
