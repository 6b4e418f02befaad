"""ci/release: the main job. Runs every stage of cmake/pipeline.toml in order,
stops at the first that fails and names it. A re-run after an interrupt
resumes: the long stages (source, buildroot, source-package, build-release,
publish-repo) skip their work when their inputs are unchanged, and this job
skips a check stage (the audit, the node checks, the storage tests, the
upgrade test, the gate) that already passed with the same arguments on the
same inputs with the same code.

  --profile osd-only (default): ceph-osd + ceph-fuse (+ -dbg) over Debian's set
  --profile full:               the whole drop-in set, many hours
  --stage NAME:                 only that stage, as the release runs it (the
                                CMake targets of the stages run this)

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

from cephperf import pipeline
from cephperf.common import load_pins, log, main_wrapper
from cephperf.packaging import pgo
from cephperf.stage import produce


class StageFailed(Exception):
    """A check stage's program failed: nothing of it is recorded as passed."""

    def __init__(self, code: int):
        super().__init__(f"exit {code}")
        self.code = code


def run_step(step: pipeline.Step) -> int:
    """One stage; its program's exit code. A check stage runs through
    cephperf.stage.produce, which skips it when its record (build/reports/
    release/NAME/stamp.json) holds its key, and records a pass only."""
    if step.covered is None:
        return subprocess.run(step.command).returncode
    ran = []

    def make(new: Path) -> dict:
        ran.append(step.name)
        t0 = time.monotonic()
        rc = subprocess.run(step.command).returncode
        if rc != 0:
            raise StageFailed(rc)
        return {"stage": step.name, "command": step.command, "seconds": round(time.monotonic() - t0)}

    try:
        produce(step.record, step.key(), make)
    except StageFailed as e:
        return e.code
    if not ran:
        log(f"stage {step.name}: passed before with the same arguments, inputs and code, skipped"
            + (f" (its report: {step.out})" if step.out else ""))
    return 0


def run_steps(chain: list[pipeline.Step]) -> int:
    """Each stage in turn; the exit code of the first that fails, unchanged
    (the gate's 1 is a regression, its 2 a gate that could not run)."""
    t_all = time.monotonic()
    for step in chain:
        log(f"stage {step.name}: starting")
        t0 = time.monotonic()
        rc = run_step(step)
        if rc != 0:
            print(f"release: FAILED at stage {step.name} (exit {rc}); fix it and re-run ci/release to resume")
            return rc
        log(f"stage {step.name}: done in {time.monotonic() - t0:.0f} s")
    print(f"release: all stages passed in {time.monotonic() - t_all:.0f} s")
    return 0


def execute():
    chain = pipeline.load()
    description = __doc__ + "\nThe stages, from cmake/pipeline.toml:\n" + "\n".join(
        f"  {s.name:17} {s.what}" for s in chain)
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--profile", choices=["osd-only", "full"], default="osd-only")
    p.add_argument("--stage", choices=[s.name for s in chain], metavar="NAME",
                   help="run only this stage, as the release runs it")
    p.add_argument("release_args", nargs="*", metavar="-- GATE-ARGS", help="passed to bench/gate")
    args = p.parse_args()
    steps = pipeline.steps(args.profile, tuple(args.release_args))
    if args.stage:
        rc = run_step(next(s for s in steps if s.name == args.stage))
        if rc != 0:
            print(f"release: stage {args.stage} FAILED (exit {rc})")
        return rc
    # before any stage: a release with PGO (the default) and no counts of these sources stops here
    pgo.require_counts(load_pins(), os.environ.get("DEB_BUILD_PROFILES", ""))
    return run_steps(steps)


def main():
    main_wrapper(execute)
