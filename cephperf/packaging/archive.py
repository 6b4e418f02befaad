"""Debian archive access that reuses the host's configured `deb` entries.

We never write a mirror's host name: the URIs come from the host's apt
configuration, re-pointed at the target suite. apt runs with a private state
directory under the cache, so the host's own apt setup is left untouched.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from ..common import StageError, EXIT_ERROR, log, run
from .. import paths

APT_ETC = Path(os.environ.get("CEPH_PERF_APT_ETC", "/etc/apt"))
DEFAULT_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"


def host_codename() -> str:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("VERSION_CODENAME="):
                return line.split("=", 1)[1].strip().strip('"')
    except FileNotFoundError:
        pass
    raise StageError("cannot tell the host's Debian codename from /etc/os-release", EXIT_ERROR)


def _deb822_stanzas(text: str):
    stanza: dict[str, str] = {}
    key = None
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        if not line.strip():
            if stanza:
                yield stanza
            stanza, key = {}, None
        elif line[0] in " \t" and key:
            stanza[key] += "\n" + line.strip()
        elif ":" in line:
            key, value = line.split(":", 1)
            key = key.strip().lower()
            stanza[key] = value.strip()
    if stanza:
        yield stanza


def host_deb_entries() -> list[dict]:
    """The host's enabled `deb` entries: [{uri, suite, components, signed_by}]."""
    entries = []
    files = []
    if (APT_ETC / "sources.list").exists():
        files.append(APT_ETC / "sources.list")
    parts = APT_ETC / "sources.list.d"
    if parts.is_dir():
        files += sorted(p for p in parts.iterdir() if p.suffix in (".list", ".sources"))
    for path in files:
        text = path.read_text(errors="replace")
        if path.suffix == ".sources":
            for st in _deb822_stanzas(text):
                if st.get("enabled", "yes").lower() == "no" or "deb" not in st.get("types", "").split():
                    continue
                for uri in st.get("uris", "").split():
                    for suite in st.get("suites", "").split():
                        entries.append({"uri": uri.rstrip("/"), "suite": suite,
                                        "components": st.get("components", "main").split(),
                                        "signed_by": st.get("signed-by", ""),
                                        "trusted": st.get("trusted", "no").lower() == "yes"})
        else:
            for line in text.splitlines():
                line = line.split("#", 1)[0].strip()
                m = re.match(r"^deb\s+(\[[^\]]*\]\s+)?(\S+)\s+(\S+)\s*(.*)$", line)
                if not m:
                    continue
                opts = m.group(1) or ""
                sb = re.search(r"signed-by=(\S+?)\]?(\s|$)", opts)
                entries.append({"uri": m.group(2).rstrip("/"), "suite": m.group(3),
                                "components": m.group(4).split() or ["main"],
                                "signed_by": sb.group(1) if sb else "",
                                "trusted": bool(re.search(r"\btrusted=yes\b", opts))})
    return entries


def target_entries(target_suite: str) -> list[dict]:
    """The host's Debian archive entries re-pointed at `target_suite`.

    Only entries for the host's own release (codename, -updates, -security)
    are Debian archive mirrors; third-party repositories are ignored.
    """
    codename = host_codename()
    out, seen = [], set()
    for e in host_deb_entries():
        suite = e["suite"]
        if suite == codename:
            new = target_suite
        elif suite.startswith(codename + "-") and suite.split("-", 1)[1] in ("updates", "security"):
            new = target_suite + "-" + suite.split("-", 1)[1]
        else:
            continue
        key = (e["uri"], new)
        if key in seen:
            continue
        seen.add(key)
        # A local mirror the host marks trusted=yes (unsigned) stays so; any
        # other is checked against Debian's archive keyring.
        out.append({"uri": e["uri"], "suite": new, "components": ["main"], "trusted": e.get("trusted", False),
                    "signed_by": "" if e.get("trusted") else
                    DEFAULT_KEYRING if os.path.exists(DEFAULT_KEYRING) else e["signed_by"]})
    if not out:
        raise StageError(
            f"no Debian archive `deb` entry for {codename} in {APT_ETC}/sources.list(.d); "
            "configure one, or pass --from DIR with the tarballs", EXIT_ERROR)
    return out


