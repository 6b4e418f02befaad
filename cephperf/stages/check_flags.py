"""ci/check-flags: what the compilers would really get, read at configure level.

Configures the assembled tree inside the build root (no compiling) and reads
the compile commands the build would run, from compile_commands.json of Ceph
and of the bundled RocksDB (whose own configure step is run for this). Our
own CMake variables are never consulted.

Cases:
  a          debian/rules override_dh_auto_configure, set up by
             dpkg-buildpackage as the release's package build would be
             (build profile pkg.ceph.osd-only), with LTO and PGO off
             (pkg.ceph.nolto); also the link commands of
             ceph-osd and ceph-fuse: Ceph's common code linked statically,
             never libceph-common.so
  b          plain cmake, RelWithDebInfo, minimal tree
  c          negative control: BuildRocksDB.cmake in its pre-fix form
             (cephperf/packaging/controls/rocksdb-prefix-flags.patch), configured
             debhelper-style (None plus dpkg-buildflags); must FAIL
  a-debian   negative control: case a with Debian's rules as shipped (our
             debian/delta/release-flags.patch reverted, none of our
             optimisations, no osd-only profile); must FAIL on -DNDEBUG
  a-lto      case a with LTO (pkg.ceph.nopgo): also -flto and
             -fno-semantic-interposition in every compile command
  a-lto-pgo  the release as built by default, LTO and PGO: also
             -fprofile-use in every compile command, and no -fprofile-generate
  a-pgo-generate  negative control: case a under pkg.ceph.pgo-generate (the
             instrumented build ci/pgo-train runs); must FAIL on
             -fprofile-generate, which no release may carry

Default: a b c. Exit 0 when every positive case passes and every negative
control fails for the expected reason; 1 otherwise; 2 if a case could not run.
Reports go to build/reports/flags/.
"""
import argparse
import json
import time
from pathlib import Path

from cephperf import paths
from cephperf.common import EXIT_ERROR, hash_inputs, log, main_wrapper, write_atomic
from cephperf.imports import code_inputs
from cephperf.packaging.flags import (STAGED_TARGETS, judge_case, render_markdown,
                                      staged_runpath_problems, static_common_problems)
from cephperf.packaging.roots import Root
from cephperf.packaging.source_tree import assembled_tree
from cephperf.stage import produce

SCRIPT = paths.RUNTIME / "scripts" / "check-flags-case.sh"
RULES_DELTA = paths.DEBIAN / "delta" / "release-flags.patch"
EXPECT_FAIL = {"c", "a-debian", "a-pgo-generate"}
# The build profiles of the package-build cases: the release's own (osd-only)
# with our optimisations off, with LTO alone, as released (LTO and PGO), the
# instrumented build, and Debian's rules as shipped (its full set, none of
# our optimisations).
PROFILES = {"a": "pkg.ceph.osd-only,pkg.ceph.nolto", "a-lto": "pkg.ceph.osd-only,pkg.ceph.nopgo",
            "a-lto-pgo": "pkg.ceph.osd-only",
            "a-pgo-generate": "pkg.ceph.osd-only,pkg.ceph.pgo-generate", "a-debian": "pkg.ceph.nolto"}
CASES = ("a", "b", "c", "a-debian", "a-lto", "a-lto-pgo", "a-pgo-generate")


def linked_targets(case: str) -> tuple[str, ...]:
    """The binaries whose link commands a case judges: those the osd-only packages ship."""
    return STAGED_TARGETS if "pkg.ceph.osd-only" in PROFILES.get(case, "").split(",") else ()


