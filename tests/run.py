"""Runs one test module for ctest and says in its exit code what happened:

    python3 -m tests.run tests.fast.test_pins

0: every test passed. 1: a test failed or errored, or none ran. 77 (ctest's
SKIP_RETURN_CODE, set for every test in CMakeLists.txt): none failed, but at
least one was skipped. A module is one ctest test, and ctest gives it one
status: a module that skipped any test did not check all it is there to
check (tests/root/test_io_mock.py skips the run on our packages where none
are built, and still runs its check of the stock OSD), so ctest reports it
Skipped, not Passed; unittest's lines above name the test and the reason.

Label fast runs with a private $CEPH_PERF_CACHE, a temporary directory
removed afterwards: tests of our tools on fixtures must never write into the
persistent cache, where the roots, downloads and builds of real runs live.
The programs a test starts inherit it. Within this process a write under the
cache that was set before (or its default) fails the run, whatever the code
that made it believes the cache to be.
"""
from __future__ import annotations

import os
import sys
import tempfile
import unittest
from contextlib import contextmanager
from pathlib import Path

from cephperf.paths import cache_dir

EXIT_PASSED, EXIT_FAILED, EXIT_SKIPPED = 0, 1, 77

# audit events that change what lies at their first path (or both paths)
CHANGING = {"os.mkdir": 1, "os.remove": 1, "os.rmdir": 1, "os.truncate": 1, "os.chmod": 1, "os.chown": 1,
            "os.utime": 1, "shutil.rmtree": 1, "os.rename": 2, "os.symlink": 2, "os.link": 2}
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


class CacheWrite(RuntimeError):
    pass


def within(path: str, dirs: set[str]) -> bool:
    return any(path == d or path.startswith(d + os.sep) for d in dirs)


class CacheGuard:
    """An audit hook that refuses every write under `real` (but not under
    `private`, should the temporary directory lie inside it) and remembers
    it: a test may catch the error, the run still fails."""

    def __init__(self, real: Path, private: Path):
        self.real = {os.path.abspath(real), os.path.realpath(real)}
        self.private = {os.path.abspath(private), os.path.realpath(private)}
        self.writes: list[str] = []

    def under(self, path) -> bool:
        if not isinstance(path, (str, bytes, os.PathLike)):
            return False  # a file descriptor
        p = os.path.abspath(os.fsdecode(path))
        return within(p, self.real) and not within(p, self.private)

    def __call__(self, event: str, args: tuple) -> None:
        if event == "open":
            path, mode, flags = args
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or \
                (isinstance(flags, int) and flags & WRITE_FLAGS)
            targets = [path] if writing else []
        elif event in CHANGING:
            targets = list(args[:CHANGING[event]])
        else:
            return
        for path in targets:
            if self.under(path):
                self.writes.append(f"{event} {os.fsdecode(path)}")
                raise CacheWrite(f"a fast test tried to write into the persistent cache: {event} {os.fsdecode(path)}")


@contextmanager
def private_cache():
    """$CEPH_PERF_CACHE set to a temporary directory; writes under the real one refused."""
    real = cache_dir()
    with tempfile.TemporaryDirectory(prefix="ceph-perf-test-cache-") as tmp:
        guard = CacheGuard(real, Path(tmp))
        os.environ["CEPH_PERF_CACHE"] = tmp
        sys.addaudithook(guard)
        yield guard


@contextmanager
def nullguard():
    yield None


def run(module: str) -> int:
    label = module.split(".")[1] if module.count(".") >= 2 else ""
    with private_cache() if label == "fast" else nullguard() as guard:
        suite = unittest.defaultTestLoader.loadTestsFromName(module)
        result = unittest.TextTestRunner(verbosity=2).run(suite)
    if guard and guard.writes:
        print("FAILED: tried to write into the persistent cache (refused):", *guard.writes, sep="\n  ",
              file=sys.stderr)
        return EXIT_FAILED
    if not result.wasSuccessful():
        return EXIT_FAILED
    if result.testsRun == 0:
        print(f"FAILED: {module} ran no test", file=sys.stderr)
        return EXIT_FAILED
    if result.skipped:
        print(f"SKIPPED: {len(result.skipped)} of {result.testsRun} test(s):", file=sys.stderr)
        for test, reason in result.skipped:
            print(f"  {test.id()}: {reason}", file=sys.stderr)
        return EXIT_SKIPPED
    return EXIT_PASSED


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python3 -m tests.run tests.LABEL.test_NAME")
    sys.exit(run(sys.argv[1]))
