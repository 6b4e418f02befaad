"""PID 1 of a root run's new mount and PID namespaces (python3 stdlib only).

  enter_root.py SPEC_JSON

Mounts an overlay over the cached root (its changes thrown away with the
run), /proc, /dev, /dev/pts, /dev/shm, /tmp, /sys read-only, the bind mounts
at their host paths and the scratch overlays; chroots, runs the command with
the spec's environment and working directory, and exits with its status.
Everything mounted vanishes with the namespace when this process ends.
"""
import json
import os
import signal
import subprocess
import sys


def mount(*args):
    subprocess.run(["mount", *args], check=True)


def mount_all(spec: dict) -> str:
    """Everything the run sees; returns the merged root's path."""
    run = spec["rundir"]
    merged, upper, work = run + "/merged", run + "/upper", run + "/work"
    for d in (merged, upper, work):
        os.makedirs(d, exist_ok=True)
    mount("-t", "overlay", "overlay", "-o", f"lowerdir={spec['lower']},upperdir={upper},workdir={work}", merged)
    mount("-t", "proc", "proc", merged + "/proc")
    mount("--bind", "/dev", merged + "/dev")
    os.makedirs(merged + "/dev/pts", exist_ok=True)
    mount("--bind", "/dev/pts", merged + "/dev/pts")
    mount("-t", "tmpfs", "tmpfs", merged + "/dev/shm")
    mount("-t", "tmpfs", "-o", "mode=1777", "tmpfs", merged + "/tmp")
    mount("-t", "sysfs", "-o", "ro", "sysfs", merged + "/sys")
    for b in spec["binds"]:
        os.makedirs(merged + b, exist_ok=True)
        mount("--bind", b, merged + b)
    for host, inside in spec.get("mounts", {}).items():
        os.makedirs(merged + inside, exist_ok=True)
        mount("--bind", host, merged + inside)
    for i, d in enumerate(spec["scratch"]):
        up, wk = f"{run}/scratch{i}/upper", f"{run}/scratch{i}/work"
        os.makedirs(up)
        os.makedirs(wk)
        mount("-t", "overlay", "overlay", "-o", f"lowerdir={d},upperdir={up},workdir={wk}", merged + d)
    try:
        with open("/etc/resolv.conf", "rb") as src, open(merged + "/etc/resolv.conf", "wb") as dst:
            dst.write(src.read())
    except OSError:
        pass
    return merged


def main():
    spec = json.loads(sys.argv[1])
    merged = mount_all(spec)

    def enter():
        os.chroot(merged)
        os.chdir(spec["cwd"])

    # Handlers go in before the command starts, so that it starts with default
    # dispositions (an ignored signal would be inherited across exec).
    child = None

    def forward(signum, frame):
        if child is not None:
            child.send_signal(signum)

    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, forward)
    child = subprocess.Popen(spec["argv"], env=spec["env"], preexec_fn=enter)
    rc = child.wait()
    subprocess.run(["umount", "-R", "-l", merged])
    sys.exit(rc if rc >= 0 else 128 - rc)


if __name__ == "__main__":
    main()
