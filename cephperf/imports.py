"""Which of our modules a module runs: itself and every cephperf module it
imports, transitively, read from the import statements of the package's
files (with ast, nothing is imported).

An up-to-date key must cover the code that made the output: a stage that
passed, then had a module it imports changed, has not passed with that
change. A hand-written list of files misses the one added later (ci/release's
key of audit-flags once missed cephperf/packaging/archive.py, which elf.py
imports to unpack .debs); the imports do not.

Every import counts, also one inside a function (a lazy import still runs).
Code run in a root (`python3 -m cephperf.runtime.X` in a subprocess) is not
imported; a key that depends on it names cephperf/runtime/ among its inputs.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

from . import paths

PACKAGE = "cephperf"


def module_file(module: str, root: Path | None = None) -> Path | None:
    """The file of a dotted module of the package (a package's __init__.py), or None."""
    root = root or paths.REPO
    base = root.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _parents(module: str) -> list[str]:
    """cephperf.a.b -> cephperf, cephperf.a: importing a module runs its packages' __init__ first."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _resolve_relative(module: str, is_package: bool, level: int, name: str | None) -> str:
    """`from ..x import y` in `module`: the absolute name of ..x."""
    parts = module.split(".")
    package = parts if is_package else parts[:-1]
    base = package[:len(package) - (level - 1)] if level > 1 else package
    return ".".join(base + ([name] if name else []))


@functools.lru_cache(maxsize=None)
def direct_imports(module: str, root: Path | None = None) -> frozenset[str]:
    """The modules of the package that `module`'s own file imports, anywhere in it."""
    path = module_file(module, root)
    if path is None:
        return frozenset()
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = (_resolve_relative(module, is_package, node.level, node.module) if node.level
                    else node.module or "")
            found.add(base)
            # `from pkg import name`: name is a submodule when it has a file of its own
            found.update(f"{base}.{alias.name}" for alias in node.names
                         if module_file(f"{base}.{alias.name}", root) is not None)
    ours = {m for m in found if m == PACKAGE or m.startswith(PACKAGE + ".")}
    ours.update(p for m in list(ours) for p in _parents(m))
    return frozenset(m for m in ours if module_file(m, root) is not None)


def closure(module: str, root: Path | None = None) -> list[str]:
    """`module` and every module of the package it imports, transitively, sorted."""
    seen: set[str] = set()
    todo = [module, *_parents(module)]
    while todo:
        m = todo.pop()
        if m in seen or module_file(m, root) is None:
            continue
        seen.add(m)
        todo.extend(direct_imports(m, root))
    if module not in seen:
        raise ValueError(f"{module}: no such module under {root or paths.REPO}")
    return sorted(seen)


def code_inputs(module: str, root: Path | None = None) -> list[tuple[str, Path]]:
    """For hash_inputs: the file of every module `module` runs, named by its
    path in the work tree (so a checkout elsewhere keys the same)."""
    root = root or paths.REPO
    files = [module_file(m, root) for m in closure(module, root)]
    return [(f"code {f.relative_to(root)}", f) for f in files]
