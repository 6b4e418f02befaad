"""ci/pgo-train: the training counts of profile-guided optimisation (pkg.ceph.pgo).

  ci/pgo-train [--dsc FILE] [--jobs N] [--pin]

1. The instrumented build: ceph-osd alone, built from the source package
   (default: ci/build-debs --source-only's) as ci/build-osd --release builds
   it (the release's own configure at the release's path, then make's
   ceph-osd target), under DEB_BUILD_PROFILES="pkg.ceph.lto
   pkg.ceph.pgo-generate" (and the osd-only profile), into
   $CEPH_PERF_CACHE/builds/pgo-generate/out. Only ceph-osd runs in the
   training, and it links the code statically, so its counts are all there
   are: a build of the whole package would write the same (+perf11's counts
   were the first made this way). Never released: ci/audit-flags fails a
   binary compiled so.
2. The training: bench/pgo-training.toml's workloads, the gate's profiles,
   each on a fresh one-OSD cluster with that ceph-osd installed over Debian's
   stock packages. Every OSD adds its counts when it exits.
3. The counts packed into $CEPH_PERF_CACHE/builds/pgo-train/out/
   pgo-profile.tar.xz (byte for byte the same for the same counts), with
   stamp.json and pin.toml, the table cmake/pgo.toml needs; --pin writes it
   there and copies the archive to cmake/pgo-profile.tar.xz, both to
   commit. ci/source then carries the archive in the source package, and a
   build under pkg.ceph.pgo uses it.

Why a stage, not training inside dpkg-buildpackage (as Debian's python3.x
does): the training needs a running cluster, which a buildd's chroot does
not give; and counts pinned by sha256 keep the release build reproducible.
Exit 0 when the counts were made, 1 when a training round failed or wrote
no counts, 2 when it could not run.
"""
import argparse
import os
import shutil
import time
from pathlib import Path

from cephperf import paths
from cephperf.bench.layouts import DEFAULT as DEFAULT_LAYOUT, load_layout
from cephperf.bench.rounds import load_profile, merge_conf, parse_source, round_spec, run_node
from cephperf.common import (EXIT_ERROR, EXIT_FAIL, StageError, hash_inputs, load_pins, load_toml, log,
                             main_wrapper, rmtree, write_atomic)
from cephperf.imports import code_inputs
from cephperf.packaging import pgo
from cephperf.packaging.changelog import changelog_epoch
from cephperf.packaging.release_osd import release_equivalent_osd
from cephperf.stage import produce

# The instrumented build compiles as the release does, with pkg.ceph.lto:
# -flto changes some functions' control flow in the compile step, on which
# GCC keys their counts (debian/rules then links it without LTO and builds
# it without debug information, and leaves ccache on).
INSTRUMENTED_PROFILES = "pkg.ceph.lto pkg.ceph.pgo-generate"
# Where each training OSD writes its counts, under GCOV_PREFIX: the
# directory debian/rules compiles in (-fprofile-generate=).
COUNTS_DIR_IN_BUILD = "var/lib/ceph-perf/pgo"
# An instrumented OSD is slower; a second without a completed op is no stall yet.
STALL_SECONDS = 60


def instrumented_build(dsc: Path | None, jobs: int | None) -> Path:
    # the release's DEB_BUILD_OPTIONS, so the configure is the release's
    environ = {**os.environ, "DEB_BUILD_PROFILES": INSTRUMENTED_PROFILES}
    return release_equivalent_osd(dsc, environ, jobs, paths.pgo_generate_out())


