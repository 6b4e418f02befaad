"""The runtime root's PID 1 loop, run_as_init, as a child subreaper: the
orphans of the command it runs are handed to it, as a PID namespace hands
them to its first process. For tests/fast/test_reaping.py:

    python3 -m tests.fast.reaping_init COMMAND...
"""
import ctypes
import sys

from cephperf.runtime.enter_root import run_as_init

PR_SET_CHILD_SUBREAPER = 36


def main() -> None:
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
    sys.exit(run_as_init(sys.argv[1:], None))


if __name__ == "__main__":
    main()
