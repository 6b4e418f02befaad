"""ci/release: the main job. Runs every stage in order, stops at the first
that fails and names it. A re-run after an interrupt resumes: the long stages
(source, buildroot, source-package, build-release, publish-repo) skip their work when their
inputs are unchanged, and this job skips a check stage (audit, upgrade test,
gate) that already passed on the same packages with the same tools.

  check-debian -> source -> buildroot -> check-flags -> patch-tests
         -> source-package -> build-release (the .dsc, in a clean root; blhc, LTO's ODR warnings, lintian)
         -> audit-flags -> io-mock-test -> onode-cache-test
         -> store-test (upstream's store_test.cc, built with the release)
         -> rados-model-test (ceph_test_rados, omap with DeleteRange, fsck --deep)
         -> publish-repo -> upgrade-test
         -> gate (candidate vs Debian stock)

  --profile osd-only (default): ceph-osd + ceph-fuse (+ -dbg) over Debian's set
  --profile full:               the whole drop-in set, many hours

The packages are built with LTO and PGO unless DEB_BUILD_PROFILES turns them
off (pkg.ceph.nolto, pkg.ceph.nopgo); without training counts of these
sources the job stops at once, saying how to retrain (ci/pgo-train --pin).

Arguments after `--` go to the gate stage's bench/gate, e.g. `-- --profile
4m-write` or `-- --candidate-conf FILE` (gate the release under your own
settings). They are part of that stage's up-to-date key, and such a gate
writes its report beside the default one, to build/reports/gate-release-<key>/.

Exit: 0 every stage passed; otherwise the failing stage's own exit code, so
the gate's 1 (a regression) and 2 (it could not run) reach the caller. (A
make or ninja target in between would turn both into its own failure code.)
"""
import argparse
import os
import subprocess
import time
from pathlib import Path

from cephperf import paths
from cephperf.packaging import pgo, profiles
from cephperf.common import hash_inputs, load_pins, log, main_wrapper, read_stamp, write_stamp

CI = paths.REPO / "ci"
PACKAGE = paths.REPO / "cephperf"


def flag_cases(build_profiles: str) -> list[str]:
    """ci/check-flags' cases for the release's build profiles: the defaults,
    and the compile commands of the release as it is built (LTO, and PGO
    unless the profiles turn them off)."""
    cases = ["a", "b", "c"]
    if profiles.lto(build_profiles):
        cases.append("a-lto-pgo" if profiles.pgo(build_profiles) else "a-lto")
    return cases


