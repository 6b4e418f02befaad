"""A command that leaves an orphan and asks whether it was reaped, for
tests/fast/test_reaping.py. It starts a daemon the classic way (a child that
forks and exits at once, as `ceph-osd` does when it daemonizes), whose
grandchild then exits too. The grandchild is nobody's child but the init's
it was handed to: exit 0 once it is gone from /proc, exit 3 if it is still
there (a zombie, unreaped) when the deadline passes."""
import os
import sys
import time


def start_daemon() -> int:
    """The grandchild's pid, once it and its parent have both exited."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:
        grandchild = os.fork()
        if grandchild == 0:
            os._exit(0)
        os.write(write_end, str(grandchild).encode())
        os._exit(0)
    os.close(write_end)
    grandchild = int(os.read(read_end, 32))
    os.waitpid(child, 0)
    return grandchild


def gone(pid: int) -> bool:
    """A zombie keeps its /proc entry until it is reaped."""
    return not os.path.exists(f"/proc/{pid}")


def main() -> None:
    orphan = start_daemon()
    deadline = time.monotonic() + float(sys.argv[1])
    while not gone(orphan):
        if time.monotonic() > deadline:
            print(f"orphan {orphan} was not reaped", flush=True)
            sys.exit(3)
        time.sleep(0.01)  # polling /proc for the reaper's effect; the deadline bounds it
    sys.exit(0)


if __name__ == "__main__":
    main()