def run_case(root: Root, tree: Path, case: str, cdir: Path) -> dict:
    """Configure one case in the build root and judge the compile commands it left."""
    cdir.mkdir()
    log(f"case {case}: configuring")
    t0 = time.monotonic()
    with open(cdir / "configure.log", "w") as logf:
        env = {"CASE": case, "OUT": str(cdir), "FIXTURE": str(paths.ROCKSDB_PREFIX_FIXTURE),
               "MINIMAL": str(paths.OSD_MINIMAL), "RULES_DELTA": str(RULES_DELTA),
               "PROFILES": PROFILES.get(case, ""), "LINKED_TARGETS": " ".join(linked_targets(case))}
        rc = root.run(["bash", str(SCRIPT)], cwd=tree, env=env, scratch=[tree], stdout=logf)
    seconds = time.monotonic() - t0
    if rc != 0:
        tail = (cdir / "configure.log").read_text(errors="replace").splitlines()[-15:]
        res = {"case": case, "ran": False, "ok": False,
               "problems": [f"configure failed (exit {rc}); last lines of {cdir / 'configure.log'}:"] + tail}
    else:
        res = judge_case(case, json.loads((cdir / "ceph.json").read_text()),
                         json.loads((cdir / "rocksdb.json").read_text()))
        for target in linked_targets(case):
            link_command = (cdir / f"link-{target}.txt").read_text()
            res["problems"] += staged_runpath_problems(target, link_command)
            res["problems"] += static_common_problems(target, link_command)
        res["ok"] = not res["problems"]
    res.update(seconds=round(seconds, 1), expected="fail" if case in EXPECT_FAIL else "pass")
    log(f"case {case}: {'PASS' if res['ok'] else 'FAIL'} in {seconds:.0f} s (expected {res['expected']})")
    for problem in res["problems"]:
        print(f"  case {case}: {problem}")
    return res


def check(tree: Path, cases: list[str], out: Path) -> dict:
    root = Root("build", tree)
    results = [run_case(root, tree, case, out / case) for case in cases]
    good = all(r["ran"] and r["ok"] == (r["expected"] == "pass") for r in results)
    could_not_run = [r["case"] for r in results if not r["ran"] and r["expected"] == "pass"]
    write_atomic(out / "report.json", json.dumps({"schema": 1, "cases": results}, indent=2) + "\n")
    write_atomic(out / "report.md", render_markdown(results))
    return {"cases": cases, "ok": good, "could_not_run": could_not_run}


def execute():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("cases", nargs="*", metavar="CASE", help=f"{', '.join(CASES)} (default: a b c)")
    p.add_argument("--tree", type=Path, help="assembled tree (default: from ci/source)")
    p.add_argument("--force", action="store_true", help="run even if the last run with these inputs passed")
    args = p.parse_args()
    cases = args.cases or ["a", "b", "c"]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        p.error(f"unknown case(s) {', '.join(unknown)}: choose from {', '.join(CASES)}")
    tree, tree_key = (args.tree, str(args.tree)) if args.tree else assembled_tree()
    out = paths.reports("flags")
    key = hash_inputs([("tree", tree_key), ("cases", " ".join(cases)), *code_inputs(__name__),
                       ("script", SCRIPT), ("buildflags", SCRIPT.with_name("dpkg-buildflags.sh")),
                       ("rocksdb-configure", SCRIPT.with_name("rocksdb-configure.sh")),
                       ("fixture", paths.ROCKSDB_PREFIX_FIXTURE), ("minimal", paths.OSD_MINIMAL)])
    # only a passing run on the assembled tree is worth skipping next time
    stamp = produce(out, key, lambda new: check(tree, cases, new), valid=lambda st: st.get("ok"),
                    force=args.force or args.tree is not None, keep_failed=True)
    print((out / "report.md").read_text())
    if stamp["could_not_run"]:
        print(f"check-flags: could not run case(s) {', '.join(stamp['could_not_run'])}")
        return EXIT_ERROR
    print("check-flags: " + ("OK: positive cases pass, negative controls fail as expected" if stamp["ok"]
                             else "FAILED: see the problems above"))
    return 0 if stamp["ok"] else 1


def main():
    main_wrapper(execute)
