"""The release build: the source package built whole in a throwaway overlay
of the build root, as Debian's buildds build an upload, then judged (blhc,
LTO's ODR warnings, PGO's coverage mismatches, lintian). ci/build-release
runs it.

The build takes hours and its checks minutes: a build that stopped goes on
in its kept tree, an output whose build finished but whose checks failed or
were interrupted resumes at the checks, and a change to the checks' rules
alone re-judges a finished build.
"""
import json
import os
import shutil
import time
from pathlib import Path

from .. import paths
from ..common import (EXIT_ERROR, EXIT_FAIL, StageError, hash_inputs, load_pins, load_toml, log, read_stamp,
                      write_atomic)
from ..imports import code_inputs
from ..stage import produce
from . import blhc, pgo, profiles
from .buildlog import build_in_root
from .dpkg_build import build_environment, dpkg_args, what_is_built
from .lto_warnings import lto_warnings
from .roots import Root
from .source_tree import assembled_tree

BUILD = paths.RUNTIME / "scripts" / "build-release.sh"
# sourced by BUILD (and by ci/build-osd --release's script): the kept tree
KEPT_TREE_SCRIPT = paths.RUNTIME / "scripts" / "kept-tree.sh"
LINTIAN = paths.RUNTIME / "scripts" / "lintian.sh"
BLHC_RULES = paths.CMAKE / "blhc.toml"
# Where the release is built inside the root: fixed, as GCC names each
# object's training counts by it and ccache keys on it.
BUILD_PATH = Path("/build/ceph-perf")
# The tree the build runs in, kept in the unfinished output until the build is
# done: a build of the same inputs that stopped goes on in it.
KEPT_TREE = "tree"
# A resumed build makes again every output written in this many minutes
# before its tree's newest file (runtime/scripts/kept-tree.sh says why).
REDO_MINUTES = 10
LTO_RULES = paths.CMAKE / "lto-warnings.toml"


def default_dsc() -> Path:
    found = sorted(paths.debs_out("source").glob("*.dsc"))
    if not found:
        raise StageError(f"no .dsc in {paths.debs_out('source')}: run ci/build-debs --source-only first, "
                         "or pass --dsc FILE", EXIT_ERROR)
    return found[-1]


def clean_build(root: Root, dsc: Path, kind: str, build_env: dict, new: Path) -> None:
    """dpkg-buildpackage from the .dsc in a throwaway overlay of the root, in
    a tree kept in `new` until the build is done (an interrupted build of the
    same inputs goes on where it stopped); results and build.log into `new`."""
    args = dpkg_args(kind, build_env)  # -b: binaries; the .changes gets the source after
    tree = new / KEPT_TREE
    resuming = (tree / ".unpacked").is_file()
    log(f"{'resumed' if resuming else 'clean'} build of {dsc.name}: dpkg-buildpackage {' '.join(args)}, "
        f"DEB_BUILD_OPTIONS=\"{build_env['DEB_BUILD_OPTIONS']}\"; whole log: {new / 'build.log'}")
    tree.mkdir(exist_ok=True)
    if resuming:
        # The script removes what was written in the build's last minutes;
        # when its build step had finished (dh's stamp), dh would skip that
        # step and install what is gone: without the stamp, make makes it again.
        (tree / "src" / "debian" / "debhelper-build-stamp").unlink(missing_ok=True)
    # a resumed build's log follows the earlier part: blhc judges every compile line
    with open(new / "build.log", "a" if resuming else "w") as logf:
        build_in_root(root, BUILD, {"DSC": str(dsc), "OUT": str(new), "ARGS": " ".join(args),
                                    "REDO_MINUTES": str(REDO_MINUTES), **build_env}, logf,
                      "build-release", f"the build of {dsc.name} failed; the next run goes on from where it "
                      f"stopped (or remove {new} to start afresh)", EXIT_FAIL,
                      binds=[dsc.parent, new], mounts={tree: BUILD_PATH})
    shutil.rmtree(tree)


