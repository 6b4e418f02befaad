"""ci/publish-repo: a signed apt repository from built packages, with reprepro.

  ci/publish-repo [--profile osd-only|full | --debs DIR] [--out DIR] [--key KEYID]

DIR (default: ci/build-debs' output of --profile) holds the .debs; the repository
is written to --out (default $CEPH_PERF_CACHE/repo), suite "trixie", component
"main", and swapped into place only when complete.

Signing: --key KEYID (or $CEPH_PERF_SIGNING_KEY) signs with that key from the
user's keyring ($GNUPGHOME or ~/.gnupg). Without one, a throwaway key is made
in $CEPH_PERF_CACHE/throwaway-gnupg/ and the repository says so in its Origin;
that is for tests only. No key is ever written into the work tree.

The public key is exported beside the repository as ceph-perf.gpg, and
apt-line.txt holds the line clients use:
  deb [signed-by=OUT/ceph-perf.gpg] file:OUT trixie main
"""
import argparse
import os
import subprocess
import time
from pathlib import Path

from cephperf import paths
from cephperf.common import StageError, EXIT_ERROR, hash_inputs, locked, log, main_wrapper, rmtree, run, write_atomic
from cephperf.stage import produce

THROWAWAY_UID = "ceph-perf throwaway test key <ceph-perf-test@invalid>"


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


def publish(debs: list[Path], home: Path | None, key: str, origin: str, out: Path, new: Path) -> dict:
    """The repository in `new`; apt-line.txt names where it will be, `out`."""
    t0 = time.monotonic()
    (new / "conf").mkdir()
    write_atomic(new / "conf" / "distributions",
                 f"Origin: {origin}\nLabel: ceph-perf\nSuite: trixie\nCodename: trixie\n"
                 f"Architectures: amd64\nComponents: main\n"
                 f"Description: ceph-perf: Ceph 18.2.7 for Debian 13, release-flag-checked and gated\n"
                 f"SignWith: {key}\n")
    write_atomic(new / "conf" / "options", "verbose\n")
    gnupghome = ["--gnupghome", str(home)] if home else []
    run(["reprepro", *gnupghome, "-b", new, "includedeb", "trixie", *debs], "reprepro includedeb")
    exported = gpg(home, "--export", key, text=False).stdout
    if not exported:
        raise StageError(f"gpg --export {key} gave nothing", EXIT_ERROR)
    (new / "ceph-perf.gpg").write_bytes(exported)
    write_atomic(new / "apt-line.txt", f"deb [signed-by={out}/ceph-perf.gpg] file:{out} trixie main\n")
    log(f"published {len(debs)} package(s) to {out} in {time.monotonic() - t0:.0f} s")
    return {"key": key, "throwaway": home is not None, "packages": [d.name for d in debs],
            "seconds": round(time.monotonic() - t0)}


def execute():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--profile", choices=["osd-only", "full"], default="osd-only",
                   help="take ci/build-debs' output of this profile (default osd-only)")
    p.add_argument("--debs", type=Path, help="a directory of .debs instead")
    p.add_argument("--out", type=Path, default=paths.repo_dir())
    p.add_argument("--key", default=os.environ.get("CEPH_PERF_SIGNING_KEY"),
                   help="key id or fingerprint in the user's keyring (default: a throwaway test key)")
    args = p.parse_args()
    debs_dir = args.debs or paths.debs_out(args.profile)
    debs = sorted(debs_dir.glob("*.deb"))
    if not debs:
        raise StageError(f"{debs_dir}: no .deb files; run ci/build-debs first or pass --debs DIR", EXIT_ERROR)
    home, key, origin = signing_key(args.key)
    out = args.out.resolve()
    inputs = hash_inputs([("debs", "\n".join(f"{d.name} {d.stat().st_size} {d.stat().st_mtime_ns}" for d in debs)),
                          ("key", key), ("script", Path(__file__).read_bytes())])
    produce(out, inputs, lambda new: publish(debs, home, key, origin, out, new))
    print(out)
    return 0


def main():
    main_wrapper(execute)
