"""ci/piuparts: Debian's install, upgrade and removal test of the package set.

  ci/piuparts [--debs DIR | --stock] [--packages LIST] [--out DIR]

Runs piuparts (trixie's, in the piuparts root of cmake/roots.toml; as root,
plain chroot) on the release's osd-only package set, ceph-osd, ceph-fuse and
their -dbg, as .deb files from DIR (default: the osd-only release build's
out/), over a minimal trixie (the piuparts-base root, piuparts' --basetgz)
whose apt sources are the archive entries of the host's apt configuration:
  1. install and purge: the set is installed with its dependencies from the
     archive, removed and purged; no file may be left, lost or changed;
  2. install, upgrade and purge: Debian's version of the same packages
     (18.2.7+ds-1+deb13u1) is installed from the archive, upgraded to the
     files, removed and purged, checked the same way.
--stock tests Debian's own .debs of the pinned version instead (downloaded
once into the cache), which must pass (its upgrade finds that version
installed and changes nothing).
Exit 0 when both tests pass; 1 when piuparts failed, naming the test, the
phase (install, install of the archive's version, upgrade, remove, purge)
and the log's lines; 2 when it could not run (no such packages, the archive
unreachable, the upgrade test skipped).
The report goes to --out (default build/reports/piuparts/): report.md,
report.json and piuparts.log, piuparts' whole log.
"""
import argparse
import json
import time
from pathlib import Path

from cephperf import paths
from cephperf.common import (StageError, EXIT_ERROR, EXIT_FAIL, load_pins, locked, log, main_wrapper, replace_dir,
                             rmtree, write_atomic)
from cephperf.packaging.piuparts import PACKAGE_SET, package_set, run_piuparts, stock_debs
from cephperf.packaging.piuparts_log import judge, render, summary


def execute():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    side = p.add_mutually_exclusive_group()
    side.add_argument("--debs", type=Path, default=paths.release_out("osd-only"), metavar="DIR",
                      help="the packages' directory (default: the osd-only release build's out/)")
    side.add_argument("--stock", action="store_true", help="Debian's own packages of the pinned version")
    p.add_argument("--packages", default=",".join(PACKAGE_SET),
                   help=f"the set, comma-separated (default {','.join(PACKAGE_SET)})")
    p.add_argument("--out", type=Path, default=paths.reports("piuparts"), help="report directory")
    args = p.parse_args()
    names = [n for n in args.packages.split(",") if n]
    if not names:
        raise StageError("--packages names no package", EXIT_ERROR)
    debs_dir = stock_debs(load_pins()["debian"]["version"], names) if args.stock else args.debs.resolve()
    debs = package_set(debs_dir, names)
    out = args.out.resolve()
    with locked(out.with_name(f".{out.name}.lock")):
        new = out.with_name(f".{out.name}.new")
        rmtree(new)
        new.mkdir(parents=True)
        t0 = time.monotonic()
        try:
            code = run_piuparts(debs, new / "piuparts.log")
        except BaseException:
            rmtree(new)  # interrupted: no half-written report
            raise
        seconds = time.monotonic() - t0
        result = judge((new / "piuparts.log").read_text(errors="replace"), code)
        date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        packages = [{"package": d.package, "version": d.version, "file": d.path.name} for d in debs]
        write_atomic(new / "report.json", json.dumps({**result, "packages": packages, "seconds": round(seconds),
                                                      "date": date}, indent=2) + "\n")
        write_atomic(new / "report.md", render(result, packages, seconds, date))
        replace_dir(new, out)
    if result["verdict"] == "pass":
        log(f"PASS in {seconds:.0f} s: {summary(result)} (report: {out}/report.md)")
        return 0
    raise StageError(f"{summary(result)}\n(whole log: {out}/piuparts.log)",
                     EXIT_FAIL if result["verdict"] == "fail" else EXIT_ERROR)


def main():
    main_wrapper(execute)
