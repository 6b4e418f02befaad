"""Runs inside a throwaway overlay of the trixie runtime root (ci/upgrade-test).

An OSD made with Debian's stock packages must keep its data across an upgrade
to our repository's ceph-osd and a downgrade back to Debian's. Objects are
written with known sha256 sums and read back after each step.
"""
import os
import sys
from pathlib import Path

from .checks import Objects, add_apt_line, installed_version
from .cluster import Cluster
from .shell import sh
from .record import NodeError, recorded
from .spec import NodeSpec


def candidate_version(pkg: str) -> str:
    out = sh("apt-cache", "policy", pkg).stdout
    for line in out.splitlines():
        if line.strip().startswith("Candidate:"):
            return line.split(":", 1)[1].strip()
    raise NodeError(f"apt-cache policy {pkg} shows no candidate:\n{out}")


def apt_install(*args: str) -> None:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    sh("apt-get", "install", "-y", "-q", "-o", "Dpkg::Options::=--force-confold", *args, timeout=900, env=env)


def programs_that_cannot_load(pkg: str) -> list[str]:
    """The package's programs that the loader cannot start, each with ldd's
    line: a library not found (a build tree's RUNPATH finds no
    libceph-common.so.2 on an installed system), or a symbol no loaded library
    defines (a tool built against our patched common code, run over Debian's
    libceph-common)."""
    missing = []
    for path in sh("dpkg", "-L", pkg).stdout.split():
        program = Path(path)
        if program.parent.name not in ("bin", "sbin") or not program.is_file():
            continue
        with program.open("rb") as f:
            if f.read(4) != b"\x7fELF":
                continue  # a script (ceph-clsinfo, mount.fuse.ceph)
        # -r: resolve every symbol now, as the packages' BIND_NOW start does
        ldd = sh("ldd", "-r", program, check=False)
        missing += [f"{program.name}: {line.strip()}" for line in (ldd.stdout + ldd.stderr).splitlines()
                    if "not found" in line or "undefined symbol" in line]
    return missing


def osd_defaults() -> dict[str, str]:
    """Every option's value as the installed ceph-osd starts with it when no
    ceph.conf sets anything (--show-config prints them and exits)."""
    out = sh("ceph-osd", "-c", "/dev/null", "-i", "0", "--show-config", timeout=60).stdout
    shown = {}
    for line in out.splitlines():
        name, sep, value = line.partition(" = ")
        if not sep:
            raise NodeError(f"ceph-osd --show-config printed a line that is not 'option = value': {line!r}")
        shown[name] = value
    return shown


def changed_defaults(stock: dict[str, str], ours: dict[str, str]) -> list[str]:
    """Options of Debian's ceph-osd whose value ours starts with differs (or
    that ours lacks). Our patches may add options; they change none of
    Debian's defaults, so an OSD behaves the same until one is set."""
    return [f"{name} = {stock[name]!r} in Debian's, {ours[name]!r} in ours" if name in ours
            else f"{name} missing from ours" for name in sorted(stock) if ours.get(name) != stock[name]]


def swap_package(cluster: Cluster, *apt_args: str, want: str) -> str:
    """Stop the OSD, change ceph-osd with apt, start it again on the same store."""
    cluster.stop_osd()
    apt_install(*apt_args)
    now = installed_version("ceph-osd")
    if now != want:
        raise NodeError(f"after apt-get install {' '.join(apt_args)} ceph-osd is {now}, expected {want}")
    cluster.start_osd()
    return now


def upgrade_and_downgrade(spec: NodeSpec, cluster: Cluster, result: dict) -> None:
    add_apt_line(spec.apt_line)
    stock = installed_version("ceph-osd")
    candidate = candidate_version("ceph-osd")
    result.update(stock=stock, candidate=candidate, steps=[])
    if "+perf" not in candidate:
        raise NodeError(f"apt-get install ceph-osd would pick {candidate}, not a +perfN version from our repository")
    result["steps"].append(f"apt picks {candidate} over Debian's {stock}")
    cluster.up()
    objects = Objects(cluster, spec.state_dir)
    objects.write("stock")
    objects.verify("written by Debian's ceph-osd")
    stock_defaults = osd_defaults()

    now = swap_package(cluster, "ceph-osd", want=candidate)
    unloadable = programs_that_cannot_load("ceph-osd")
    if unloadable:
        raise NodeError(f"ceph-osd {now}: programs that cannot load: {'; '.join(unloadable)}")
    result["steps"].append(f"every program of ceph-osd {now} finds its libraries and symbols (ldd -r)")
    our_defaults = osd_defaults()
    changed = changed_defaults(stock_defaults, our_defaults)
    if changed:
        raise NodeError(f"ceph-osd {now} starts with other defaults than Debian's {stock}: {'; '.join(changed)}. "
                        "A release must configure as Debian's build does (a build that reused an earlier "
                        "configure's CMake cache does not); rebuild it clean")
    added = sorted(set(our_defaults) - set(stock_defaults))
    result["added_options"] = added
    result["steps"].append(f"ceph-osd {now} starts with Debian's value of all {len(stock_defaults)} of its options"
                           f"{f', and adds {len(added)}' if added else ''}")
    objects.verify(f"after the upgrade to {now}")
    objects.write("perf")
    objects.verify(f"written by {now}")
    result["steps"].append(f"upgraded to {now}: data intact, new writes intact")

    now = swap_package(cluster, "--allow-downgrades", f"ceph-osd={stock}", want=stock)
    objects.verify(f"after the downgrade to {now}")
    result["steps"].append(f"downgraded to {now}: all {len(objects.sums)} objects intact")


def main():
    spec = NodeSpec.load(Path(sys.argv[1]))
    cluster = Cluster(spec)
    with recorded(Path(spec.state_dir)) as result:
        try:
            upgrade_and_downgrade(spec, cluster, result)
        except NodeError as e:
            raise NodeError(f"{e}; {cluster.cause() if cluster.procs else ''}")
        finally:
            cluster.down()
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