def sources_lines(entries: list[dict], kind: str = "deb") -> str:
    lines = []
    for e in entries:
        sb = "[trusted=yes] " if e.get("trusted") else f"[signed-by={e['signed_by']}] " if e["signed_by"] else ""
        lines.append(f"{kind} {sb}{e['uri']} {e['suite']} {' '.join(e['components'])}")
    return "\n".join(lines) + "\n"


def unpack_deb(deb: Path, dest: Path) -> Path:
    """dpkg-deb -x of one package into dest."""
    dest.mkdir(parents=True, exist_ok=True)
    run(["dpkg-deb", "-x", deb, dest], f"{deb}: unpacking (is it a readable .deb?)")
    return dest


class PrivateApt:
    """apt with its own sources and state under the cache (no host changes)."""

    def __init__(self, suite: str, kind: str = "deb-src"):
        self.entries = target_entries(suite)
        self.kind = kind
        self.root = paths.apt_dir(suite, kind)
        self.opts = [
            "-o", f"Dir::Etc::SourceList={self.root / 'sources.list'}",
            "-o", "Dir::Etc::SourceParts=/dev/null",
            "-o", f"Dir::State::Lists={self.root / 'lists'}",
            "-o", f"Dir::Cache={self.root / 'cache'}",
            "-o", "Debug::NoLocking=1",
            # The private dirs are root's; apt's _apt sandbox user could not write them.
            "-o", "APT::Sandbox::User=root",
            "-o", f"Dir::State::status={self.root / 'status'}",
        ]

    def update(self) -> None:
        (self.root / "lists" / "partial").mkdir(parents=True, exist_ok=True)
        (self.root / "cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
        (self.root / "sources.list").write_text(sources_lines(self.entries, self.kind))
        (self.root / "status").touch()
        run(["apt-get", *self.opts, "-q", "update"], f"apt-get update for the {self.kind} entries")

    def download(self, names: list[str], dest: Path) -> list[Path]:
        """apt-get download of binary packages (the candidate versions) into dest."""
        dest.mkdir(parents=True, exist_ok=True)
        log(f"downloading Debian's {' '.join(names)}")
        run(["apt-get", *self.opts, "download", *names], f"downloading {' '.join(names)}", cwd=dest)
        return sorted(dest.glob("*.deb"))

    def source_stanzas(self, package: str) -> list[dict]:
        r = run(["apt-cache", *self.opts, "showsrc", "--only-source", package], f"looking up {package}'s sources")
        return list(_deb822_stanzas(r.stdout))

    def file_candidates(self, package: str, version: str, name: str) -> tuple[str, list[str]]:
        """(sha256 from the Sources index, candidate URLs) for one file."""
        sums, dirs = set(), []
        for st in self.source_stanzas(package):
            if st.get("version") != version:
                continue
            for line in st.get("checksums-sha256", "").splitlines():
                parts = line.split()
                if len(parts) == 3 and parts[2] == name:
                    sums.add(parts[0])
                    if st.get("directory") and st["directory"] not in dirs:
                        dirs.append(st["directory"])
        if not sums:
            raise StageError(f"{name}: not listed for {package} {version} in the Sources index of "
                             f"{', '.join(e['suite'] for e in self.entries)}", EXIT_ERROR)
        if len(sums) > 1:
            raise StageError(f"{name}: the Sources indexes disagree on its sha256: {sorted(sums)}", EXIT_ERROR)
        urls = list(dict.fromkeys(f"{e['uri']}/{d}/{name}" for d in dirs for e in self.entries))
        log(f"{name}: {len(urls)} candidate URL(s) from the Sources index")
        return sums.pop(), urls
