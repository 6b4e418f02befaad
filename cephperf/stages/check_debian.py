"""ci/check-debian: has Debian moved past the revision we build on?

  ci/check-debian [--out DIR]

Reads the Sources indexes of the pinned suite and its -updates and -security
suites (trixie, trixie-updates, trixie-security), through the same private apt
configuration the fetch uses: the host's own Debian mirrors re-pointed at the
suite, nothing of the host's apt state touched, no mirror named here.

When Debian has a revision of the pinned source package newer than the pin
(a point release or a security upload), the check fails: our packages'
version, 18.2.7+ds-1+deb13u1+perfN, sorts below Debian's +deb13u2, so apt on
our users' machines would replace our build with Debian's at the next upgrade,
silently. The message names both versions, where Debian's is, and the rebase
steps (docs/apt-repository.md, "When Debian moves").

Exit 0: the pin is Debian's newest. 1: Debian is newer. 2: could not check.
Writes DIR/result.json (default build/reports/check-debian).
"""
import argparse
import json
from pathlib import Path

from cephperf import paths
from cephperf.packaging.archive import PrivateApt
from cephperf.common import (StageError, EXIT_ERROR, EXIT_FAIL, load_pins, log, main_wrapper, newest_first,
                             version_newer, write_atomic)


def debian_versions(apt: PrivateApt, package: str) -> list[dict]:
    """Every version of the source package the indexes list: {version, directory, files}."""
    out = []
    for st in apt.source_stanzas(package):
        if st.get("package") == package and st.get("version"):
            files = [line.split()[2] for line in st.get("checksums-sha256", "").splitlines() if len(line.split()) == 3]
            out.append({"version": st["version"], "directory": st.get("directory", ""), "files": files})
    return out


def newest(versions: list[dict]) -> dict:
    top = newest_first(v["version"] for v in versions)[0]
    return next(v for v in versions if v["version"] == top)


def rebase_steps(pins: dict, theirs: dict) -> str:
    return (f"Debian's {pins['debian']['source']} {theirs['version']} (in {theirs['directory'] or 'the archive'}) is "
            f"newer than our pin {pins['debian']['version']}: apt would replace our {pins['ours']['version']} "
            f"with it. Rebase:\n"
            f"  1. cmake/pins.toml: [debian] version = \"{theirs['version']}\"; the [[files]] entries' name, sha256 "
            f"and size from its Sources stanza (`apt-cache showsrc` lists them: {', '.join(theirs['files'])});\n"
            f"  2. [ours] version = \"{theirs['version']}+perf1\";\n"
            f"  3. ci/source: a patch of ours that no longer applies is named with its hunk; refresh it with quilt;\n"
            f"  4. debian/changelog of our delta: a new entry; then ci/release.\n"
            f"Until then, users who must keep our build pin it (docs/apt-repository.md, \"Keeping our build until it is rebased\").")


def execute():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=paths.reports("check-debian"))
    args = p.parse_args()
    pins = load_pins()
    package, ours = pins["debian"]["source"], pins["debian"]["version"]
    apt = PrivateApt(pins["debian"]["suite"])
    suites = [e["suite"] for e in apt.entries]
    log(f"reading the Sources indexes of {', '.join(dict.fromkeys(suites))}")
    try:
        apt.update()
        versions = debian_versions(apt, package)
    except StageError as e:
        raise StageError(f"cannot tell whether Debian has moved: {e}", EXIT_ERROR)
    if not versions:
        raise StageError(f"no {package} source package in the Sources indexes of {', '.join(suites)}: "
                         "cannot tell whether Debian has moved", EXIT_ERROR)
    theirs = newest(versions)
    moved = version_newer(theirs["version"], ours)
    result = {"package": package, "pinned": ours, "debian_newest": theirs["version"], "moved": moved,
              "suites": suites, "versions": sorted({v["version"] for v in versions})}
    args.out.mkdir(parents=True, exist_ok=True)
    write_atomic(args.out / "result.json", json.dumps(result, indent=2) + "\n")
    if moved:
        print(f"check-debian: FAIL\n{rebase_steps(pins, theirs)}")
        return EXIT_FAIL
    print(f"check-debian: PASS: Debian's newest {package} is {theirs['version']}, our pin is {ours}")
    return 0


def main():
    main_wrapper(execute)
