"""Debian roots made with mmdebstrap, cached as tarballs keyed by their inputs,
and commands run inside them.

A run happens in private mount and PID namespaces: whatever it mounts (an
overlay over the cached root, /proc, /dev, /dev/pts, /tmp, the work tree and
the cache) disappears with its last process, whether it exits, fails, is
interrupted or is killed. Nothing it mounts is ever visible on the host, and
every process it starts dies with it. The overlay keeps the cached root
pristine; each run's changes are thrown away.
"""
from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..common import (StageError, EXIT_ERROR, hash_inputs, load_toml, locked, log, pid_alive, read_stamp, rmtree,
                      run, write_stamp)
from .. import paths
from ..paths import REPO, cache_dir
from .archive import sources_lines, target_entries
from .fetch import apt_proxies

ROOTS_TOML = paths.ROOTS_TOML
ENTER = paths.RUNTIME / "enter_root.py"

# Where a root of Build-Depends gets the tree's debian/ while it is made;
# the copy on the host is a temporary directory, named in the key by this.
DEPS_IN_ROOT = "/tmp/ceph-perf-deps"
COPIED_DEBIAN = "<the tree's debian/control and changelog>"

# Environment passed into a root; everything else from the host is dropped so
# that builds do not depend on who runs them.
PASS_ENV = ("TERM", "DEB_BUILD_OPTIONS", "DEB_BUILD_PROFILES", "CEPH_PERF_CACHE", "CEPH_PERF_BUILD",
            "CMAKE_EXPORT_COMPILE_COMMANDS", "SOURCE_DATE_EPOCH")


def control_build_depends(control: Path) -> str:
    """The source stanza's Build-Depends*/Build-Conflicts* fields, verbatim."""
    text = control.read_text().split("\n\n", 1)[0]
    keep, out = False, []
    for line in text.splitlines():
        if line and line[0] not in " \t":
            keep = line.split(":", 1)[0].lower().startswith(("build-depends", "build-conflicts"))
        if keep:
            out.append(line)
    return "\n".join(out)


