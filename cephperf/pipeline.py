"""The release's pipeline, declared once in cmake/pipeline.toml, and what is
derived from it: ci/release's order and commands, the up-to-date keys of
its check stages, and the CMake targets.

    python3 -m cephperf.pipeline cmake FILE   write the CMake targets (at configure time)
    python3 -m cephperf.pipeline chain        print the stages in order
    python3 -m cephperf.pipeline covers NAME  print what a check stage's key covers

The declaration is a TOML file, not code: a newcomer reads the release in
one table, and the file says what each field means. This module only checks
it (one line naming the file and the stage on a fault), orders it by
`follows`, and fills in the few placeholders that depend on the release
being run (its profile, build profiles and gate arguments).
"""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from . import paths
from .common import EXIT_ERROR, StageError, hash_inputs, load_toml, write_atomic
from .imports import code_inputs
from .packaging import profiles

REQUIRED = {"name": str, "program": str, "module": str, "args": list, "outputs": list, "skip": str, "what": str}
OPTIONAL = {"follows": str, "inputs": list, "release_args": bool, "target": str}
KINDS = {str: "a string", list: "a list", bool: "true or false"}
SKIPS = ("never", "itself", "passed")
# The placeholders each field may use; {flag_cases} stands for whole arguments.
IN_PATHS = {"profile", "debs", "build", "cache"}
IN_ARGS = IN_PATHS | {"out", "flag_cases"}
PLACEHOLDER = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Stage:
    """One [[stage]] of the file, as declared."""
    name: str
    program: str
    module: str
    args: list
    outputs: list
    skip: str
    what: str
    follows: str | None = None
    inputs: list = field(default_factory=list)
    release_args: bool = False
    target: str | None = None

    @property
    def cmake_target(self) -> str:
        return self.target or self.name


@dataclass(frozen=True)
class Step:
    """A stage as one release runs it."""
    name: str
    command: list[str]
    out: Path | None
    # set for a stage ci/release skips when it passed before: what its
    # up-to-date key covers, and the directory that records a pass
    # (cephperf.stage.produce's output)
    covered: tuple | None = None
    record: Path | None = None

    def key(self) -> str:
        """Hashed when the stage is about to run, not when the release
        starts: the packages it checks are built by an earlier stage."""
        return hash_inputs(list(self.covered))


def _problems(row: dict) -> list[str]:
    known = REQUIRED | OPTIONAL
    problems = [f"unknown field {k}" for k in row if k not in known]
    problems += [f"missing {k}" for k in REQUIRED if k not in row]
    problems += [f"{k} must be {KINDS[known[k]]}" for k, v in row.items() if k in known and not isinstance(v, known[k])]
    problems += [f"{k}: every entry must be a string" for k in ("args", "outputs", "inputs")
                 if isinstance(row.get(k), list) and not all(isinstance(x, str) for x in row[k])]
    if problems:
        return problems
    if row["skip"] not in SKIPS:
        problems.append(f"skip must be one of {', '.join(SKIPS)}")
    if (row["skip"] == "passed") != bool(row.get("inputs")):
        problems.append('inputs are given exactly when skip = "passed"')
    for where, texts, allowed in (("args", row["args"], IN_ARGS), ("outputs", row["outputs"], IN_PATHS),
                                  ("inputs", row.get("inputs", []), IN_PATHS)):
        for text in texts:
            unknown = [p for p in PLACEHOLDER.findall(text) if p not in allowed]
            if unknown:
                problems.append(f"{where}: {text!r}: unknown placeholder(s) {', '.join(unknown)}")
            if "{flag_cases}" in text and text != "{flag_cases}":
                problems.append(f"{where}: {{flag_cases}} must be a whole argument")
    if any("{out}" in a for a in row["args"]) and not row["outputs"]:
        problems.append("args use {out}, but there are no outputs")
    return problems


def load(path: Path | None = None) -> list[Stage]:
    """The declared stages, in the order their `follows` make: one chain from
    the stage that follows none, each followed by at most one."""
    path = path or paths.PIPELINE
    rows = load_toml(path).get("stage", [])
    stages = {}
    for row in rows:
        name = row.get("name", "?") if isinstance(row, dict) else "?"
        problems = _problems(row) if isinstance(row, dict) else ["not a table"]
        if not problems and name in stages:
            problems = ["declared twice"]
        if problems:
            raise StageError(f"{path}: stage {name}: {'; '.join(problems)}", EXIT_ERROR)
        stages[name] = Stage(**row)
    firsts = [s.name for s in stages.values() if s.follows is None]
    if len(firsts) != 1:
        raise StageError(f"{path}: exactly one stage follows none; these do: {', '.join(firsts) or 'none'}", EXIT_ERROR)
    followers: dict[str, str] = {}
    for s in stages.values():
        if s.follows is not None and s.follows not in stages:
            raise StageError(f"{path}: stage {s.name}: follows {s.follows}, which is not declared", EXIT_ERROR)
        if s.follows in followers:
            raise StageError(f"{path}: stages {followers[s.follows]} and {s.name} both follow {s.follows}: "
                             "the release is one chain", EXIT_ERROR)
        followers[s.follows] = s.name
    chain = [stages[firsts[0]]]
    while chain[-1].name in followers:
        chain.append(stages[followers[chain[-1].name]])
    if len(chain) != len(stages):
        left = sorted(set(stages) - {s.name for s in chain})
        raise StageError(f"{path}: stage(s) {', '.join(left)} follow in a circle, not after {chain[-1].name}",
                         EXIT_ERROR)
    targets = [s.cmake_target for s in chain]
    if len(set(targets)) != len(targets) or sum(s.release_args for s in chain) > 1:
        raise StageError(f"{path}: two stages with one target, or more than one with release_args", EXIT_ERROR)
    return chain


