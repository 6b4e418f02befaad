"""Upstream's ceph_test_objectstore inside the runtime root, for ci/store-test (python3 stdlib only).

  python3 -m cephperf.runtime.store_test probe PLAN.json   what the binary knows: options, tests
  python3 -m cephperf.runtime.store_test run PLAN.json     the plan's passes, one test per process

PLAN is written by cephperf/stages/store_test.py, which decides what runs;
this side only runs it and says what happened. The record goes to
PLAN.state_dir/record.json whatever happens; `run` leaves each test's
output in logs/PASS/TEST.log and gtest's XML in xml/PASS/TEST.xml there.

One process per test: a crash or a hang then ends one test, is named as that
test's, and cannot take the rest of the pass's results with it; each test
also starts from a fresh working directory (store_test makes its store,
sparse files of 10 GiB, in its working directory and removes it only when it
finishes cleanly).
"""
from __future__ import annotations

import collections
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from .record import NodeError, recorded
from .shell import log, sh, stop_session

# ceph's own reply to --show_config_value for a name its option table lacks;
# an unknown --NAME=VALUE, by contrast, is ignored without a word.
UNKNOWN_OPTION = re.compile(r"option not found")
# ceph's reply to a value it cannot read (--NAME=lots for a number); it then
# skips --show_config_value and goes on to run the tests, hence NO_TESTS.
REJECTED_VALUE = re.compile(r"^parse error setting .*$", re.M)
NO_TESTS = "--gtest_filter=-*"
# Where a failed test's output says what went wrong: Ceph's crash handler
# (the signal or the failed assertion, then a backtrace), gtest's failed
# expectation. A crash then dumps its recent log events and the debug levels,
# hundreds of lines that say nothing of the cause: the record keeps
# CAUSE_LINES from the first such line; without one (a hang), the last
# TAIL_LINES.
CAUSE = re.compile(r"\*\*\* Caught signal|FAILED ceph_assert|: Failure$|^\[  FAILED  \]")
CAUSE_LINES = 25
TAIL_LINES = 30
# A test asked to stop (its time is up) gets this long before SIGKILL.
KILL_GRACE = 5


def show_config_value(binary: str, name: str, value: str | None = None) -> tuple[str | None, str | None]:
    """The binary's value of option NAME (with --NAME=VALUE given, if VALUE):
    (value, None); (None, None) when its option table has no such option;
    (None, ceph's complaint) when it cannot read VALUE."""
    args = [f"--{name}={value}"] if value is not None else []
    r = sh(binary, *args, "--show_config_value", name, NO_TESTS, timeout=60, check=False)
    rejected = REJECTED_VALUE.search(r.stderr)
    if rejected:
        return None, rejected.group(0)
    if r.returncode == 0 and len(r.stdout.strip().splitlines()) <= 1:
        return r.stdout.strip(), None
    if r.returncode == 1 and UNKNOWN_OPTION.search(r.stderr):
        return None, None
    raise NodeError(f"{binary} --show_config_value {name} failed (exit {r.returncode}): "
                    f"{(r.stderr or r.stdout).strip()[-800:]}")


def listed_tests(binary: str) -> dict[str, str]:
    """Every test the binary has: full gtest name -> its parameter as gtest prints it ('' if none)."""
    r = sh(binary, "--gtest_list_tests", timeout=120)
    tests, suite = {}, ""
    for line in r.stdout.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            suite = line.split("#")[0].strip()
            continue
        name, _, comment = line.strip().partition("#")
        tests[suite + name.strip()] = comment.partition("GetParam() = ")[2].strip()
    if not tests:
        raise NodeError(f"{binary} --gtest_list_tests listed no test")
    return tests


def probe(plan: dict, result: dict) -> None:
    binary = plan["binary"]
    result["options"] = {}
    for name, value in plan["probe"]:
        default, _ = show_config_value(binary, name)
        # what the binary makes of the value: a string option takes it as
        # given, a number or a bool is read and printed back
        as_given, rejected = show_config_value(binary, name, value) if default is not None else (None, None)
        result["options"][f"{name}={value}"] = {"known": default is not None, "default": default,
                                                "as_given": as_given, "rejected": rejected}
    result["tests"] = listed_tests(binary)


