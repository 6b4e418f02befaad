"""The patched source tree: the orig tarball, Debian's debian/, our debian/
delta and our patches, the whole quilt series applied with fuzz 0.

ci/source makes it; every stage that builds or checks the sources asks for
it here (assembled_tree), which assembles it first unless it is current, and
keys its own output on the digest of the tree's inputs. It lives in
build/source/ (paths.source_dir()) with its stamp; a failed or interrupted
assembly leaves the previous tree (or none), never a half-written one.
"""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .. import paths
from ..common import StageError, hash_inputs, load_pins, log, pinned_file, rmtree, run
from ..imports import code_inputs
from ..stage import produce
from . import pgo
from .changelog import changelog_version
from .fetch import obtain
from .series import (APPLIED_UPSTREAM_MARK, apply_series, explain_failure, parse_series, quilt_files,
                     reverse_applies)

@dataclass(frozen=True)
class Sources:
    """Where the tree's parts come from: the pinned tarballs from the cache
    (or from_dir, on an air-gapped host), our patches and our packaging."""
    from_dir: Path | None = None
    patches: Path = paths.PATCHES
    debian: Path = paths.DEBIAN


def apply_debian_delta(tree: Path, delta: Path) -> list[str]:
    """Our changes to Debian's packaging files, applied like quilt patches: no fuzz."""
    series_file = delta / "series"
    if not series_file.exists():
        return []
    names = [n for n, _ in parse_series(series_file)]
    for name in names:
        patch = delta / name
        if not patch.is_file():
            raise StageError(f"{series_file}: lists {name}, which does not exist")
        r = subprocess.run(["patch", "-p1", "--fuzz=0", "-N", "-f", "--no-backup-if-mismatch",
                            "-r", "-", "-i", str(patch)], cwd=tree, capture_output=True, text=True)
        if r.returncode != 0:
            raise StageError(explain_failure(tree, patch, f"debian/delta/{name}", r.stdout + r.stderr))
    return names


def unpack(pins: dict, from_dir: Path | None, work: Path) -> Path:
    """The orig tree with Debian's debian/ in it, both verified first."""
    orig, deb = pinned_file(pins, "orig"), pinned_file(pins, "debian")
    orig_path = obtain(orig, from_dir, pins)
    deb_path = obtain(deb, from_dir, pins)
    log(f"unpacking {orig['name']}")
    run(["tar", "-xf", orig_path, "--no-same-owner", "-C", work], f"unpacking {orig['name']}", 2)
    tree = work / orig["topdir"]
    if not tree.is_dir():
        raise StageError(f"{orig['name']}: does not unpack to {orig['topdir']}/ (topdir in {pins['_path']})")
    if (tree / "debian").exists():
        rmtree(tree / "debian")  # an orig must not carry packaging; Debian's replaces it
    run(["tar", "-xf", deb_path, "--no-same-owner", "-C", tree], f"unpacking {deb['name']}", 2)
    if not (tree / "debian" / "patches" / "series").exists():
        raise StageError(f"{deb['name']}: has no debian/patches/series")
    return tree


def assemble(sources: "Sources", pins: dict, work: Path) -> dict:
    """The patched tree, made in `work`; the fields of its stamp."""
    tree = unpack(pins, sources.from_dir, work)
    delta = apply_debian_delta(tree, sources.debian / "delta")
    # Files our debian/rules uses at build time travel inside the source package.
    (tree / "debian" / "ceph-perf").mkdir()
    for used_by_rules in (paths.RELEASE_GUARD, paths.LTO_LINK_EXCEPTIONS):
        shutil.copy2(used_by_rules, tree / "debian" / "ceph-perf" / used_by_rules.name)
    counts = carry_training_counts(tree, pins)
    version = add_changelog(tree, sources.debian / "changelog", pins)
    applied, marked = apply_ours(tree, sources.patches)
    return {"tree": tree.name, "version": version, "quilt_applied": applied,
            "debian_delta": delta, "applied_upstream": marked, "pgo_counts": counts}


