"""ci/publish-repo: a signed apt repository with history, kept with aptly.

  ci/publish-repo [--profile osd-only|full | --debs DIR] [--out DIR] [--key KEYID] [--keep N]

DIR (default: ci/build-debs' output of --profile) holds what a build produced.
Each .changes file in it is included whole (its .debs, and a source package
when it lists one); a directory with no .changes (stand-in packages) has its
.debs added. Each .buildinfo is published beside the pool, under buildinfo/.

The repository keeps history. Its database (aptly's, DIR.db beside --out,
default $CEPH_PERF_CACHE/repo.db) lives across runs, so publishing a new
version keeps the older ones installable: users can downgrade through apt.
The newest --keep versions of each package stay (default 3; ceph-osd-dbg is
some 650 MB a version); older ones are dropped from the index and the pool.
A version already published with other bytes is refused, naming the file:
a version is never republished with different contents.

Suite "trixie", component "main", published to --out (default
$CEPH_PERF_CACHE/repo). reprepro, which Debian 12 and 13 ship (5.3), holds one
version of a package per suite and component, so it cannot keep history.

Signing: --key KEYID (or $CEPH_PERF_SIGNING_KEY) signs with that key from the
user's keyring ($GNUPGHOME or ~/.gnupg). Without one, a throwaway key is made
in $CEPH_PERF_CACHE/throwaway-gnupg/ and the repository says so in its Origin;
that is for tests only. No key is ever written into the work tree.

The public key is exported beside the repository as ceph-perf.gpg, and
apt-line.txt holds the line clients use:
  deb [signed-by=OUT/ceph-perf.gpg] file:OUT trixie main
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from cephperf import paths
from cephperf.common import (StageError, EXIT_ERROR, EXIT_FAIL, hash_inputs, locked, log, main_wrapper, read_stamp,
                             newest_first, rmtree, run, write_atomic, write_stamp)
from cephperf.imports import code_inputs

THROWAWAY_UID = "ceph-perf throwaway test key <ceph-perf-test@invalid>"
REPO_NAME = "ceph-perf"
SUITE, COMPONENT = "trixie", "main"


def gpg(gnupghome: Path | None, *args, text: bool = True):
    env = dict(os.environ, **({"GNUPGHOME": str(gnupghome)} if gnupghome else {}))
    return subprocess.run(["gpg", "--batch", "--quiet", *args], env=env, capture_output=True, text=text)


def throwaway_key() -> tuple[Path, str]:
    home = paths.throwaway_gnupg()
    with locked(home.with_name(f".{home.name}.lock")):
        if not (home / "fingerprint").exists():
            tmp = home.with_name(home.name + ".new")
            rmtree(tmp)
            tmp.mkdir(mode=0o700, parents=True)
            run(["gpg", "--batch", "--quiet", "--passphrase", "", "--quick-gen-key", THROWAWAY_UID, "rsa3072",
                 "sign", "1y"], "making a throwaway key", env=dict(os.environ, GNUPGHOME=str(tmp)))
            r = gpg(tmp, "--with-colons", "--list-secret-keys")
            fpr = next(line.split(":")[9] for line in r.stdout.splitlines() if line.startswith("fpr:"))
            (tmp / "fingerprint").write_text(fpr + "\n")
            # the agent gpg started knows the key by this directory's path:
            # stop it before the rename, the next gpg starts a fresh one
            subprocess.run(["gpgconf", "--homedir", str(tmp), "--kill", "gpg-agent"])
            rmtree(home)
            os.rename(tmp, home)
    return home, (home / "fingerprint").read_text().strip()


def signing_key(key: str | None) -> tuple[Path | None, str, str]:
    """(GNUPGHOME or None for the user's keyring, key id, the repository's Origin)."""
    if key:
        if gpg(None, "--list-secret-keys", key).returncode != 0:
            raise StageError(f"--key {key}: no such secret key in the user's keyring "
                             f"({os.environ.get('GNUPGHOME', '~/.gnupg')})", EXIT_ERROR)
        return None, key, "ceph-perf"
    home, key = throwaway_key()
    log(f"no --key given: signing with the throwaway test key {key[-16:]}")
    return home, key, "ceph-perf (throwaway test key)"


class Aptly:
    """aptly with its database beside the published tree, `out`."""

    def __init__(self, out: Path, home: Path | None):
        self.out, self.db = out, out.with_name(out.name + ".db")
        self.db.mkdir(parents=True, exist_ok=True)
        self.conf = self.db / "aptly.conf"
        # the published tree hard-links the database's pool: one copy on disk
        write_atomic(self.conf, json.dumps({
            "rootDir": str(self.db), "gpgProvider": "gpg", "architectures": ["amd64"],
            "FileSystemPublishEndpoints": {REPO_NAME: {"rootDir": str(out), "linkMethod": "hardlink"}}}, indent=2))
        self.env = dict(os.environ, **({"GNUPGHOME": str(home)} if home else {}))

    def __call__(self, *args, what: str, check: bool = True) -> subprocess.CompletedProcess:
        cmd = ["aptly", f"-config={self.conf}", *args]
        if not check:
            return subprocess.run(cmd, capture_output=True, text=True, env=self.env)
        return run(cmd, what, env=self.env)

    def packages(self) -> list[tuple[str, str]]:
        """(name, version) of every package in the repository."""
        r = self("repo", "search", "-format={{.Package}} {{.Version}}", REPO_NAME, what="listing the repository",
                 check=False)
        # aptly exits 1 with "no results" on an empty repository
        return [tuple(line.split()) for line in r.stdout.splitlines() if len(line.split()) == 2]


def conflicts(output: str) -> list[str]:
    """The packages aptly refused because the repository has them with other bytes."""
    return re.findall(r"conflict in package (\S+)", output)


def add(aptly: Aptly, inputs: Path) -> list[str]:
    """Every .changes in `inputs` included (else its .debs added); what was added."""
    changes = sorted(inputs.glob("*.changes"))
    files = changes or sorted(inputs.glob("*.deb"))
    if not files:
        raise StageError(f"{inputs}: no .changes or .deb files; run ci/build-debs first or pass --debs DIR", EXIT_ERROR)
    if changes:
        args = ["repo", "include", "-no-remove-files", "-accept-unsigned", "-ignore-signatures",
                f"-repo={REPO_NAME}", *map(str, changes)]
    else:
        args = ["repo", "add", REPO_NAME, *map(str, files)]
    r = aptly(*args, what="adding the packages", check=False)
    if bad := conflicts(r.stdout + r.stderr):
        # name the file where it is there (name_version_arch.deb, the package's key)
        bad = [str(inputs / f"{k}.deb") if (inputs / f"{k}.deb").exists() else k for k in bad]
        raise StageError(f"{', '.join(bad)}: already published with other contents; a version is "
                         "never republished with different bytes. Give the build a new version (debian/changelog, "
                         "cmake/pins.toml [ours]) and publish that.", EXIT_FAIL)
    if r.returncode != 0:
        raise StageError(f"aptly {' '.join(args[:2])} failed (exit {r.returncode}): "
                         f"{(r.stdout + r.stderr).strip()[-2000:]}", EXIT_ERROR)
    return [f.name for f in files]


def beyond_history(packages: list[tuple[str, str]], keep: int) -> list[tuple[str, str]]:
    """(name, version) of the packages older than each name's newest `keep` versions."""
    by_name: dict[str, set] = {}
    for name, version in packages:
        by_name.setdefault(name, set()).add(version)
    return [(name, v) for name, versions in sorted(by_name.items())
            for v in newest_first(versions)[keep:]]