def stages(profile: str, ci: Path = CI, bench: Path = paths.BENCH, gate_args: tuple[str, ...] = (),
           build_profiles: str | None = None):
    """(name, command, inputs): a check stage with inputs is skipped when it
    passed before on the same inputs; the others skip their own work.
    `ci` and `bench` hold the programs (tests put stand-ins there)."""
    debs = paths.release_out(profile)
    if build_profiles is None:
        build_profiles = os.environ.get("DEB_BUILD_PROFILES", "")
    node_side = PACKAGE / "runtime"
    gate_out = paths.reports("gate-release")
    gate_key = []
    if gate_args:
        # another gate's verdict must neither reuse nor overwrite the default one
        gate_key = [" ".join(gate_args)]
        gate_out = paths.reports("gate-release-" + hash_inputs([("gate-args", gate_key[0])])[:12])
    return [
        # first: packages built on a pin Debian has moved past would be replaced by apt
        ("check-debian", [ci / "check-debian"], None),
        ("source", [ci / "source"], None),
        ("buildroot", [ci / "buildroot", "create"], None),
        ("check-flags", [ci / "check-flags", *flag_cases(build_profiles)], None),
        ("patch-tests", [ci / "patch-tests"], None),
        # the release is built from the source package, in a clean root
        ("source-package", [ci / "build-debs", "--source-only"], None),
        ("build-release", [ci / "build-release", "--profile", profile], None),
        ("audit-flags", [ci / "audit-flags", "--debs", debs, "--out", paths.reports("audit-release")],
         [debs / "stamp.json", PACKAGE / "stages" / "audit_flags.py", PACKAGE / "packaging" / "audit.py",
          PACKAGE / "packaging" / "elf.py", paths.AUDIT_RULES]),
        ("io-mock-test", [ci / "io-mock-test", "--debs", debs],
         [debs / "stamp.json", PACKAGE / "stages" / "node_check.py", PACKAGE / "node_checks.py", paths.NODE_CHECKS, PACKAGE / "nodes.py", node_side]),
        ("onode-cache-test", [ci / "onode-cache-test", "--debs", debs],
         [debs / "stamp.json", PACKAGE / "stages" / "node_check.py", PACKAGE / "node_checks.py", paths.NODE_CHECKS, PACKAGE / "nodes.py", node_side]),
        # upstream's storage tests, on the release's own code: store_test.cc
        # built with the release, and teuthology's model-checked RADOS workload
        ("store-test", [ci / "store-test", "--tests", debs / "tests"],
         [debs / "stamp.json", PACKAGE / "stages" / "store_test.py", paths.CMAKE / "store-test.toml", node_side]),
        ("rados-model-test", [ci / "rados-model-test", "--debs", debs],
         [debs / "stamp.json", PACKAGE / "stages" / "node_check.py", PACKAGE / "node_checks.py", paths.NODE_CHECKS, paths.BENCH / "rados-model.toml",
          PACKAGE / "nodes.py", node_side]),
        ("publish-repo", [ci / "publish-repo", "--debs", debs], None),
        ("upgrade-test", [ci / "upgrade-test"],
         [debs / "stamp.json", PACKAGE / "stages" / "upgrade_test.py", PACKAGE / "nodes.py", node_side]),
        ("gate", [bench / "gate", "--baseline", "debian", "--candidate", debs, "--out", gate_out, *gate_args],
         [debs / "stamp.json", paths.BENCH, PACKAGE / "bench", PACKAGE / "stages" / "gate.py", node_side, *gate_key]),
    ]


def execute():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--profile", choices=["osd-only", "full"], default="osd-only")
    p.add_argument("gate_args", nargs="*", metavar="-- GATE-ARGS", help="passed to bench/gate")
    args = p.parse_args()
    # before any stage: a release with PGO (the default) and no counts of these sources stops here
    pgo.require_counts(load_pins(), os.environ.get("DEB_BUILD_PROFILES", ""))
    return run_stages(stages(args.profile, gate_args=tuple(args.gate_args)))


def run_stages(chain: list) -> int:
    """Each stage in turn; the exit code of the first that fails, unchanged
    (the gate's 1 is a regression, its 2 a gate that could not run)."""
    t_all = time.monotonic()
    for name, cmd, check_inputs in chain:
        passed = paths.reports("release") / f"{name}.json"
        key = None
        if check_inputs is not None:
            # a string among the inputs (the gate's extra arguments) counts as itself
            key = hash_inputs([(str(p), p) for p in check_inputs if isinstance(p, str) or Path(p).exists()])
            stamp = read_stamp(passed)
            if stamp and stamp.get("inputs") == key:
                log(f"stage {name}: passed before on the same packages and tools, skipped")
                continue
        log(f"stage {name}: starting")
        t0 = time.monotonic()
        rc = subprocess.run([str(c) for c in cmd]).returncode
        if rc != 0:
            print(f"release: FAILED at stage {name} (exit {rc}); fix it and re-run ci/release to resume")
            return rc
        if key is not None:
            write_stamp(passed, inputs=key, seconds=round(time.monotonic() - t0))
        log(f"stage {name}: done in {time.monotonic() - t0:.0f} s")
    print(f"release: all stages passed in {time.monotonic() - t_all:.0f} s")
    return 0



def main():
    main_wrapper(execute)
