"""PID 1 of a root run's new mount and PID namespaces (python3 stdlib only).

  enter_root.py SPEC_JSON

Mounts an overlay over the cached root (its changes thrown away with the
run), /proc, /dev, /dev/pts, /dev/shm, /tmp, /sys read-only, the bind mounts
at their host paths and the scratch overlays; chroots, runs the command with
the spec's environment and working directory, and exits with its status.
Everything mounted vanishes with the namespace when this process ends.

As PID 1 it is every orphan's parent: a daemon that forks and exits, or a
daemon whose parent has gone, is reparented to it. It reaps them all while
the command runs; a zombie left unreaped would still answer `kill -0`, and a
teardown that waits for a pid to go (upstream's kill_daemons, our own
checks) would wait forever.
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


def run_as_init(argv: list, env: dict, preexec_fn=None) -> int:
    """Run argv and reap every child this process is given until argv exits;
    its exit code (128 + N for a signal N), as a shell reports it."""
    command = None

    # Handlers go in before the command starts, so that it starts with default
    # dispositions (an ignored signal would be inherited across exec).
    def forward(signum, frame):
        if command is not None:
            os.kill(command, signum)

    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, forward)
    # An ignored SIGCHLD, were it inherited from whatever started the run,
    # would have the kernel reap every child itself: there would be no status
    # to wait for, the command's exit code included.
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    # The Popen object is kept: dropped, its finaliser would poll, and so reap,
    # the command before the loop below could see its status.
    proc = subprocess.Popen(argv, env=env, preexec_fn=preexec_fn)
    command = proc.pid
    while True:
        # any child: the command or an orphan handed to this process
        pid, status = os.waitpid(-1, 0)
        if pid == command:
            command = None
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode if proc.returncode >= 0 else 128 - proc.returncode


def main():
    spec = json.loads(sys.argv[1])
    merged = mount_all(spec)

    def enter():
        os.chroot(merged)
        os.chdir(spec["cwd"])

    rc = run_as_init(spec["argv"], spec["env"], enter)
    subprocess.run(["umount", "-R", "-l", merged])
    sys.exit(rc)


if __name__ == "__main__":
    main()
