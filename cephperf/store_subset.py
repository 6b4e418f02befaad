"""The store test's list (cmake/store-test.toml): its tests, what path of our
series each covers, its passes and their options, read and checked; and the
selection a run makes of it. ci/store-test runs what this returns."""
from __future__ import annotations

import fnmatch
from pathlib import Path

from cephperf.common import EXIT_ERROR, StageError, load_toml


def subset_error(path: Path, message: str) -> StageError:
    return StageError(f"{path}: {message}", EXIT_ERROR)


def option_text(value) -> str:
    """A TOML value as ceph reads it on its command line."""
    return str(value).lower() if isinstance(value, bool) else str(value)


TEST_KEYS, TEST_OPTIONAL = {"name", "seconds", "touches", "covers"}, {"runs"}
PASS_KEYS, PASS_OPTIONAL = {"name", "why", "options"}, {"touches"}


def load_subset(path: Path) -> dict:
    """FILE's tests, passes and limits, checked: a fault names the file and what is wrong, on one line."""
    data = load_toml(path)

    def require(ok: bool, message: str) -> None:
        if not ok:
            raise subset_error(path, message)

    require(set(data) == {"limits", "touches", "test", "pass"},
            f"needs [limits], [touches], [[test]] and [[pass]] and nothing else; has {sorted(data)}")
    limits, touches = data["limits"], data["touches"]
    require(isinstance(limits, dict) and isinstance(touches, dict), "[limits] and [touches] must be tables")
    for key in ("test_factor", "test_floor_seconds", "pass_factor", "pass_floor_seconds"):
        require(isinstance(limits.get(key), (int, float)) and limits[key] > 0, f"[limits] {key} must be a positive number")
    for kind, keys, optional in (("test", TEST_KEYS, TEST_OPTIONAL), ("pass", PASS_KEYS, PASS_OPTIONAL)):
        entries = data[kind]
        require(isinstance(entries, list) and all(isinstance(e, dict) for e in entries), f"{kind} must be [[{kind}]] tables")
        names = [e.get("name") for e in entries]
        for e in entries:
            where = f"[[{kind}]] {e.get('name', '(no name)')}"
            require(keys <= set(e) <= keys | optional,
                    f"{where}: needs {', '.join(sorted(keys))}, may have {', '.join(sorted(optional))}; has {sorted(e)}")
            require(isinstance(e["name"], str) and names.count(e["name"]) == 1, f"{where}: a name must be a unique string")
            tags = e.get("touches", [])
            require(isinstance(tags, list) and all(isinstance(t, str) for t in tags) and set(tags) <= set(touches),
                    f"{where}: touches must list parts declared in [touches] ({', '.join(touches)})")
    for t in data["test"]:
        require(bool(t["touches"]), f"[[test]] {t['name']}: touches must name at least one part")
        require(isinstance(t["seconds"], (int, float)) and t["seconds"] > 0,
                f"[[test]] {t['name']}: seconds must be a positive number")
        require(isinstance(t.get("runs", 1), int) and t.get("runs", 1) >= 1,
                f"[[test]] {t['name']}: runs must be a whole number, 1 or more")
    for p in data["pass"]:
        require(isinstance(p["options"], dict) and all(isinstance(v, (str, int, float, bool))
                                                       for v in p["options"].values()),
                f"[[pass]] {p['name']}: options must be a table of NAME = value")
    return data


def select(subset: dict, path: Path, names: list[str], patterns: str | None) -> list[dict]:
    """The passes to run, each with its tests and their time limits."""
    limits, passes = subset["limits"], subset["pass"]
    unknown = set(names) - {p["name"] for p in passes}
    if unknown:
        raise subset_error(path, f"no pass named {', '.join(sorted(unknown))}")
    globs = [g for g in (patterns or "*").split(":") if g]
    chosen = []
    for p in passes:
        if names and p["name"] not in names:
            continue
        wanted = set(p.get("touches") or subset["touches"])
        # a test with runs > 1 runs that many times, each in a process of its own
        tests = [{"name": t["name"], "run": run, "runs": t.get("runs", 1), "expected_seconds": t["seconds"],
                  "limit_seconds": round(max(limits["test_floor_seconds"], limits["test_factor"] * t["seconds"]))}
                 for t in subset["test"]
                 if wanted & set(t["touches"]) and any(fnmatch.fnmatchcase(t["name"], g) for g in globs)
                 for run in range(1, t.get("runs", 1) + 1)]
        if tests:
            expected = sum(t["expected_seconds"] for t in tests)
            chosen.append({"name": p["name"], "why": p["why"], "tests": tests,
                           "options": {k: option_text(v) for k, v in p["options"].items()},
                           "limit_seconds": round(max(limits["pass_floor_seconds"], limits["pass_factor"] * expected))})
    if not chosen:
        raise subset_error(path, f"no test of the selected passes matches {patterns!r}")
    return chosen