def publish(aptly: Aptly, key: str, origin: str) -> None:
    published = aptly("publish", "list", "-raw", what="listing publications", check=False).stdout
    if f"filesystem:{REPO_NAME}:. {SUITE}" in published:
        aptly("publish", "update", f"-gpg-key={key}", SUITE, f"filesystem:{REPO_NAME}:", what="publishing")
    else:
        aptly("publish", "repo", f"-gpg-key={key}", f"-distribution={SUITE}", f"-component={COMPONENT}",
              f"-origin={origin}", "-label=ceph-perf", "-architectures=amd64,source", REPO_NAME,
              f"filesystem:{REPO_NAME}:", what="publishing")


def publish_history(inputs: Path, home: Path | None, key: str, origin: str, out: Path, keep: int) -> dict:
    t0 = time.monotonic()
    if (out / "conf" / "distributions").exists():
        # a repository of the reprepro days: aptly publishes it anew from its database
        log(f"{out}: made by reprepro before; replaced by the aptly publication")
        rmtree(out)
    aptly = Aptly(out, home)
    if aptly("repo", "show", REPO_NAME, what="", check=False).returncode != 0:
        aptly("repo", "create", f"-distribution={SUITE}", f"-component={COMPONENT}", REPO_NAME,
              what="creating the repository")
    added = add(aptly, inputs)
    dropped = beyond_history(aptly.packages(), keep)
    for name, version in dropped:
        aptly("repo", "remove", REPO_NAME, f"{name} (= {version})", what=f"dropping {name} {version}")
    publish(aptly, key, origin)
    aptly("db", "cleanup", what="removing dropped packages' files")
    buildinfo = out / "buildinfo"
    buildinfo.mkdir(exist_ok=True)
    for f in inputs.glob("*.buildinfo"):
        shutil.copy2(f, buildinfo / f.name)
    exported = gpg(home, "--export", key, text=False).stdout
    if not exported:
        raise StageError(f"gpg --export {key} gave nothing", EXIT_ERROR)
    (out / "ceph-perf.gpg").write_bytes(exported)
    write_atomic(out / "apt-line.txt", f"deb [signed-by={out}/ceph-perf.gpg] file:{out} {SUITE} {COMPONENT}\n")
    versions = sorted({f"{n} {v}" for n, v in aptly.packages()})
    log(f"published {', '.join(added)} to {out} in {time.monotonic() - t0:.0f} s; it holds {'; '.join(versions)}"
        + (f"; dropped {', '.join(f'{n} {v}' for n, v in dropped)}" if dropped else ""))
    return {"key": key, "throwaway": home is not None, "added": added, "holds": versions,
            "dropped": [f"{n} {v}" for n, v in dropped], "seconds": round(time.monotonic() - t0)}