def judged_warnings(found: list, rules: Path, report: Path, what: str) -> tuple[dict, str]:
    """The warnings `found` judged against the exceptions of `rules`, written
    to `report`; each explained group logged as `what`. Returns the verdict
    and the first unexplained ones, shown one a line."""
    verdict = blhc.judge(found, load_toml(rules).get("exception", []))
    write_atomic(report, json.dumps(verdict, indent=2) + "\n")
    for reason, n in verdict["explained"].items():
        log(f"{what}: {n} explained: {reason}")
    return verdict, "\n  ".join(line[:300] for line in verdict["unexplained"][:10])


def check_log(new: Path) -> dict:
    """blhc on the build log against cmake/blhc.toml; fails on an unexplained warning."""
    verdict, shown = judged_warnings(blhc.warnings(blhc.run_blhc(new / "build.log")), BLHC_RULES,
                                     new / "blhc.json", "blhc warnings")
    if verdict["unexplained"]:
        raise StageError(f"blhc: {len(verdict['unexplained'])} warning(s) of build.log not explained by "
                         f"{BLHC_RULES} (all in {new / 'blhc.json'}):\n  {shown}", EXIT_FAIL)
    return verdict["explained"]


def check_lto_warnings(new: Path) -> dict:
    """GCC's ODR warnings in the log, against cmake/lto-warnings.toml; fails on an unexplained one."""
    verdict, shown = judged_warnings(lto_warnings(new / "build.log"), LTO_RULES, new / "lto-warnings.json",
                                     "LTO ODR warnings")
    if verdict["unexplained"]:
        raise StageError(f"{len(verdict['unexplained'])} -Wodr/-Wlto-type-mismatch warning(s) in build.log not "
                         f"explained by {LTO_RULES} (line numbers of {new / 'build.log'}; all in "
                         f"{new / 'lto-warnings.json'}): a One Definition Rule violation under LTO can miscompile "
                         f"silently; fix it, or explain it there:\n  {shown}", EXIT_FAIL)
    return verdict["explained"]


# GCC's warning for training counts that do not fit the code they are used
# for (debian/delta/profile-guided-profile.patch makes it a warning).
COVERAGE_MISMATCH = "[-Wcoverage-mismatch]"


def check_counts_fit(new: Path, build_env: dict) -> int:
    """Under PGO, every function's training counts fit its code: a
    release built with counts of other sources, or made elsewhere than the
    instrumented build's path, is not the build ci/pgo-train measured."""
    if not profiles.pgo(build_env["DEB_BUILD_PROFILES"]):
        return 0
    with open(new / "build.log", errors="replace") as f:
        mismatched = [line.strip() for line in f if COVERAGE_MISMATCH in line]
    if mismatched:
        raise StageError(f"PGO: {len(mismatched)} coverage-mismatch warning(s) in {new / 'build.log'}: "
                         f"the training counts do not fit these sources, e.g. {mismatched[0][:300]}; "
                         "re-run ci/pgo-train --pin and ci/source", EXIT_FAIL)
    return len(mismatched)


def check_changes(root: Root, new: Path) -> str:
    [changes] = sorted(new.glob("*.changes"))
    log(f"lintian {changes.name}")
    with open(new / "lintian.txt", "w") as out:
        rc = root.run(["bash", str(LINTIAN)], binds=[new], env={"WORK": str(new), "TARGET": changes.name}, stdout=out)
    if rc != 0:
        raise StageError(f"lintian reports errors on {changes.name} (exit {rc}); see {new / 'lintian.txt'}", EXIT_FAIL)
    return changes.name


# In an unfinished output: dpkg-buildpackage finished and its results are all
# copied out; what is left are the checks.
BUILT = "built.json"


