"""Shared test helpers: running our stage programs with a private build dir,
cache and pins, and building small source-package fixtures."""
from __future__ import annotations

import hashlib
import os
import subprocess
import tarfile
import tempfile
import textwrap
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CI = REPO / "ci"

from cephperf.paths import scratch_dir  # noqa: F401 (the tests' room, as the stages')


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_stage(name: str, *args, env: dict | None = None, timeout: int = 120, **kw) -> subprocess.CompletedProcess:
    full = dict(os.environ)
    full.update(env or {})
    return subprocess.run([str(CI / name), *map(str, args)], env=full, capture_output=True,
                          text=True, timeout=timeout, **kw)


def make_tar(dest: Path, files: dict[str, str]) -> Path:
    """A .tar.xz holding `files` (relative path -> content)."""
    with tempfile.TemporaryDirectory() as tmp:
        for rel, content in files.items():
            p = Path(tmp) / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(content)
        with tarfile.open(dest, "w:xz") as tar:
            for top in sorted({rel.split("/")[0] for rel in files}):
                tar.add(Path(tmp) / top, arcname=top)
    return dest


def unified_patch(path: str, old: str, new: str, header: str = "Description: fixture\n") -> str:
    """A -p1 patch turning file `path` from `old` to `new`, made with diff -u."""
    with tempfile.TemporaryDirectory() as tmp:
        a, b = Path(tmp, "a", path), Path(tmp, "b", path)
        for f, text in ((a, old), (b, new)):
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(text)
        r = subprocess.run(["diff", "-u", f"a/{path}", f"b/{path}"], cwd=tmp, capture_output=True, text=True)
    body = "\n".join(line.split("\t")[0] if line.startswith(("---", "+++")) else line
                     for line in r.stdout.splitlines()) + "\n"
    return header + "---\n" + body


LINES = "".join(f"line {i}\n" for i in range(1, 31))

CHANGELOG_DEBIAN = textwrap.dedent("""\
    mini (1.0+ds-1) trixie; urgency=medium

      * Fixture.

     -- Fixture <fixture@example.org>  Sat, 21 Nov 2026 00:00:00 +0000
    """)
CHANGELOG_OURS = textwrap.dedent("""\
    mini (1.0+ds-1+perf1) trixie; urgency=medium

      * Ours.

     -- Fixture <fixture@example.org>  Sat, 21 Nov 2026 00:00:00 +0000
    """)


class SourceFixture(unittest.TestCase):
    """A miniature of the real inputs: orig, Debian's debian/, our patches and delta."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="ceph-perf-test-")
        self.tmp = Path(self._tmp.name)
        self.tarballs = self.tmp / "tarballs"
        self.tarballs.mkdir()
        self.orig = make_tar(self.tarballs / "mini_1.0+ds.orig.tar.xz", {
            "mini-1.0+ds/src/a.txt": LINES,
            "mini-1.0+ds/src/b.txt": "upstream b\n",
        })
        debian_patch = unified_patch("src/b.txt", "upstream b\n", "upstream b\ndebian b\n")
        self.debian = make_tar(self.tarballs / "mini_1.0+ds-1.debian.tar.xz", {
            "debian/changelog": CHANGELOG_DEBIAN,
            "debian/rules": "#!/usr/bin/make -f\n%:\n\tdh $@\n",
            "debian/control": "Source: mini\nBuild-Depends: debhelper-compat (= 13)\n\nPackage: mini\nArchitecture: any\nDescription: fixture\n fixture\n",
            "debian/patches/series": "debian-b.patch\n",
            "debian/patches/debian-b.patch": debian_patch,
        })
        self.patches = self.tmp / "patches"
        self.patches.mkdir()
        self.ours = self.tmp / "debian-ours"
        (self.ours / "delta").mkdir(parents=True)
        (self.ours / "changelog").write_text(CHANGELOG_OURS)
        (self.ours / "delta" / "series").write_text("")
        self.build = self.tmp / "build"
        self.cache = self.tmp / "cache"
        self.write_pins()
        self.add_patch("ours-a.patch", unified_patch("src/a.txt", LINES, LINES.replace("line 15\n", "line 15 ours\n")))

    def tearDown(self):
        self._tmp.cleanup()

    def write_pins(self, orig_sha: str | None = None):
        self.pins = self.tmp / "pins.toml"
        self.pins.write_text(textwrap.dedent(f"""\
            [upstream]
            version = "1.0"
            [debian]
            source = "mini"
            suite = "trixie"
            version = "1.0+ds-1"
            [ours]
            version = "1.0+ds-1+perf1"
            [[files]]
            role = "orig"
            name = "{self.orig.name}"
            sha256 = "{orig_sha or sha256(self.orig)}"
            topdir = "mini-1.0+ds"
            [[files]]
            role = "debian"
            name = "{self.debian.name}"
            sha256 = "{sha256(self.debian)}"
            """))

    def add_patch(self, name: str, text: str, note: str = ""):
        (self.patches / name).write_text(text)
        with open(self.patches / "series", "a") as f:
            f.write(f"{name}{'  # ' + note if note else ''}\n")

    def env(self, **extra) -> dict:
        env = {"CEPH_PERF_PINS": str(self.pins), "CEPH_PERF_BUILD": str(self.build),
               "CEPH_PERF_CACHE": str(self.cache), "CEPH_PERF_LOCAL": str(self.tmp / "local.toml")}
        env.update(extra)
        return env

    def source(self, *args, **kw) -> subprocess.CompletedProcess:
        return run_stage("source", "--patches", self.patches, "--debian", self.ours, *args,
                         env=self.env(), **kw)

    def tree(self) -> Path:
        return self.build / "source" / "mini-1.0+ds"
