"""Upstream's qa/standalone tests for ci/upstream-standalone: the list
(cmake/upstream-standalone.toml) read and checked, the TEST_ functions of a
script found as upstream's main() finds them, the selection a run makes,
and the judgement of a candidate's (or a mixed cluster's) results against
stock's, test by test. Pure functions; the stage runs what they plan."""
from __future__ import annotations

import fnmatch
import re
from pathlib import Path

from .common import EXIT_ERROR, StageError, load_toml

MODES = ("stock", "candidate", "mixed")
SCRIPT_KEYS, SCRIPT_OPTIONAL = {"path", "test_seconds", "covers"}, set()
KNOWN_KEYS = {"script", "test", "cause"}

# What upstream's run() lists when no test is named: `set | sed -n -e
# 's/^\(TEST_[0-9a-z_]*\) .*/\1/p'`, i.e. every defined shell function whose
# name is TEST_ followed by lowercase letters, digits and underscores only
# (bash's `set` prints a function as `NAME () `). A definition reads
# `function NAME`, `function NAME()` or `NAME()`, at the start of a line.
DEFINITION = re.compile(r"^[ \t]*(?:function[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*(?:\([ \t]*\))?"
                        r"|([A-Za-z_][A-Za-z0-9_]*)[ \t]*\([ \t]*\))[ \t]*(?:\{|$)", re.M)
LISTED = re.compile(r"TEST_[0-9a-z_]*")

# The verdicts of one test in one mode.
PASS, FAIL = "pass", "fail"
KNOWN = "known stock failure"
UNJUDGED = "not judged: stock failed and is not listed as a known stock failure"


def list_error(path: Path, message: str) -> StageError:
    return StageError(f"{path}: {message}", EXIT_ERROR)


def test_functions(text: str) -> list[str]:
    """The TEST_ functions upstream's run() would run, in the order the script
    defines them (bash's `set` sorts them; the order is the script's here), once each."""
    names = []
    for m in DEFINITION.finditer(text):
        name = m.group(1) or m.group(2)
        if LISTED.fullmatch(name) and name not in names:
            names.append(name)
    return names


def load_list(path: Path) -> dict:
    """FILE's scripts and known stock failures, checked: a fault names the file, on one line."""
    data = load_toml(path)

    def require(ok: bool, message: str) -> None:
        if not ok:
            raise list_error(path, message)

    require(set(data) <= {"script", "known_stock_failure"} and "script" in data,
            f"needs [[script]] tables and may have [[known_stock_failure]] tables; has {sorted(data)}")
    scripts, known = data["script"], data.get("known_stock_failure", [])
    for kind, entries in (("script", scripts), ("known_stock_failure", known)):
        require(isinstance(entries, list) and all(isinstance(e, dict) for e in entries), f"{kind} must be [[{kind}]] tables")
    paths = [s.get("path") for s in scripts]
    for s in scripts:
        where = f"[[script]] {s.get('path', '(no path)')}"
        require(SCRIPT_KEYS <= set(s) <= SCRIPT_KEYS | SCRIPT_OPTIONAL,
                f"{where}: needs {', '.join(sorted(SCRIPT_KEYS))}; has {sorted(s)}")
        require(isinstance(s["path"], str) and s["path"].endswith(".sh") and paths.count(s["path"]) == 1
                and ".." not in Path(s["path"]).parts and not s["path"].startswith("/"),
                f"{where}: path must be a unique script under qa/standalone/, e.g. osd/osd-rep-recov-eio.sh")
        require(isinstance(s["test_seconds"], int) and s["test_seconds"] > 0,
                f"{where}: test_seconds (each TEST_'s bound) must be a positive whole number")
        require(isinstance(s["covers"], str) and s["covers"].strip(), f"{where}: covers must say what it tests")
    seen = set()
    for k in known:
        where = f"[[known_stock_failure]] {k.get('script', '?')} {k.get('test', '?')}"
        require(set(k) == KNOWN_KEYS, f"{where}: needs exactly {', '.join(sorted(KNOWN_KEYS))}; has {sorted(k)}")
        require(k["script"] in paths, f"{where}: its script is not among the [[script]] tables")
        require(isinstance(k["test"], str) and LISTED.fullmatch(k["test"]) is not None,
                f"{where}: test must be a TEST_ function's name")
        require(isinstance(k["cause"], str) and len(k["cause"].strip()) > 10, f"{where}: cause must say why it fails")
        require((k["script"], k["test"]) not in seen, f"{where}: listed twice")
        seen.add((k["script"], k["test"]))
    return data


