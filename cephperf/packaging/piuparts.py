"""piuparts on a package set: the packages, the roots it runs in, its command.

piuparts (trixie's, installed in the piuparts root of cmake/roots.toml) runs
as root with plain chroot, inside a run of that root (private mount and PID
namespaces: whatever it mounts, and every process it starts, goes with the
run). It unpacks its chroots from the piuparts-base tarball, a minimal trixie
made and cached like every other root, into a directory under the cache
(on disk: ceph-osd-dbg alone unpacks to 650 MB), and keeps that tarball's
sources.list: the archive entries of the host's apt configuration,
re-pointed at trixie (cephperf/packaging/archive.py).

One run does piuparts' two tests of a package set given as .deb files, with
one distribution:
  install and purge: install the set into the minimal chroot (with its
    dependencies from the archive), remove and purge it;
  install, upgrade and purge: install the archive's version of the same
    packages by name, upgrade to the files, remove and purge.
Each compares the chroot's files before and after.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .. import paths
from ..common import StageError, EXIT_ERROR, log, pid_alive, rmtree, run
from .archive import PrivateApt, target_entries
from .fetch import apt_proxies
from .roots import Root

# The osd-only profile's packages: what our series changes, installed over
# Debian's stock set.
PACKAGE_SET = ("ceph-osd", "ceph-osd-dbg", "ceph-fuse", "ceph-fuse-dbg")
SUITE = "trixie"
RUN_ROOT, BASE_ROOT = "piuparts", "piuparts-base"
# in the piuparts root: the scripts piuparts.debian.org runs (the piuparts package's)
DEBIAN_SCRIPTS = "/etc/piuparts/scripts"


@dataclass(frozen=True)
class Deb:
    path: Path
    package: str
    version: str


def deb_fields(path: Path) -> tuple[str, str]:
    """(Package, Version) from a .deb's control file."""
    r = run(["dpkg-deb", "-f", path, "Package", "Version"], f"{path}: reading its control fields (is it a .deb?)")
    fields = dict(line.split(": ", 1) for line in r.stdout.splitlines() if ": " in line)
    if not {"Package", "Version"} <= fields.keys():
        raise StageError(f"{path}: no Package or Version field", EXIT_ERROR)
    return fields["Package"], fields["Version"]


def choose(found: list[Deb], names: list[str], where: Path) -> list[Deb]:
    """The .debs of `names`, one each; a name missing or found twice is named."""
    chosen = []
    for name in names:
        mine = [d for d in found if d.package == name]
        if not mine:
            raise StageError(f"{where}: no .deb of {name} (the set: {', '.join(names)})", EXIT_ERROR)
        if len(mine) > 1:
            raise StageError(f"{where}: {len(mine)} .debs of {name}: "
                             f"{', '.join(d.path.name for d in mine)}; keep one", EXIT_ERROR)
        chosen += mine
    return chosen


def package_set(debs: Path, names: list[str]) -> list[Deb]:
    """The set's .debs in a build's output directory."""
    if not debs.is_dir():
        raise StageError(f"{debs}: not a directory of .debs (build the release first)", EXIT_ERROR)
    found = [Deb(p, *deb_fields(p)) for p in sorted(debs.glob("*.deb"))]
    return choose(found, names, debs)


def stock_debs(version: str, names: list[str]) -> Path:
    """Debian's own .debs of the set at `version`, downloaded once into the
    cache (apt checks them against the archive's index)."""
    dest = paths.downloads_dir() / "stock-debs" / version
    have = {p.name.split("_", 1)[0] for p in dest.glob("*.deb")}
    missing = [n for n in names if n not in have]
    if missing:
        part = dest.with_name(f"{dest.name}.part-{os.getpid()}")
        rmtree(part)
        try:
            apt = PrivateApt(SUITE, kind="deb")
            apt.update()
            apt.download([f"{n}={version}" for n in missing], part)
            dest.mkdir(parents=True, exist_ok=True)
            for p in part.glob("*.deb"):
                os.replace(p, dest / p.name)
        finally:
            rmtree(part)
    return dest


def mirror_option() -> str:
    """--mirror's value: the first archive entry, as the host's apt has it.
    piuparts keeps the base's sources.list; it reads the mirror only to
    know the distribution's layout."""
    first = target_entries(SUITE)[0]
    return " ".join([first["uri"], *first["components"]])


def piuparts_argv(base: Path, debs: list[Deb], tmpdir: Path, proxy: str | None) -> list[str]:
    """piuparts' command line for the set. --warn-on-others is not given: a
    dependency that purges unclean fails the run too, as it would for a
    user; --keep-sources-list keeps the base's (the host's) archive entries;
    proxy is the host apt's http proxy, if it has one. The scripts are
    those piuparts.debian.org runs: their checks before removal, their
    known exceptions, and a root password, without which sudo (which
    ceph-osd depends on) refuses to be removed. Its log is its standard
    output (--log-level dump: every command and its output)."""
    return ["piuparts", "--basetgz", str(base), "--distribution", SUITE, "--keep-sources-list",
            "--mirror", mirror_option(), *(["--proxy", proxy] if proxy else []),
            "--scriptsdir", DEBIAN_SCRIPTS, "--tmpdir", str(tmpdir), "--log-level", "dump",
            "--warn-on-usr-move", "fail",
            *[str(d.path) for d in debs]]


def remove_stale_tmpdirs(parent: Path) -> None:
    """Chroot directories of runs that were killed outright: their mounts
    went with the run's namespace, their files stayed."""
    for d in parent.glob("piuparts-*"):
        pid = d.name.split("-")[1]
        if pid.isdigit() and not pid_alive(int(pid)):
            rmtree(d)


def run_piuparts(debs: list[Deb], log_file: Path) -> int:
    """piuparts' exit code; its log (its output) goes to log_file."""
    base_root = Root(BASE_ROOT)
    base_root.create()
    root = Root(RUN_ROOT)
    parent = paths.scratch_dir()
    remove_stale_tmpdirs(parent)
    tmpdir = parent / f"piuparts-{os.getpid()}"
    rmtree(tmpdir)
    tmpdir.mkdir()
    argv = piuparts_argv(base_root.tarball, debs, tmpdir, apt_proxies().get("http"))
    log(f"piuparts on {', '.join(f'{d.package} {d.version}' for d in debs)}: install and purge, then "
        "install of the archive's version, upgrade and purge (the whole set took 11 minutes on a busy 2-core "
        "machine)")
    try:
        with open(log_file, "w") as out:
            return root.run(argv, binds=sorted({d.path.parent for d in debs}), stdout=out)
    finally:
        rmtree(tmpdir)

