"""ci/audit-flags FILE...: the optimisation flags really compiled into binaries.

FILE is an ELF file, a .deb, or a -dbg/dbgsym .deb. For each ELF with DWARF
(a stripped binary is matched to its debug file by build-id among the inputs),
every compilation unit's DW_AT_producer is read with readelf and the -O levels
are tabled by source area (src/rocksdb, src/os, src/osd, src/msg, ...).

It fails (exit 1) if any Ceph or RocksDB unit was compiled without -O2 or
higher, or if RocksDB shows code that only exists without -DNDEBUG (its sync
points: rocksdb::SyncPoint is compiled in only when NDEBUG is undefined).
It also fails when a binary named in cmake/audit-rules.toml [coverage] shows
fewer compile units in Ceph's areas than its minimum (the audit would have
checked too little: no debug package, or DWARF paths it does not recognise).
Exit 2 when nothing auditable was given, and when no compile unit at all lies
in a Ceph or RocksDB area: "nothing of Ceph's audited" is never a pass.

  --debian PKG   audit Debian trixie's stock PKG with its -dbg package,
                 fetched through the host's configured archive.
  --debs DIR     audit every .deb in DIR (ci/build-debs' out/ directory).
  --rules FILE   the rules (default cmake/audit-rules.toml).
  --profile-use  every Ceph/RocksDB and link-time unit must carry -fprofile-use
                 (a PGO build); implied by --debs DIR when DIR's stamp.json
                 shows a PGO build (DEB_BUILD_PROFILES without pkg.ceph.nopgo,
                 pkg.ceph.nolto or pkg.ceph.pgo-generate).
A unit compiled with -fprofile-generate (pkg.ceph.pgo-generate, the
instrumented build of ci/pgo-train) always fails the audit.
Reports go to build/reports/audit/ (report.md, report.json).
"""
import argparse
import json
import tempfile
from pathlib import Path

from cephperf import paths
from cephperf.common import StageError, EXIT_ERROR, load_toml, main_wrapper, write_atomic
from cephperf.packaging import profiles
from cephperf.packaging.audit import audit_elfs, render_markdown
from cephperf.packaging.elf import collect_elfs


def fetch_debian(pkgs: list[str], dest: Path) -> list[Path]:
    from cephperf.packaging.archive import PrivateApt
    apt = PrivateApt("trixie", kind="deb")
    apt.update()
    return apt.download([n for p in pkgs for n in (p, f"{p}-dbg")], dest)


def built_with_profile(debs: Path) -> bool:
    """Whether a build stage's stamp says its packages were built with the
    training counts (PGO, on unless its DEB_BUILD_PROFILES turn it off)."""
    try:
        stamp = json.loads((debs / "stamp.json").read_text())
    except FileNotFoundError:
        return False
    return profiles.pgo(stamp.get("DEB_BUILD_PROFILES", ""))


def execute():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="*", type=Path)
    p.add_argument("--debian", action="append", default=[], metavar="PKG")
    p.add_argument("--debs", type=Path, metavar="DIR", help="every .deb in DIR (ci/build-debs' out/)")
    p.add_argument("--out", type=Path, default=None, help="report directory (default build/reports/audit)")
    p.add_argument("--rules", type=Path, default=paths.AUDIT_RULES, help="audit rules (default cmake/audit-rules.toml)")
    p.add_argument("--profile-use", action="store_true", help="require -fprofile-use (a PGO build)")
    args = p.parse_args()
    rules = load_toml(args.rules)
    if args.debs:
        found = sorted(args.debs.glob("*.deb"))
        if not found:
            raise StageError(f"--debs {args.debs}: no .deb files there; run ci/build-debs first", EXIT_ERROR)
        args.files += found
        args.profile_use = args.profile_use or built_with_profile(args.debs)
    if not args.files and not args.debian:
        p.error("give ELF files, .deb files, --debs DIR or --debian PKG")
    out = args.out or paths.reports("audit")
    with tempfile.TemporaryDirectory(prefix="audit-") as tmp:
        tmp = Path(tmp)
        files = list(args.files)
        for f in files:
            if not f.exists():
                raise StageError(f"{f}: no such file", EXIT_ERROR)
        if args.debian:
            (tmp / "debs").mkdir()
            files += fetch_debian(args.debian, tmp / "debs")
        elfs = collect_elfs(files, tmp / "x")
        result = audit_elfs(elfs, rules, args.profile_use)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "report.json", json.dumps(result, indent=2) + "\n")
    write_atomic(out / "report.md", render_markdown(result))
    print((out / "report.md").read_text())
    if not result["audited"]:
        print("audit-flags: nothing auditable: no input had DWARF (give the -dbg or dbgsym package too)")
        return EXIT_ERROR
    if not result["ceph_units"]:
        print("audit-flags: nothing of Ceph's audited: no compile unit lies in a Ceph or RocksDB area "
              f"({', '.join(result['areas']) or 'no areas'} seen); give Ceph's binaries with their debug packages")
        return EXIT_ERROR
    print("audit-flags: " + ("PASS" if result["ok"] else "FAIL: " + "; ".join(result["problems"])))
    return 0 if result["ok"] else 1



def main():
    main_wrapper(execute)