def take_over_build(previous: Path, new: Path, build_key: str) -> bool:
    """A finished build of the same inputs in `previous`, judged by other rules:
    its files linked into `new`, to be judged again without building."""
    stamp = read_stamp(previous / "stamp.json")
    if not stamp or stamp.get("build_key") != build_key:
        return False
    log(f"{previous} holds the build of these inputs, judged by other rules: judging it again")
    for f in previous.iterdir():
        if f.name == "stamp.json":
            continue
        if f.is_dir():
            shutil.copytree(f, new / f.name, copy_function=os.link, dirs_exist_ok=True)
        else:
            os.link(f, new / f.name)
    write_atomic(new / BUILT, json.dumps({"build_seconds": stamp["build_seconds"]}) + "\n")
    return True


def release_build(dsc: Path, kind: str, build_env: dict, new: Path, previous: Path, build_key: str) -> dict:
    tree, _ = assembled_tree()  # the build root is made from its Build-Depends
    root = Root("build", tree)
    built = new / BUILT
    if built.is_file() or take_over_build(previous, new, build_key):
        seconds = json.loads(built.read_text())["build_seconds"]
        log(f"the clean build of {dsc.name} finished in an earlier run ({seconds} s); "
            "resuming at its checks")
    else:
        t0 = time.monotonic()
        clean_build(root, dsc, kind, build_env, new)
        seconds = round(time.monotonic() - t0)
        write_atomic(built, json.dumps({"build_seconds": seconds}) + "\n")
    explained = check_log(new)
    lto_explained = check_lto_warnings(new)
    check_counts_fit(new, build_env)
    changes = check_changes(root, new)
    files = sorted(f.name for f in new.iterdir() if f.suffix in (".deb", ".changes", ".buildinfo", ".dsc"))
    log(f"release build of {dsc.name} in {seconds} s, blhc and lintian clean: {', '.join(files)}")
    built.unlink()
    return {"dsc": dsc.name, "profile": kind, **build_env, "build_seconds": seconds, "changes": changes,
            "blhc_explained": explained, "lto_warnings_explained": lto_explained, "files": files,
            "build_key": build_key}


def release_keys(dsc: Path, kind: str, build_env: dict) -> tuple[str, str]:
    """The build's key (what a kept tree resumes and a finished build is
    taken over by) and its checks' key."""
    # dpkg_build holds dpkg-buildpackage's arguments for each profile
    build_key = hash_inputs([("dsc", dsc), ("profile", kind), ("environment", what_is_built(build_env)),
                             ("script", BUILD), ("kept tree", KEPT_TREE_SCRIPT),
                             *code_inputs("cephperf.packaging.dpkg_build")])
    # what only the checks read, this stage's code among them (blhc's and the
    # LTO warnings' readers, the counts' and .changes' checks): a change
    # re-judges the build, it does not redo it
    checks_key = hash_inputs([("lintian", LINTIAN), ("blhc", BLHC_RULES), ("lto", LTO_RULES),
                              *code_inputs(__name__)])
    return build_key, checks_key


def built_release(dsc: Path | None, kind: str, environ: dict, jobs: int | None, out: Path) -> Path:
    """`out` holding the clean build of `dsc` (default: ci/build-debs --source-only's)
    under environ's DEB_BUILD_OPTIONS and DEB_BUILD_PROFILES, building it unless
    current."""
    dsc = (dsc or default_dsc()).resolve()
    if not dsc.is_file():
        raise StageError(f"{dsc}: no such source package", EXIT_ERROR)
    build_env = build_environment(environ, kind, jobs)
    pgo.require_counts(load_pins(), build_env["DEB_BUILD_PROFILES"])
    # the .dsc holds the checksums of every file it names
    build_key, checks_key = release_keys(dsc, kind, build_env)
    key = hash_inputs([("build", build_key), ("checks", checks_key)])
    produce(out, key, lambda new: release_build(dsc, kind, build_env, new, out, build_key),
            resumable=True, resume_key=build_key)
    return out
