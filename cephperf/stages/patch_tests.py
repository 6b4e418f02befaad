"""ci/patch-tests: the patch series at patch level, in the build root, in minutes.

  1. configure the assembled tree (cmake/osd-minimal.cmake, Ninja) in a
     throwaway overlay and generate the options code (`ninja
     legacy-option-headers`), which checks every option a patch adds;
  2. compile every translation unit the series touches, each with the compile
     command the configured tree gives it (-fsyntax-only: a type error fails,
     code generation is the package build's job);
  3. build each unit test of patches/unit-tests.toml against Debian's stock
     libceph-common of the pinned version (the patched unit under test linked
     into the test), and run it.

Exit 0 when everything compiles and every test passes, 1 when one does not
(the report names the file and the first error), 2 when the stage could not
run. Reports: build/reports/patch-tests/{report.md,report.json}, logs beside them.
"""
import argparse
import json
import re
import time
from pathlib import Path

from cephperf import paths
from cephperf.common import EXIT_ERROR, StageError, hash_inputs, load_pins, load_toml, log, main_wrapper, rmtree, write_atomic
from cephperf.imports import code_inputs
from cephperf.packaging.roots import Root
from cephperf.packaging.series import APPLIED_UPSTREAM_MARK, parse_series
from cephperf.packaging.source_tree import assembled_tree
from cephperf.stage import produce

SCRIPT = paths.RUNTIME / "scripts" / "patch-tests.sh"
HELPER = paths.RUNTIME / "patch_tests_helper.py"
# Linked into a test whose patch adds options (options_table = true in unit-tests.toml).
OPTIONS_TABLE = paths.TEST_SUPPORT / "options_table.cc"

# Ceph's unit-test main and what it needs that libceph-common does not export
# (upstream links the static `global` library and the erasure-code registry).
TEST_SUPPORT = ["src/test/unit.cc", "src/global/global_init.cc", "src/global/pidfile.cc",
                "src/global/signal_handler.cc", "src/erasure-code/ErasureCodePlugin.cc"]


def touched_translation_units(patches_dir: Path) -> list[str]:
    """The .cc files the applied patches change (ours marked applied-upstream are not applied)."""
    files = []
    for name, note in parse_series(patches_dir / "series"):
        if note == APPLIED_UPSTREAM_MARK:
            continue
        for line in (patches_dir / name).read_text().splitlines():
            m = re.match(r"^\+\+\+ b/(\S+\.cc)$", line)
            if m and m.group(1) not in files:
                files.append(m.group(1))
    return files


def stock_libceph_common(version: str) -> Path:
    """Debian's libceph-common.so.2 of the pinned version (Debian ships it in librados2)."""
    from cephperf.packaging.archive import PrivateApt, unpack_deb
    dest = paths.stock_library_dir(version)
    lib = dest / "root" / "usr" / "lib" / "x86_64-linux-gnu" / "ceph" / "libceph-common.so.2"
    if lib.exists():
        return lib
    rmtree(dest)
    apt = PrivateApt("trixie", kind="deb")
    apt.update()
    [deb] = apt.download([f"librados2={version}"], dest / "debs")
    unpack_deb(deb, dest / "root.new").rename(dest / "root")
    if not lib.exists():
        raise StageError(f"{deb.name} has no {lib.relative_to(dest / 'root')}", EXIT_ERROR)
    return lib


def render(res: dict, seconds: float) -> str:
    lines = [f"# Patch-level checks ({seconds:.0f} s)", "",
             f"Options code generated from the patched option definitions: "
             f"{'ok' if res['options_ok'] else 'FAILED (options.log)'}", "",
             "| translation unit | result | seconds |", "|---|---|---|"]
    for c in res["compiles"]:
        lines.append(f"| {c['file']} | {'ok' if c['rc'] == 0 else c['rc'] if isinstance(c['rc'], str) else 'FAILED (' + c['log'] + ')'} | {c.get('seconds', '')} |")
    lines += ["", "| unit test | patch | result | build s | run s |", "|---|---|---|---|---|"]
    for t in res["tests"]:
        lines.append(f"| {t['name']} | {t['patch']} | {'pass' if t['rc'] == 0 else t['rc']} | "
                     f"{t.get('build_seconds', '')} | {t.get('run_seconds', '')} |")
    return "\n".join(lines) + "\n"