class Root:
    def __init__(self, kind: str, tree: Path | None = None):
        conf = load_toml(ROOTS_TOML)
        if kind not in conf:
            raise StageError(f"{ROOTS_TOML}: no [{kind}] section", EXIT_ERROR)
        self.kind, self.conf, self.tree = kind, conf[kind], tree
        self.entries = target_entries(self.conf["suite"])
        deps = ""
        if self.conf.get("build_depends"):
            if tree is None or not (tree / "debian" / "control").exists():
                raise StageError(f"the {kind} root needs an assembled tree with debian/control (run ci/source)", EXIT_ERROR)
            deps = control_build_depends(tree / "debian" / "control")
        self.key = hash_inputs([
            ("conf", json.dumps(self.conf, sort_keys=True)),
            ("sources", sources_lines(self.entries)),
            ("build-depends", deps),
            # how the root is made: a changed hook or option makes another root
            ("mmdebstrap", json.dumps(self.contents_args(COPIED_DEBIAN))),
        ])[:16]
        self.dir = paths.roots_dir()
        self.tarball = self.dir / f"{kind}-{self.key}.tar"
        self.extracted = self.dir / f"{kind}-{self.key}"

    # -- creation -----------------------------------------------------------
    def contents_args(self, copied_debian: str) -> list[str]:
        """mmdebstrap's options that decide what the root holds: its whole
        command but the host's apt proxy, the output (named by the key),
        the suite and the sources (keyed on their own). copied_debian is
        the directory holding the tree's debian/control and changelog, for
        a root of Build-Depends."""
        args = [f"--variant={self.conf['variant']}", "--format=tar", "--mode=root",
                "--aptopt=APT::Install-Recommends \"false\""]
        if self.conf.get("packages"):
            args.append("--include=" + ",".join(self.conf["packages"]))
        if self.conf.get("build_depends"):
            args += [f"--customize-hook=mkdir -p \"$1{DEPS_IN_ROOT}\"",
                     f"--customize-hook=copy-in {shlex.quote(copied_debian)} {DEPS_IN_ROOT}",
                     f"--customize-hook=chroot \"$1\" apt-get -y --no-install-recommends build-dep {DEPS_IN_ROOT}",
                     f"--customize-hook=rm -rf \"$1{DEPS_IN_ROOT}\""]
        return args + ["--customize-hook=chroot \"$1\" apt-get clean"]

    def tarball_current(self) -> bool:
        return self.tarball.exists() and bool(read_stamp(self.tarball.with_suffix(".json")))

    def create(self) -> bool:
        """Make the tarball unless it exists. Returns True on a cache hit."""
        if self.tarball_current():
            log(f"cache hit: {self.tarball}")
            return True
        # Two runs that need the same root (a release stage beside a test)
        # would each remove the other's part file as stale: one creates it,
        # the others wait and take its result.
        with locked(self.dir / f"{self.tarball.name}.lock"):
            if self.tarball_current():
                log(f"cache hit: {self.tarball} (made by a concurrent run)")
                return True
            return self._create_locked()

    def _create_locked(self) -> bool:
        self.dir.mkdir(parents=True, exist_ok=True)
        for stale in self.dir.glob(f"{self.tarball.name}.part-*"):
            stale.unlink(missing_ok=True)
        part = self.tarball.with_name(f"{self.tarball.name}.part-{os.getpid()}")
        with tempfile.TemporaryDirectory() as tmp:
            deps = Path(tmp) / "debian"
            if self.conf.get("build_depends"):
                deps.mkdir()
                for name in ("control", "changelog"):
                    (deps / name).write_bytes((self.tree / "debian" / name).read_bytes())
            cmd = ["mmdebstrap",
                   # mmdebstrap's apt does not read the host's apt.conf.d: its proxy is passed on
                   *[f'--aptopt=Acquire::{scheme}::Proxy "{url}"' for scheme, url in apt_proxies().items()
                     if scheme in ("http", "https")],
                   *self.contents_args(str(deps)), self.conf["suite"], str(part),
                   *sources_lines(self.entries).splitlines()]
            log(f"creating the {self.kind} root with mmdebstrap (a few minutes)")
            t0 = time.monotonic()
            try:
                # its output goes to the terminal: creating a root takes minutes
                run(cmd, f"creating the {self.kind} root with mmdebstrap (see its output above)",
                    stdout=sys.stderr, stderr=subprocess.STDOUT)
                os.replace(part, self.tarball)
            finally:
                part.unlink(missing_ok=True)
        write_stamp(self.tarball.with_suffix(".json"), key=self.key, kind=self.kind,
                    seconds=round(time.monotonic() - t0), size=self.tarball.stat().st_size)
        log(f"created {self.tarball} in {time.monotonic() - t0:.0f} s")
        return False

    def ensure_extracted(self) -> Path:
        stamp = self.extracted / ".ceph-perf-extracted"
        if stamp.exists():
            return self.extracted
        self.create()
        # Runs started together (the gate's concurrent runs, a stage beside a
        # test) would extract into the same .new directory, and a late one
        # would remove the root a first one already runs on: one extracts,
        # the others wait and take its result.
        with locked(self.dir / f"{self.extracted.name}.lock"):
            if stamp.exists():
                return self.extracted
            tmp = self.extracted.with_name(self.extracted.name + ".new")
            rmtree(tmp)
            tmp.mkdir(parents=True)
            try:
                log(f"extracting {self.tarball.name}")
                run(["tar", "-xf", self.tarball, "-C", tmp, "--numeric-owner", "--xattrs", "--xattrs-include=*"],
                    f"extracting {self.tarball}")
                (tmp / ".ceph-perf-extracted").write_text(self.key + "\n")
                rmtree(self.extracted)
                os.rename(tmp, self.extracted)
            finally:
                rmtree(tmp)
        return self.extracted

    # -- running ------------------------------------------------------------
    def run(self, argv: list[str], binds: list[Path] = (), cwd: Path | None = None,
            env: dict | None = None, interactive: bool = False, scratch: list[Path] = (),
            stdout=None, mounts: dict[Path, Path] | None = None, network: bool = True) -> int:
        """Run argv inside the root; returns its exit code.

        Each `scratch` directory is seen through a throwaway overlay: the run
        may write into it (a configure in a source tree) without changing it.
        `mounts` maps a host directory to the path where the run sees it (a
        kept build tree at the fixed path a release is built in).
        network=False gives the run a network namespace of its own, holding
        a loopback device only (down until the run brings it up): its
        daemons' fixed ports on 127.0.0.1 meet no other run's.
        """
        lower = self.ensure_extracted()
        _remove_stale_rundirs(self.dir)
        rundir = Path(tempfile.mkdtemp(prefix=f"run-{os.getpid()}-", dir=self.dir))
        binds = [REPO, cache_dir(), *binds]
        cwd = cwd or Path.cwd()
        if not any(cwd == b or b in cwd.parents for b in binds):
            cwd = Path("/")
        child_env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                     "HOME": "/root", "LANG": "C.UTF-8", "CCACHE_DIR": str(paths.ccache_dir())}
        child_env.update({k: os.environ[k] for k in PASS_ENV if k in os.environ})
        child_env.update(env or {})
        spec = {"lower": str(lower), "rundir": str(rundir), "binds": [str(b) for b in dict.fromkeys(binds)],
                "cwd": str(cwd), "argv": list(argv), "env": child_env,
                "scratch": [str(p) for p in scratch],
                "mounts": {str(h): str(inside) for h, inside in (mounts or {}).items()}}
        # unshare's child is PID 1 of a new PID namespace: when it ends, the
        # kernel kills everything left in the namespace, and the mount
        # namespace (with every mount in it) goes away.
        cmd = ["unshare", "--mount", "--propagation", "private", "--pid", *([] if network else ["--net"]),
               "--fork", "--kill-child", sys.executable, str(ENTER), json.dumps(spec)]
        popen_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        try:
            # Non-interactive runs get their own session: an interrupt reaches
            # this process, which then stops the whole run (below). An
            # interactive shell stays in the terminal's foreground group.
            proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.STDOUT if stdout else None,
                                    env=popen_env, start_new_session=not interactive,
                                    preexec_fn=_die_with_parent)
            try:
                return proc.wait()
            except KeyboardInterrupt:
                # Ctrl-C, SIGTERM or SIGHUP: stop the run's whole process group,
                # then make sure its PID 1 is gone (taking the namespaces along).
                if not interactive:
                    os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                raise
        finally:
            rmtree(rundir)


def _remove_stale_rundirs(roots: Path) -> None:
    """Overlay scratch of runs whose stage process was killed outright."""
    for d in roots.glob("run-*-*"):
        pid = d.name.split("-")[1]
        if pid.isdigit() and not pid_alive(int(pid)):
            rmtree(d)


def _die_with_parent():
    """If the stage process dies, even by SIGKILL, unshare gets SIGKILL, and its
    --kill-child takes the run's PID 1 and so the whole namespace with it."""
    import ctypes
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