def execute():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--profile", choices=["osd-only", "full"], default="osd-only",
                   help="take ci/build-debs' output of this profile (default osd-only)")
    p.add_argument("--debs", type=Path, help="a directory of .changes or .debs instead")
    p.add_argument("--out", type=Path, default=paths.repo_dir())
    p.add_argument("--key", default=os.environ.get("CEPH_PERF_SIGNING_KEY"),
                   help="key id or fingerprint in the user's keyring (default: a throwaway test key)")
    p.add_argument("--keep", type=int, default=3, help="versions of each package kept (default 3)")
    args = p.parse_args()
    if args.keep < 1:
        raise StageError("--keep must be 1 or more", EXIT_ERROR)
    inputs = (args.debs or paths.debs_out(args.profile)).resolve()
    home, key, origin = signing_key(args.key)
    out = args.out.resolve()
    files = sorted(f for f in inputs.glob("*") if f.suffix in (".changes", ".deb", ".dsc", ".buildinfo"))
    digest = hash_inputs([("files", "\n".join(f"{f.name} {f.stat().st_size} {f.stat().st_mtime_ns}" for f in files)),
                          ("key", key), ("keep", str(args.keep)), *code_inputs(__name__)])
    stamp_file = out.with_name(out.name + ".db") / "stamp.json"
    with locked(out.with_name(f".{out.name}.lock")):
        stamp = read_stamp(stamp_file)
        if stamp and stamp.get("inputs") == digest and (out / "apt-line.txt").exists():
            log(f"{out}: already holds these packages, published with this key")
        else:
            result = publish_history(inputs, home, key, origin, out, args.keep)
            write_stamp(stamp_file, inputs=digest, **result)
    print(out)
    return 0


def main():
    main_wrapper(execute)