def plan_checks(tree: Path) -> dict:
    """What the root side does: the touched units, the tests, the library to link against."""
    tests = [{"name": n, **t} for n, t in load_toml(paths.UNIT_TESTS).items()]
    for t in tests:
        for src in t["sources"]:
            if not (tree / src).exists():
                raise StageError(f"{paths.UNIT_TESTS}: [{t['name']}] lists {src}, which the assembled tree lacks "
                                 f"(is {t['patch']} in patches/series?)", EXIT_ERROR)
    version = load_pins()["debian"]["version"]
    # New test sources are built in step 3, against the stock library.
    return {"touched": [f for f in touched_translation_units(paths.PATCHES) if not f.startswith("src/test/")],
            "tests": tests, "test_support": TEST_SUPPORT, "libceph_common": str(stock_libceph_common(version)),
            "options_table_source": str(OPTIONS_TABLE), "version": version}


def check(tree: Path, out: Path) -> dict:
    """Run the checks in the build root; the report lands in `out`."""
    plan = plan_checks(tree)
    log(f"{len(plan['touched'])} translation unit(s) to compile, {len(plan['tests'])} unit test(s); "
        f"linking against Debian's libceph-common {plan['version']}")
    t0 = time.monotonic()
    with open(out / "stage.log", "w") as logf:
        rc = Root("build", tree).run(["bash", str(SCRIPT)], cwd=tree, scratch=[tree], stdout=logf,
                                     env={"OUT": str(out), "PLAN": json.dumps(plan), "MINIMAL": str(paths.OSD_MINIMAL)})
    seconds = time.monotonic() - t0
    if not (out / "results.json").exists():
        raise StageError(f"the checks did not run (exit {rc}); see {out / 'stage.log'} and {out / 'configure.log'}",
                         EXIT_ERROR)
    res = json.loads((out / "results.json").read_text())
    ok = (res["options_ok"] and all(c["rc"] == 0 for c in res["compiles"] if c["log"])
          and all(t["rc"] == 0 for t in res["tests"]))
    write_atomic(out / "report.md", render(res, seconds))
    write_atomic(out / "report.json", json.dumps({"schema": 1, "seconds": round(seconds, 1), **res}, indent=2) + "\n")
    for c in res["compiles"]:
        if c["log"] and c["rc"] != 0:
            first = next((ln for ln in (out / c["log"]).read_text(errors="replace").splitlines() if "error" in ln), "")
            log(f"{c['file']}: {first}")
    return {"ok": ok, "seconds": round(seconds, 1)}


def execute():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--force", action="store_true", help="run even if the last run with these inputs passed")
    args = p.parse_args()
    tree, tree_key = assembled_tree()
    out = paths.reports("patch-tests")
    key = hash_inputs([("tree", tree_key), *code_inputs(__name__), ("script", SCRIPT), ("helper", HELPER),
                       ("tests", paths.UNIT_TESTS), ("minimal", paths.OSD_MINIMAL), ("options_table", OPTIONS_TABLE),
                       ("rocksdb-configure", SCRIPT.with_name("rocksdb-configure.sh"))])
    # a failed run keeps its report (stamped not ok) and is re-run next time
    stamp = produce(out, key, lambda new: check(tree, new), valid=lambda st: st.get("ok"), force=args.force,
                    keep_failed=True)
    print((out / "report.md").read_text())
    print("patch-tests: " + ("OK" if stamp["ok"] else f"FAILED: see {out}"))
    return 0 if stamp["ok"] else 1


def main():
    main_wrapper(execute)
