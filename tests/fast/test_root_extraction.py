"""A cached root is made and extracted once, however many runs ask together.

Two runs that find no extracted root (the gate's concurrent runs, a stage
beside a test) must not both extract: they would share the .new directory,
and the later one would remove the root the first already runs on. The
first extraction here holds until the second run has asked (an event, not a
sleep); with the extraction serialised the second then finds the first's
result and extracts nothing.
"""
import tarfile
import tempfile
import threading
import unittest
from pathlib import Path
from unittest import mock

from cephperf.packaging import roots
from cephperf.packaging.roots import Root

WAIT_SECONDS = 10


def fake_root(cache: Path) -> Root:
    root = object.__new__(Root)
    root.kind, root.key, root.dir = "runtime", "0123456789abcdef", cache
    root.tarball = cache / "runtime-0123456789abcdef.tar"
    root.extracted = cache / "runtime-0123456789abcdef"
    return root


class HeldRuns:
    """Counts the runs of a step that are under way at once; the first is
    held until `release` is set (or WAIT_SECONDS pass), so that a second run
    that is not serialised would overlap it."""

    def __init__(self, release: threading.Event):
        self.release, self.lock = release, threading.Lock()
        self.active = self.most = self.total = 0

    def run(self, step):
        with self.lock:
            self.active += 1
            self.total += 1
            self.most = max(self.most, self.active)
            first = self.total == 1
        if first:
            self.release.wait(WAIT_SECONDS)
        try:
            return step()
        finally:
            with self.lock:
                self.active -= 1


class ConcurrentExtractionTest(unittest.TestCase):
    def test_two_runs_asking_at_once_extract_once(self):
        with tempfile.TemporaryDirectory() as tmp:
            cache = Path(tmp)
            payload = cache / "etc-os-release"
            payload.write_text("trixie\n")
            root = fake_root(cache)
            with tarfile.open(root.tarball, "w") as tar:
                tar.add(payload, arcname="etc/os-release")

            asked = threading.Semaphore(0)
            second_asked = threading.Event()
            extractions = HeldRuns(second_asked)
            real_run = roots.run

            def create():
                asked.release()
                return True

            def counting_run(argv, what, **kw):
                # the first extraction is held until the second run has asked
                return extractions.run(lambda: real_run(argv, what, **kw))

            def watch():
                for _ in range(2):
                    asked.acquire(timeout=WAIT_SECONDS)
                second_asked.set()

            results, errors = [], []

            def ask():
                try:
                    results.append(root.ensure_extracted())
                except Exception as e:  # noqa: BLE001 - reported below
                    errors.append(e)

            root.create = create
            with mock.patch.object(roots, "run", counting_run), mock.patch.object(roots, "log", lambda *a: None):
                threads = [threading.Thread(target=f) for f in (watch, ask, ask)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join(3 * WAIT_SECONDS)
            self.assertEqual(errors, [])
            self.assertEqual(extractions.most, 1, "two extractions ran at once")
            self.assertEqual(extractions.total, 1, "the second run extracted again")
            self.assertEqual(results, [root.extracted, root.extracted])
            self.assertEqual((root.extracted / "etc" / "os-release").read_text(), "trixie\n")
            self.assertFalse(root.extracted.with_name(root.extracted.name + ".new").exists())


class ConcurrentCreationTest(unittest.TestCase):
    """Two runs that find no tarball must not both run mmdebstrap: each would
    remove the other's part file as stale. The first creation holds until the
    second run has looked for the tarball; the second then waits for it."""

    def test_two_runs_asking_at_once_create_once(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = fake_root(Path(tmp))
            root.conf, root.entries = {"suite": "trixie"}, []
            root.contents_args = lambda deps: []
            lock = threading.Lock()
            askers, second_asked = set(), threading.Event()
            creations = HeldRuns(second_asked)
            real_current = Root.tarball_current

            def current(self):
                with lock:
                    askers.add(threading.current_thread())
                    if len(askers) == 2:
                        second_asked.set()
                return real_current(self)

            def mmdebstrap(argv, what, **kw):
                part = next(Path(a) for a in argv if ".part-" in str(a))
                creations.run(lambda: part.write_bytes(b"tar"))

            hits, errors = [], []

            def ask():
                try:
                    hits.append(root.create())
                except Exception as e:  # noqa: BLE001 - reported below
                    errors.append(e)

            with mock.patch.object(Root, "tarball_current", current), \
                    mock.patch.object(roots, "run", mmdebstrap), \
                    mock.patch.object(roots, "apt_proxies", dict), \
                    mock.patch.object(roots, "sources_lines", lambda entries: ""), \
                    mock.patch.object(roots, "log", lambda *a: None):
                threads = [threading.Thread(target=ask) for _ in range(2)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join(3 * WAIT_SECONDS)
            self.assertEqual(errors, [])
            self.assertEqual(creations.most, 1, "two mmdebstrap runs at once")
            self.assertEqual(creations.total, 1, "the second run created the root again")
            self.assertEqual(sorted(hits), [False, True])
            self.assertEqual(root.tarball.read_bytes(), b"tar")
            self.assertEqual(list(Path(tmp).glob("*.part-*")), [])


if __name__ == "__main__":
    unittest.main()
