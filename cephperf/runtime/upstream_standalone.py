"""Upstream's qa/standalone tests inside the runtime root, for ci/upstream-standalone (python3 stdlib only).

  python3 -m cephperf.runtime.upstream_standalone PLAN.json

PLAN is written by cephperf/stages/upstream_standalone.py, which decides
what runs and judges it; this side only runs it and says what happened. The
record goes to PLAN.state_dir/record.json whatever happens.

Each test is one TEST_ function of an upstream script, run alone as its own
main() runs it (`bash SCRIPT TEST_NAME`), unchanged, with CEPH_ROOT a
directory whose qa/ and doc/ are the pinned tree's and whose src/pybind/mgr
is the installed /usr/share/ceph/mgr, against the root's installed packages.
It runs from a fresh, empty directory: the helpers put `.` first on PATH, and
their teardown fails on any file named core* there (kernel.core_pattern
"core" writes a crashed daemon's core into its working directory). In the
candidate and mixed modes that directory holds `ceph-osd`, the wrapper
scripts/osd-by-id.sh, which execs the build the OSD's id chooses and notes
each call in osd-calls.log. After each test, whatever it left running (the
helpers' daemons detach from the test's session) is killed: the next test
starts on free ports with nothing of the last one's. With own_network the
run has a network namespace of its own (Root.run(network=False)), whose
loopback this side brings up: runs of tests that take the same fixed port
(every test of a script does) can then go side by side.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from .record import NodeError, recorded
from .shell import log, sh, stop_session

# What upstream's helpers call beyond Ceph's packages (cmake/roots.toml: ceph-test
# brings jq and xmlstarlet, ceph-base uuid-runtime's uuidgen).
TOOLS = ("xmlstarlet", "jq", "uuidgen", "sysctl")
STOCK_OSD = "/usr/bin/ceph-osd"
MGR_MODULES = "/usr/share/ceph/mgr"
OSD_CALLS = "osd-calls.log"
TAIL_LINES = 40
CAUSE_LINES = 25
FAILED_CHECK = re.compile(r": \S+:  return 1$")
# A test stopped for its time gets this long after SIGTERM (its trap tears the cluster down).
KILL_GRACE = 20


def ceph_root(state: Path, tree: Path) -> Path:
    """CEPH_ROOT as the helpers read it: qa/ and doc/ from the pinned tree, the installed mgr modules."""
    root = state / "ceph-root"
    shutil.rmtree(root, ignore_errors=True)
    (root / "src" / "pybind").mkdir(parents=True)
    for sub in ("qa", "doc"):
        (root / sub).symlink_to(tree / sub)
    (root / "src" / "pybind" / "mgr").symlink_to(MGR_MODULES)
    return root


def version(binary: str, libs: str = "") -> str:
    env = {**os.environ, **({"LD_LIBRARY_PATH": libs} if libs else {})}
    r = sh(binary, "--version", env=env, check=False, timeout=60)
    if r.returncode != 0:
        raise NodeError(f"{binary} --version failed (exit {r.returncode}): {(r.stderr or r.stdout).strip()[-800:]}")
    return r.stdout.strip()


def others() -> list[int]:
    """Every live process of this PID namespace but its init and this one."""
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) not in (1, os.getpid()):
            try:
                if (d / "stat").read_text().rpartition(")")[2].split()[0] != "Z":
                    pids.append(int(d.name))
            except (OSError, IndexError):
                pass
    return pids


def kill_leftovers(deadline_seconds: float = 60) -> list[int]:
    """SIGKILL whatever a test left running (daemons reparented to PID 1,
    which reaps them); returns their pids. Waits until they are gone."""
    left = others()
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    end = time.monotonic() + deadline_seconds
    while others() and time.monotonic() < end:
        time.sleep(0.2)
    if others():
        raise NodeError(f"processes {others()} survived SIGKILL for {deadline_seconds} s")
    return left


def osd_calls(log_file: Path) -> dict:
    """The wrapper's notes: which OSD ids each build ran as a daemon, and made with mkfs."""
    seen = {}
    if log_file.exists():
        for line in log_file.read_text().splitlines():
            osd, build, action = (line.split() + ["", "", ""])[:3]
            seen.setdefault(build, {}).setdefault(action, set()).add(osd)
    return {b: {a: sorted(ids, key=lambda i: (not i.isdigit(), int(i) if i.isdigit() else 0, i))
                for a, ids in acts.items()} for b, acts in sorted(seen.items())}