def train(instrumented: Path, training: dict, counts: Path) -> list[dict]:
    """Every workload on a fresh cluster; the OSDs' counts accumulate under `counts`."""
    side = parse_source(str(instrumented))
    rounds = []
    for w in training["workload"]:
        prof = load_profile(w["profile"], "defaults")
        layout = load_layout(w.get("layout", DEFAULT_LAYOUT))
        conf = merge_conf(prof["conf"], training.get("conf", {}))
        state = paths.bench_state(f"pgo-train-{prof['name']}-{layout['name']}")
        spec = round_spec(state, prof, side, conf, w.get("seconds", training["seconds"]), STALL_SECONDS, False,
                          layout=layout)
        spec.osd_environment = {"GCOV_PREFIX": str(counts)}
        t0 = time.monotonic()
        rec = run_node("round", spec, [side["bind"], str(counts)])
        if not rec.get("ok"):
            raise StageError(f"training round {prof['name']} failed: {rec.get('error')}; its logs are under {state}",
                             EXIT_FAIL)
        rmtree(state)
        done = {"profile": prof["name"], "layout": layout["name"], "ops": rec.get("ops"), "iops": rec.get("iops"),
                "seconds": round(time.monotonic() - t0)}
        log(f"trained on {prof['name']} ({layout['name']}): {done['ops']} ops in {done['seconds']} s")
        rounds.append(done)
    return rounds


def check_counts(found: list[Path], training: dict) -> None:
    names = {f.name for f in found}
    missing = [n for n in training.get("expect", {}).get("counts_files", [])
               if not any(name.endswith(n) for name in names)]
    if not found or missing:
        raise StageError(f"the instrumented OSD wrote {len(found)} counts file(s), none ending in "
                         f"{', '.join(missing) or 'anything'} ({paths.PGO_TRAINING} [expect]): it ran without "
                         "instrumentation, or ended without its exit handlers (osd_fast_shutdown)", EXIT_FAIL)


def make_counts(instrumented: Path, training: dict, trained_on: str, new: Path) -> dict:
    counts = new / "counts"
    counts.mkdir()
    rounds = train(instrumented, training, counts)
    found = pgo.counts_files(counts / COUNTS_DIR_IN_BUILD)
    check_counts(found, training)
    epoch = changelog_epoch(paths.DEBIAN / "changelog")
    packed = pgo.pack(found, new / pgo.ARCHIVE, epoch)
    shutil.rmtree(counts)
    write_atomic(new / "pin.toml", pgo.pin_text(packed, trained_on))
    log(f"{packed['counts_files']} counts files ({packed['counts_bytes']} bytes) packed into "
        f"{pgo.ARCHIVE}: {packed['size']} bytes, sha256 {packed['sha256']}")
    return {"instrumented": str(instrumented), "rounds": rounds, "trained_on": trained_on, **packed}


def execute():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dsc", type=Path, help="the source package (default: ci/build-debs --source-only's)")
    p.add_argument("--jobs", type=int, help="parallel jobs of the instrumented build")
    p.add_argument("--pin", action="store_true", help=f"write the new counts' pin to {paths.PGO_PIN}, the counts beside it")
    args = p.parse_args()
    training = load_toml(paths.PGO_TRAINING)
    if not training.get("workload"):
        raise StageError(f"{paths.PGO_TRAINING}: no [[workload]]", EXIT_ERROR)
    instrumented = instrumented_build(args.dsc, args.jobs)
    trained_on = pgo.compiled_sources_key(load_pins())
    key = hash_inputs([("instrumented", instrumented / "stamp.json"), ("training", paths.PGO_TRAINING),
                       ("trained_on", trained_on), *code_inputs(__name__)])
    out = paths.pgo_train_out()
    stamp = produce(out, key, lambda new: make_counts(instrumented, training, trained_on, new))
    if args.pin:
        # the archive first: a pin never names counts that are not in place
        write_atomic(paths.PGO_COUNTS, (out / pgo.ARCHIVE).read_bytes())
        write_atomic(paths.PGO_PIN, (out / "pin.toml").read_text())
        log(f"pinned in {paths.PGO_PIN} ({paths.PGO_COUNTS.name} beside it): sha256 {stamp['sha256']}; "
            "commit both; ci/source now carries the counts")
    else:
        log(f"counts in {out / pgo.ARCHIVE}; pin them with ci/pgo-train --pin")
    print(out)
    return 0


def main():
    main_wrapper(execute)
