"""Fetch pinned files and verify them before anyone unpacks them.

Where a file comes from, in order:
  1. `--from DIR` (air-gapped hosts): only DIR is used.
  2. the download cache, re-verified on every use;
  3. a URL the user configured in local.toml;
  4. the Debian archive, by file name, at the URLs its Sources index implies.
A download is written to a `.part-PID` name and renamed only once its sha256
matches, so an interrupted or corrupted fetch never leaves a file that a later
run would trust.
"""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from ..common import StageError, EXIT_ERROR, load_toml, log, pid_alive, sha256_file
from .. import paths


def local_config() -> dict:
    path = paths.local_toml()
    return load_toml(path) if path.exists() else {}


def mismatch(path: Path, expected: str, got: str) -> StageError:
    return StageError(
        f"{path.name}: sha256 mismatch: expected {expected}, got {got}; "
        f"the file was deleted and nothing was unpacked (check the pin in cmake/pins.toml or the file's source)")


def verify(path: Path, expected: str, delete: bool = True) -> None:
    got = sha256_file(path)
    if got != expected:
        if delete:
            path.unlink(missing_ok=True)
        raise mismatch(path, expected, got)


def parse_apt_proxies(dump: str) -> dict[str, str]:
    """{scheme: proxy URL} from `apt-config dump`'s Acquire::http(s)::Proxy lines
    (per-host proxies are not taken; "DIRECT" means none)."""
    out = {}
    for scheme, value in re.findall(r'^Acquire::(https?)::Proxy "([^"]*)";$', dump, re.M):
        if value and value.upper() != "DIRECT":
            out[scheme] = value
    return out


def apt_proxies() -> dict[str, str]:
    """The proxies apt is configured with on this host; none where apt is absent."""
    try:
        dump = subprocess.run(["apt-config", "dump"], capture_output=True, text=True, timeout=30).stdout
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return {}
    return parse_apt_proxies(dump)


def opener() -> urllib.request.OpenerDirector:
    """urllib as apt would fetch: the environment's http(s)_proxy when set,
    else apt's Acquire::http(s)::Proxy (apt.conf.d), so one setting serves both."""
    env = urllib.request.getproxies()
    proxies = {**apt_proxies(), **{k: v for k, v in env.items() if k in ("http", "https", "no")}}
    return urllib.request.build_opener(urllib.request.ProxyHandler(proxies))


class Progress:
    """A download's progress, logged every 10% (or every 30 s without a size)."""

    def __init__(self, name: str, total: int | None):
        self.name, self.total, self.done, self.said, self.t0 = name, total, 0, 0, time.monotonic()

    def add(self, n: int) -> None:
        self.done += n
        if self.total:
            step = self.done * 10 // self.total
            if step > self.said and self.done < self.total:
                self.said = step
                log(f"{self.name}: {self.done >> 20} of {self.total >> 20} MiB ({step * 10}%)")
        elif time.monotonic() - self.t0 >= 30 * (self.said + 1):
            self.said += 1
            log(f"{self.name}: {self.done >> 20} MiB so far")


def download(url: str, dest: Path, expected: str) -> None:
    """Stream `url` to dest.part-PID, verify, then rename to dest."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(f"{dest.name}.part-{os.getpid()}")
    h = hashlib.sha256()
    try:
        with opener().open(url, timeout=60) as resp, open(part, "wb") as out:
            size = resp.headers.get("Content-Length")
            progress = Progress(dest.name, int(size) if size and size.isdigit() else None)
            for chunk in iter(lambda: resp.read(1 << 20), b""):
                out.write(chunk)
                h.update(chunk)
                progress.add(len(chunk))
            out.flush()
            os.fsync(out.fileno())
        if h.hexdigest() != expected:
            raise mismatch(dest, expected, h.hexdigest())
        os.replace(part, dest)
    finally:
        part.unlink(missing_ok=True)


def remove_stale_parts(dest: Path) -> None:
    """Partial downloads of runs that died are never resumed or trusted."""
    for p in dest.parent.glob(f"{dest.name}.part-*"):
        pid = p.name.rsplit("-", 1)[1]
        if pid.isdigit() and pid_alive(int(pid)):
            continue  # a live run owns it
        log(f"removing partial download {p.name} left by an interrupted run")
        p.unlink(missing_ok=True)


_apt_by_suite: dict = {}


def _updated_apt(suite: str):
    """One `apt-get update` per run, however many files are fetched."""
    if suite not in _apt_by_suite:
        from .archive import PrivateApt
        apt = PrivateApt(suite)
        apt.update()
        _apt_by_suite[suite] = apt
    return _apt_by_suite[suite]


def obtain(entry: dict, from_dir: Path | None, pins: dict, apt_factory=None) -> Path:
    """Return a verified local path for one pinned file."""
    name, expected = entry["name"], entry["sha256"]
    if from_dir is not None:
        path = from_dir / name
        if not path.is_file():
            raise StageError(f"{name}: not found in --from directory {from_dir}", EXIT_ERROR)
        # Never delete a user's file: report and stop.
        verify(path, expected, delete=False)
        log(f"{name}: verified in {from_dir}")
        return path

    dest = paths.downloads_dir() / name
    remove_stale_parts(dest)
    if dest.exists():
        try:
            verify(dest, expected)
            log(f"{name}: cached, sha256 verified")
            return dest
        except StageError as e:
            log(f"{e}; fetching again")

    user = local_config().get("files", {}).get(name)
    if user and user.get("url"):
        if user.get("sha256") and user["sha256"] != expected:
            log(f"{name}: local.toml overrides the pinned sha256 with {user['sha256']}")
            expected = user["sha256"]
        log(f"{name}: fetching {user['url']} (configured in local.toml)")
        download(user["url"], dest, expected)
        return dest

    apt = (apt_factory or _updated_apt)(pins["debian"]["suite"])
    index_sum, urls = apt.file_candidates(pins["debian"]["source"], pins["debian"]["version"], name)
    if index_sum != expected:
        raise StageError(f"{name}: the archive's Sources index lists sha256 {index_sum}, "
                         f"but cmake/pins.toml pins {expected}; refusing to fetch")
    errors = []
    for url in urls:
        try:
            log(f"{name}: fetching by name from the archive")
            download(url, dest, expected)
            log(f"{name}: sha256 verified")
            return dest
        except urllib.error.HTTPError as e:
            errors.append(f"{e.code}")  # several archive files answer 404; try the next
        except urllib.error.URLError as e:
            errors.append(str(e.reason))
    raise StageError(f"{name}: no archive URL served it ({', '.join(errors)}); "
                     f"put the file in a directory and pass --from DIR", EXIT_ERROR)