def no_core_dumps():
    """In the test's child: a crash of a 10 GiB store must not write a core file."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def excerpt(log_file: Path) -> str:
    """What a failed test's output says of the cause, or how it ended."""
    cause, last = [], collections.deque(maxlen=TAIL_LINES)
    with open(log_file, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if cause or CAUSE.search(line):
                cause.append(line)
                if len(cause) == CAUSE_LINES:
                    break
            last.append(line)
    return "\n".join(cause or last)


def last_lines(log_file: Path) -> str:
    """The end of a test's output, where gtest prints its summary."""
    with open(log_file, "rb") as f:
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - 16 * 1024))
        return f.read().decode(errors="replace")


def outcome(rc: int | None, output: str) -> str:
    """What a test's exit and output say: passed, skipped (by the test itself), failed or crashed."""
    if rc is None:
        return "timeout"
    if rc < 0:
        return f"crashed ({signal.Signals(-rc).name})"
    if rc != 0:
        return "failed"
    if re.search(r"^\[  SKIPPED \] 1 test", output, re.M):
        return "skipped"
    if re.search(r"^\[  PASSED  \] 1 test\.", output, re.M):
        return "passed"
    # exit 0 without gtest's own word: the filter matched nothing, or the
    # process ended in a way gtest never reported
    return "failed (gtest reported no result)"


def run_test(binary: str, options: dict, test: dict, limit: float, state: Path, pass_name: str) -> dict:
    scratch = state / "scratch"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    file_name = test["name"].replace("/", "_") + (f".run{test['run']}" if test["runs"] > 1 else "")
    log_file = state / "logs" / pass_name / f"{file_name}.log"
    xml_file = state / "xml" / pass_name / f"{file_name}.xml"
    argv = [binary, *(f"--{k}={v}" for k, v in options.items()),
            f"--gtest_filter={test['name']}", f"--gtest_output=xml:{xml_file}"]
    t0 = time.monotonic()
    with open(log_file, "w") as out:
        out.write("$ " + " ".join(argv) + "\n")
        out.flush()
        proc = subprocess.Popen(argv, cwd=scratch, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, preexec_fn=no_core_dumps)
        try:
            rc = proc.wait(timeout=max(limit, 1))
        except subprocess.TimeoutExpired:
            rc = None
        finally:
            stop_session(proc, KILL_GRACE)
    seconds = time.monotonic() - t0
    shutil.rmtree(scratch, ignore_errors=True)
    result = {"name": test["name"], "run": test["run"], "runs": test["runs"],
              "result": outcome(rc, last_lines(log_file)), "seconds": round(seconds, 1),
              "limit_seconds": round(limit), "exit": rc, "log": str(log_file.relative_to(state))}
    if result["result"] == "timeout":
        result["result"] = f"timeout (stopped after {limit:.0f} s)"
    if result["result"] not in ("passed", "skipped"):
        result["tail"] = excerpt(log_file)
    return result


def run_pass(plan: dict, one: dict, state: Path) -> dict:
    """One pass: its tests in order until one does not pass; the rest are then not run."""
    for sub in ("logs", "xml"):
        (state / sub / one["name"]).mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + one["limit_seconds"]
    done, status = [], "passed"
    for i, test in enumerate(one["tests"], 1):
        left = deadline - time.monotonic()
        if status != "passed" or left <= 0:
            if status == "passed":
                status = f"failed: the pass went over its {one['limit_seconds']} s"
            done.append({"name": test["name"], "run": test["run"], "runs": test["runs"], "result": "not run",
                         "seconds": 0})
            continue
        r = run_test(plan["binary"], one["options"], test, min(test["limit_seconds"], left), state, one["name"])
        done.append(r)
        which = r["name"] + (f" (run {r['run']} of {r['runs']})" if r["runs"] > 1 else "")
        log(f"pass {one['name']}: {which} {r['result']} in {r['seconds']} s ({i}/{len(one['tests'])})")
        if r["result"] not in ("passed", "skipped"):
            status = f"failed: {which} {r['result']}"
    return {"name": one["name"], "status": status, "tests": done,
            "seconds": round(sum(t["seconds"] for t in done), 1)}


def run(plan: dict, result: dict) -> None:
    state = Path(plan["state_dir"])
    result["passes"] = []
    for one in plan["passes"]:
        log(f"pass {one['name']}: {len(one['tests'])} tests, options "
            + (" ".join(f"--{k}={v}" for k, v in one["options"].items()) or "(none: the binary's defaults)"))
        result["passes"].append(run_pass(plan, one, state))


def main():
    command, plan_file = sys.argv[1], Path(sys.argv[2])
    plan = json.loads(plan_file.read_text())
    with recorded(Path(plan["state_dir"])) as result:
        {"probe": probe, "run": run}[command](plan, result)
    return 0 if result["ok"] else 2


if __name__ == "__main__":
    sys.exit(main())