def excerpt(log_file: Path, root: Path) -> str:
    """What a failed test's output says of the cause: the helpers trace every
    line (xtrace), and a failed check returns 1 up the stack, so the lines
    before the first `return 1` name it; without one (a test stopped for its
    time) the last lines. CEPH_ROOT's path is cut from the traced names."""
    lines = log_file.read_text(errors="replace").splitlines()
    first = next((i for i, line in enumerate(lines) if FAILED_CHECK.search(line)), None)
    chosen = lines[max(0, first - CAUSE_LINES):first + 3] if first is not None else lines[-TAIL_LINES:]
    return "\n".join(line.replace(f"{root}/", "") for line in chosen)


def environment(plan: dict, root: Path, test_dir: Path, candidate: str | None) -> dict:
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8",
           "CEPH_ROOT": str(root), "TESTDIR": str(test_dir), "TMPDIR": "/tmp"}
    if plan["mode"] != "stock":
        env.update({"CEPH_PERF_OSD_RULE": plan["mode"], "CEPH_PERF_STOCK_OSD": STOCK_OSD,
                    "CEPH_PERF_CANDIDATE_OSD": candidate, "CEPH_PERF_CANDIDATE_LIBS": plan.get("candidate_libs") or "",
                    "CEPH_PERF_OSD_LOG": str(test_dir / OSD_CALLS)})
    return env


def run_test(plan: dict, test: dict, root: Path, candidate: str | None, state: Path) -> dict:
    """One TEST_ function in a fresh directory, bounded in time."""
    test_dir = state / "tests" / test["id"]
    shutil.rmtree(test_dir, ignore_errors=True)
    work = test_dir / "run"
    work.mkdir(parents=True)
    if plan["mode"] != "stock":
        shutil.copy(plan["wrapper"], work / "ceph-osd")
        os.chmod(work / "ceph-osd", 0o755)
    output = test_dir / "output.log"
    argv = ["bash", str(root / "qa" / "standalone" / test["script"]), test["test"]]
    limit = test["limit_seconds"]
    t0 = time.monotonic()
    with open(output, "w") as out:
        out.write(f"$ cd {work} && CEPH_ROOT={root} {' '.join(argv)}\n")
        out.flush()
        proc = subprocess.Popen(argv, cwd=work, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=environment(plan, root, test_dir, candidate), start_new_session=True)
        try:
            rc = proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            rc = None
        finally:
            stop_session(proc, KILL_GRACE)
    seconds = round(time.monotonic() - t0, 1)
    left = kill_leftovers()
    cores = sorted(p.name for p in work.iterdir() if p.name.startswith("core") or p.name.endswith("core"))
    result = {"id": test["id"], "script": test["script"], "test": test["test"], "seconds": seconds,
              "limit_seconds": limit, "exit": rc,
              "result": "passed" if rc == 0 else (f"timeout (stopped after {limit} s)" if rc is None
                                                  else f"failed (exit {rc})"),
              "osd_calls": osd_calls(test_dir / OSD_CALLS), "left_running": len(left), "cores": cores}
    if rc != 0:
        result["tail"] = excerpt(output, root)
    else:
        output.unlink()
    # the stores (sparse block files of each OSD) go; a failed test's output and logs stay
    shutil.rmtree(work, ignore_errors=True)
    return result


def check_tools() -> None:
    missing = [t for t in TOOLS if not shutil.which(t)]
    if missing:
        raise NodeError(f"the runtime root lacks {', '.join(missing)}, which upstream's helpers call "
                        "(cmake/roots.toml [runtime])")


def run(plan: dict, result: dict) -> None:
    state = Path(plan["state_dir"])
    check_tools()
    if plan.get("own_network"):
        # a network namespace of this run's own: the test's fixed mon port is free
        sh("ip", "link", "set", "lo", "up")
    if others():
        raise NodeError(f"processes {others()} already run in the root before the first test")
    root = ceph_root(state, Path(plan["tree"]))
    candidate = plan.get("candidate_osd") if plan["mode"] != "stock" else None
    result["versions"] = {"stock": version(STOCK_OSD)}
    if candidate:
        result["versions"]["candidate"] = version(candidate, plan.get("candidate_libs") or "")
    result["tests"] = []
    for i, test in enumerate(plan["tests"], 1):
        r = run_test(plan, test, root, candidate, state)
        result["tests"].append(r)
        log(f"{plan['mode']}: {test['script']} {test['test']} {r['result']} in {r['seconds']} s "
            f"({i}/{len(plan['tests'])})")


def main():
    plan = json.loads(Path(sys.argv[1]).read_text())
    with recorded(Path(plan["state_dir"])) as result:
        run(plan, result)
    return 0 if result["ok"] else 2


if __name__ == "__main__":
    sys.exit(main())