def carry_training_counts(tree: Path, pins: dict) -> str | None:
    """The pinned training counts of pkg.ceph.pgo, verified, into the source
    package (a binary file there, so listed in debian/source/include-binaries).
    Without them the tree still builds every other way; pkg.ceph.pgo stops."""
    counts, why = pgo.verified_counts(pins)
    log(f"pkg.ceph.pgo: {why}")
    if counts is None:
        return None
    shutil.copy2(counts, tree / pgo.IN_TREE)
    with open(tree / "debian" / "source" / "include-binaries", "a") as f:
        f.write(f"{pgo.IN_TREE}\n")
    return pgo.pinned()["sha256"]


def add_changelog(tree: Path, ours_changelog: Path, pins: dict) -> str:
    """Our changelog entries go on top of Debian's; the top one must be the pinned version."""
    top = changelog_version(ours_changelog)
    if top != pins["ours"]["version"]:
        raise StageError(f"{ours_changelog}: tops at {top}, but {pins['_path']} pins ours.version = "
                         f"{pins['ours']['version']}; add a changelog entry for it")
    debian_changelog = tree / "debian" / "changelog"
    debian_changelog.write_text(ours_changelog.read_text().rstrip("\n") + "\n\n" + debian_changelog.read_text())
    return top


def apply_ours(tree: Path, patches: Path) -> tuple[list[str], list[str]]:
    """Our patches go to debian/patches/ceph-perf/, appended to the series and
    applied with quilt; those marked applied-upstream are verified instead."""
    series = parse_series(patches / "series") if (patches / "series").exists() else []
    dest = tree / "debian" / "patches" / "ceph-perf"
    dest.mkdir()
    ours, marked = set(), []
    with open(tree / "debian" / "patches" / "series", "a") as out:
        out.write("# ceph-perf\n")
        for name, note in series:
            src = patches / name
            if not src.is_file():
                raise StageError(f"{patches / 'series'}: lists {name}, which does not exist")
            shutil.copy2(src, dest / name)
            if APPLIED_UPSTREAM_MARK in note:
                marked.append(name)
                continue
            out.write(f"ceph-perf/{name}\n")
            ours.add(f"ceph-perf/{name}")

    applied = apply_series(tree, ours, patches / "series")

    # A patch marked applied-upstream is not re-applied, but the mark must stay true.
    for name in marked:
        if not reverse_applies(tree, dest / name):
            raise StageError(f"patch {name} is marked '{APPLIED_UPSTREAM_MARK}' in {patches / 'series'}, "
                             f"but the tree does not contain its change; remove the mark")
        log(f"patch {name}: applied upstream, not re-applied (marked in patches/series)")
        (dest / name).unlink()
    return applied, marked


def tree_inputs(sources: Sources, pins: dict) -> str:
    """The digest of everything that shapes the tree: pins, our patches and
    packaging, the release guard, and our code that assembles it."""
    return hash_inputs([
        ("pins", Path(pins["_path"])), *quilt_files(sources.patches), ("debian", sources.debian),
        ("guard", paths.RELEASE_GUARD), ("lto-exceptions", paths.LTO_LINK_EXCEPTIONS),
        ("pgo-pin", paths.PGO_PIN), ("pgo-counts", paths.PGO_COUNTS),
        *code_inputs(__name__), ("from", str(sources.from_dir is not None)),
    ])


def assembled_tree(sources: Sources | None = None) -> tuple[Path, str]:
    """The assembled tree and the digest of its inputs, assembling it first
    unless it is current. What every later stage keys its own output on."""
    sources = sources or Sources()
    pins = load_pins()
    key = tree_inputs(sources, pins)
    stamp = produce(paths.source_dir(), key, lambda new: assemble(sources, pins, new),
                    valid=lambda st: (paths.source_dir() / st.get("tree", "")).is_dir())
    return paths.source_dir() / stamp["tree"], key