def flag_cases(build_profiles: str) -> list[str]:
    """ci/check-flags' cases for the release's build profiles: the defaults,
    and the compile commands of the release as it is built (LTO, and PGO
    unless the profiles turn them off)."""
    cases = ["a", "b", "c"]
    if profiles.lto(build_profiles):
        cases.append("a-lto-pgo" if profiles.pgo(build_profiles) else "a-lto")
    return cases


def _fill(text: str, values: dict) -> str:
    return PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), text)


def _path(text: str, values: dict) -> Path:
    """A declared path: a placeholder's, or one in the work tree."""
    filled = Path(_fill(text, values))
    return filled if filled.is_absolute() else paths.REPO / filled


def release_suffix(release_args: tuple[str, ...]) -> str:
    """Where a stage given ci/release's extra arguments reports, beside its
    default report: another gate's verdict must neither reuse nor overwrite
    the default one. (The label keeps the names of reports made before.)"""
    return "-" + hash_inputs([("gate-args", " ".join(release_args))])[:12] if release_args else ""


def key_covers(stage: Stage, args: list[str], values: dict) -> tuple:
    """What a check stage's up-to-date key covers: its program and arguments,
    its declared inputs, and the code it runs, found from the imports
    (cephperf/imports.py). Files are read when the key is made."""
    return (("program", stage.program), ("arguments", "\0".join(args)),
            *[(f"input {text}", _path(text, values)) for text in stage.inputs], *code_inputs(stage.module))


def steps(profile: str, release_args: tuple[str, ...] = (), build_profiles: str | None = None,
          programs: Path | None = None, path: Path | None = None) -> list[Step]:
    """The stages as this release runs them: commands filled in for the
    profile, the build profiles (default: $DEB_BUILD_PROFILES) and the
    arguments after `--`. `programs` holds ci/ and bench/ (tests put
    stand-ins there)."""
    if build_profiles is None:
        build_profiles = os.environ.get("DEB_BUILD_PROFILES", "")
    values = {"profile": profile, "debs": paths.release_out(profile), "build": paths.build_dir(),
              "cache": paths.cache_dir()}
    result = []
    for stage in load(path):
        extra = release_args if stage.release_args else ()
        suffix = release_suffix(extra)
        out = None
        if stage.outputs:
            first = _path(stage.outputs[0], values)
            out = first.with_name(first.name + suffix)
        filled = {**values, "out": out}
        args = []
        for a in stage.args:
            args += flag_cases(build_profiles) if a == "{flag_cases}" else [_fill(a, filled)]
        args += extra
        command = [str((programs or paths.REPO) / stage.program), *args]
        if stage.skip == "passed":
            result.append(Step(stage.name, command, out, key_covers(stage, args, filled),
                               paths.reports("release") / (stage.name + suffix)))
        else:
            result.append(Step(stage.name, command, out))
    return result


def cmake_quote(text: str) -> str:
    return '"' + re.sub(r'(["\\$;])', r"\\\1", text) + '"'


def cmake_targets(stages: list[Stage]) -> str:
    """One target per stage, running it as the release runs it (ci/release
    --stage NAME: its arguments from the table, skipped when it passed on
    the same inputs)."""
    lines = ["# Written by `python3 -m cephperf.pipeline cmake` from cmake/pipeline.toml at configure",
             "# time; edit that file, not this one.", ""]
    for s in stages:
        lines += [f"add_custom_target({s.cmake_target} COMMAND ${{CMAKE_CURRENT_SOURCE_DIR}}/ci/release "
                  f"--profile ${{CEPH_PERF_PROFILE}} --stage {s.name} USES_TERMINAL",
                  f"  COMMENT {cmake_quote(f'{s.name}: {s.what}')})"]
    return "\n".join(lines) + "\n"


def covers(name: str) -> list[str]:
    """What a check stage's up-to-date key covers, for people: its inputs and its code's files."""
    stage = next((s for s in load() if s.name == name), None)
    if stage is None or stage.skip != "passed":
        raise StageError(f"{paths.PIPELINE}: no check stage {name} (skip = \"passed\")", EXIT_ERROR)
    code = [str(f.relative_to(paths.REPO)) for _, f in code_inputs(stage.module)]
    return ["arguments: " + " ".join(stage.args), *[f"input: {i}" for i in stage.inputs],
            *[f"code: {c}" for c in code]]


def main(argv: list[str]) -> int:
    if argv[:1] == ["cmake"] and len(argv) == 2:
        dest = Path(argv[1])
        text = cmake_targets(load())
        # rewritten only when it changes, so that make and ninja see no change otherwise
        if not dest.exists() or dest.read_text() != text:
            write_atomic(dest, text)
        return 0
    if argv == ["chain"]:
        print(" → ".join(s.name for s in load()))
        return 0
    if argv[:1] == ["covers"] and len(argv) == 2:
        print("\n".join(covers(argv[1])))
        return 0
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return EXIT_ERROR


if __name__ == "__main__":
    from .common import main_wrapper
    main_wrapper(lambda: main(sys.argv[1:]))
