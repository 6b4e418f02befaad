"""The newest entry of a Debian changelog, read with dpkg-parsechangelog:
its version (ci/source checks ours against the pin) and its time, which
dpkg takes as SOURCE_DATE_EPOCH (the source package's file times, the
training counts' archive)."""
from pathlib import Path

from ..common import EXIT_ERROR, StageError, run


def changelog_field(path: Path, field: str) -> str:
    """A field of the newest entry of a Debian changelog (Version, Timestamp ...)."""
    return run(["dpkg-parsechangelog", "-l", path, "-S", field], f"reading {path}", 1).stdout.strip()


def changelog_version(path: Path) -> str:
    return changelog_field(path, "Version")


def changelog_epoch(changelog: Path) -> int:
    """The time of the newest entry of debian/changelog, which dpkg takes as
    SOURCE_DATE_EPOCH."""
    stamp = changelog_field(changelog, "Timestamp")
    if not stamp.isdigit():
        raise StageError(f"{changelog}: no trailer line with a date (' -- NAME <EMAIL>  DATE'); "
                         "fix the newest entry", EXIT_ERROR)
    return int(stamp)