def known_failures(data: dict) -> dict[tuple[str, str], str]:
    return {(k["script"], k["test"]): k["cause"] for k in data.get("known_stock_failure", [])}


def test_id(script: str, test: str) -> str:
    """A test's name in reports and directories: osd/osd-rep-recov-eio/TEST_rados_get_with_eio."""
    return f"{script.removesuffix('.sh')}/{test}"


def select(data: dict, path: Path, standalone: Path, scripts: list[str], pattern: str | None) -> list[dict]:
    """The tests to run, in the list's order: each TEST_ of each chosen script
    (upstream's qa/standalone at `standalone`) that matches `pattern` (globs
    separated by ':'), with its script's bound."""
    listed = {s["path"]: s for s in data["script"]}
    unknown = [s for s in scripts if s not in listed]
    if unknown:
        raise list_error(path, f"no [[script]] {', '.join(unknown)}")
    globs = [g for g in (pattern or "*").split(":") if g]
    functions = {}
    for s in data["script"]:
        script = standalone / s["path"]
        if not script.is_file():
            raise list_error(path, f"[[script]] {s['path']}: no such script in {standalone}")
        functions[s["path"]] = test_functions(script.read_text(errors="replace"))
        if not functions[s["path"]]:
            raise list_error(path, f"[[script]] {s['path']}: {script} defines no TEST_ function")
    for (script, test) in known_failures(data):
        if test not in functions[script]:
            raise list_error(path, f"[[known_stock_failure]] {script} {test}: the script has no such TEST_ function")
    chosen = [{"id": test_id(s["path"], t), "script": s["path"], "test": t, "limit_seconds": s["test_seconds"]}
              for s in data["script"] if not scripts or s["path"] in scripts
              for t in functions[s["path"]] if any(fnmatch.fnmatchcase(t, g) for g in globs)]
    if not chosen:
        raise list_error(path, f"no TEST_ function of the chosen scripts matches {pattern!r}")
    return chosen


def judge(stock: dict, other: dict | None, known: str | None) -> str:
    """One test in one mode. stock and other are run results ({"result": ...});
    other is None for stock's own verdict. A test stock fails is a known stock
    failure when the list names it (whatever the other mode did), and is not
    judged when it does not; never a pass."""
    stock_ok = stock["result"] == "passed"
    if not stock_ok:
        return KNOWN if known else UNJUDGED
    if other is None:
        return PASS
    return PASS if other["result"] == "passed" else FAIL


def exit_code(verdicts: list[str], stock_only: bool) -> int:
    """0: every test passed or is a known stock failure; 1: a test failed (or,
    in a stock-only run, stock failed a test the list does not name); 2: a
    test could not be judged."""
    if FAIL in verdicts or (stock_only and UNJUDGED in verdicts):
        return 1
    return 2 if UNJUDGED in verdicts else 0


def mixed_note(calls: dict) -> str:
    """What the wrapper's notes say of a mixed test: which OSD ids each build ran."""
    runs = {b: calls.get(b, {}).get("run", []) for b in ("stock", "candidate")}
    if not any(runs.values()):
        return "no OSD started through the wrapper"
    text = "; ".join(f"{b}: osd {', '.join(ids) or 'none'}" for b, ids in runs.items())
    return text + ("" if runs["candidate"] and runs["stock"] else " (not a mixed cluster)")
