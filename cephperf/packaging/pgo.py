"""Profile-guided optimisation's training counts: how ci/pgo-train packs them
and how ci/source verifies them and carries them in the source package.

GCC writes one counts file (.gcda) per instrumented object when the program
exits, named after the object's path inside the tree (-fprofile-prefix-path),
with '/' turned into '#':
obj-x86_64-linux-gnu#src#osd#CMakeFiles#osd.dir#PrimaryLogPG.cc.gcda. The
build under pkg.ceph.pgo finds them by the same names in the directory its
debian/rules unpacks the archive to.

The counts are an input of the build, like the orig tarball: cmake/pgo.toml
pins the archive's sha256, and the sources it was trained on (the inputs
that shape the compiled code, compiled_sources_key). Unlike the tarballs
they are ours, made by ci/pgo-train, so the pinned archive is committed
beside its pin (cmake/pgo-profile.tar.xz, about 1 MB): a release on a fresh
machine does not repeat the instrumented build and training. ci/source
carries the archive only when both hold, so a build under pkg.ceph.pgo
either uses the counts of exactly these sources or stops, saying what to run.
"""
from __future__ import annotations

import hashlib
import io
import lzma
import tarfile
from pathlib import Path

from .. import paths
from ..common import EXIT_ERROR, EXIT_FAIL, StageError, hash_inputs, load_toml
from .series import quilt_files

ARCHIVE = "pgo-profile.tar.xz"
# Where the source package carries it (debian/rules of pkg.ceph.pgo reads it there).
IN_TREE = Path("debian") / "ceph-perf" / ARCHIVE
COUNTS_SUFFIX = ".gcda"


def compiled_sources_key(pins: dict) -> str:
    """The digest of what shapes the compiled code: upstream's and Debian's
    pinned sources, our patches, our changes to Debian's packaging (the flags)
    and the CMake files debian/rules includes. Not the changelog, the notes
    beside the patches, nor the pin of the counts themselves: counts stay
    valid across those."""
    return hash_inputs([
        ("upstream", repr(sorted(pins["upstream"].items()))), ("debian", repr(sorted(pins["debian"].items()))),
        ("files", repr(sorted((f["role"], f["sha256"]) for f in pins["files"]))),
        *quilt_files(paths.PATCHES), *quilt_files(paths.DEBIAN / "delta"),
        ("guard", paths.RELEASE_GUARD), ("lto-exceptions", paths.LTO_LINK_EXCEPTIONS),
    ])


def counts_files(counts_dir: Path) -> list[Path]:
    return sorted(p for p in counts_dir.rglob(f"*{COUNTS_SUFFIX}") if p.is_file())


def pack(files: list[Path], dest: Path, mtime: int) -> dict:
    """The counts as one archive, byte for byte the same for the same counts:
    flat (their names already say where they belong), sorted, owned by root,
    every mtime the given one."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for f in sorted(files, key=lambda p: p.name):
            info = tarfile.TarInfo(f.name)
            info.size, info.mtime, info.mode = f.stat().st_size, mtime, 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            with open(f, "rb") as fh:
                tar.addfile(info, fh)
    data = lzma.compress(raw.getvalue(), preset=9)
    dest.write_bytes(data)
    return {"file": dest.name, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data),
            "counts_files": len(files), "counts_bytes": sum(f.stat().st_size for f in files)}


def pin_text(packed: dict, trained_on: str) -> str:
    """cmake/pgo.toml for freshly packed counts."""
    return (
        "# The training counts pkg.ceph.pgo builds with (debian/delta/profile-guided-profile.patch).\n"
        "# Written by ci/pgo-train --pin, with the archive beside it (pgo-profile.tar.xz);\n"
        "# ci/source carries the archive in the source package\n"
        "# (debian/ceph-perf/pgo-profile.tar.xz) when its sha256 matches and the\n"
        "# sources it was trained on are these (cephperf/packaging/pgo.py says which inputs).\n"
        "[profile]\n"
        f'file = "{packed["file"]}"\n'
        f'sha256 = "{packed["sha256"]}"\n'
        f'size = {packed["size"]}\n'
        f'trained_on = "{trained_on}"\n'
        "# sha256 of the bench/pgo-training.toml it ran\n"
        f'training = "{hashlib.sha256(paths.PGO_TRAINING.read_bytes()).hexdigest()}"\n'
    )


def pinned() -> dict | None:
    """cmake/pgo.toml's [profile], or None before any training was pinned."""
    if not paths.PGO_PIN.exists():
        return None
    pin = load_toml(paths.PGO_PIN).get("profile")
    if pin is None:
        return None
    missing = [k for k in ("file", "sha256", "size", "trained_on") if k not in pin]
    if missing:
        raise StageError(f"{paths.PGO_PIN}: [profile] lacks {', '.join(missing)}; re-run ci/pgo-train --pin",
                         EXIT_ERROR)
    return pin


def verified_counts(pins: dict) -> tuple[Path | None, str]:
    """The pinned archive (cmake/pgo-profile.tar.xz), verified, or None and
    why not. A file that is there but differs from the pin is an error."""
    pin = pinned()
    if pin is None:
        return None, f"no training counts pinned ({paths.PGO_PIN.name} absent)"
    if pin["trained_on"] != compiled_sources_key(pins):
        return None, (f"the counts pinned in {paths.PGO_PIN} were trained on other sources "
                      "(a patch, a pin or the packaging delta changed since); run ci/pgo-train --pin")
    path = paths.PGO_COUNTS
    if not path.is_file():
        return None, f"{path} is absent (the counts pinned in {paths.PGO_PIN}); run ci/pgo-train --pin"
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != pin["sha256"] or len(data) != pin["size"]:
        raise StageError(f"{path}: sha256 {digest} ({len(data)} bytes), but {paths.PGO_PIN} pins "
                         f"{pin['sha256']} ({pin['size']} bytes): these are not the pinned counts. "
                         "Pin them with ci/pgo-train --pin, or restore the pinned file", EXIT_ERROR)
    return path, f"training counts {pin['sha256'][:12]} carried ({len(data)} bytes)"


def require_counts(pins: dict, build_profiles: str) -> None:
    """A build with PGO (the default, see profiles.py) needs the pinned counts
    of exactly these sources: stop before any building when they are not
    there, saying how to retrain. Never a silent build without them."""
    from .profiles import pgo
    if not pgo(build_profiles):
        return
    counts, why = verified_counts(pins)
    if counts is None:
        raise StageError(f"the release is built with profile-guided optimisation, but {why}. Retrain on these "
                         f"sources: ci/pgo-train --pin (an instrumented build of ceph-osd and the training, "
                         f"about 40 minutes on 2 cores from a cold ccache), commit "
                         f"{paths.PGO_PIN.relative_to(paths.REPO)} and {paths.PGO_COUNTS.relative_to(paths.REPO)}, "
                         f"and run this again; or build without it: "
                         f"DEB_BUILD_PROFILES=pkg.ceph.nopgo", EXIT_FAIL)
