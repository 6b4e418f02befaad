"""ci/upstream-standalone: upstream's qa/standalone in the runtime root, a short smoke.

One quick test of the list, run by the stage as the release runs it, in
stock mode and in mixed mode with Debian's stock ceph-osd as the candidate
(a check of the test: CI has no release build): both must pass, and the
wrapper must have started the even OSD ids as stock and the odd ones as
the candidate. Then the stock result comes from the cache. Then a broken
variant of the candidate, which must fail the stage: Debian's ceph-osd
whose BlueStore fails every read of an object's data with EIO (upstream's
injection), in the mixed mode (osd.1 and osd.3), on an erasure-coded test
stock passes; the stage names the test and its report says stock passed
it. The stage runs in a session of its own, bounded; on a timeout or a
failure it is stopped with SIGTERM (it stops its root runs and removes
their state), and the test removes its report and the broken candidate;
nothing is left behind either way.
"""
import json
import os
import re
import signal
import subprocess
import tempfile
import unittest
from pathlib import Path

from tests.helpers import CI, scratch_dir

from cephperf import paths
from cephperf.common import rmtree

# three OSDs (ids 0 and 2 stock, 1 the candidate in the mixed mode); 93 s on
# stock here with two other tests beside it and an LTO build running (2026-12-04)
SCRIPT, TEST = "osd/osd-rep-recov-eio.sh", "TEST_rep_recovery_unfound"
BOUND = 1500

# The broken candidate: Debian's ceph-osd whose BlueStore fails every read of
# an object's data with EIO (one read in bluestore_debug_random_read_err x 100:
# 0.01 is every one), in pools above 0 only: its maps and superblock read fine.
# (With bluestore_debug_omit_block_device_write the OSD never wrote its maps
# and crashed reading one at boot, after the helpers' 300 s wait for it.) In
# the mixed mode osd.1 and osd.3 run it; the k=2 m=1 PG's acting set here is
# [3, 1, 2], so with the test's own EIO on shard 0 only shard 2 reads and the
# get it expects to succeed fails. The whole test took 35 s here with stock's
# result cached, 71 s without, beside an LTO build (2026-12-05).
BROKEN_SCRIPT, BROKEN_TEST = "erasure-code/test-erasure-eio.sh", "TEST_rados_get_subread_eio_shard_0"
BROKEN_ID = "erasure-code/test-erasure-eio/TEST_rados_get_subread_eio_shard_0"
BROKEN_OSD = '#!/bin/sh\nexec /usr/bin/ceph-osd --bluestore_debug_random_read_err=0.01 "$@"\n'
# stock (when not cached) and the mixed test, each about 35 s; each is stopped by the stage at 600 s
BROKEN_BOUND = 900


def stage(*args, timeout: int = BOUND) -> subprocess.CompletedProcess:
    """The stage, stopped with SIGTERM (then SIGKILL) past `timeout`."""
    proc = subprocess.Popen([str(CI / "upstream-standalone"), *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        raise AssertionError(f"ci/upstream-standalone {' '.join(map(str, args))} went over {timeout} s:\n{err[-4000:]}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def leftovers() -> list[str]:
    return sorted(str(p) for p in paths.bench_state("x").parent.glob("upstream-standalone-*")
                  if not (p.name.rpartition("-")[2].isdigit() and Path(f"/proc/{p.name.rpartition('-')[2]}").exists()))


class UpstreamStandaloneSmoke(unittest.TestCase):
    def test_stock_and_mixed_with_stock_as_the_candidate(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "report"
            r = stage("--candidate", "debian", "--mode", "mixed", "--script", SCRIPT, "--test", TEST,
                      "--rerun-stock", "--out", out)
            self.assertEqual(r.returncode, 0, r.stderr[-4000:])
            self.assertIn("stock: 0 results cached, 1 to run", r.stderr)
            report = json.loads((out / "report.json").read_text())
            self.assertEqual(report["verdict"], "pass")
            (row,) = report["tests"]
            self.assertEqual(row["id"], "osd/osd-rep-recov-eio/TEST_rep_recovery_unfound")
            self.assertEqual(row["verdicts"], {"stock": "pass", "mixed": "pass"})
            self.assertEqual(row["results"]["stock"]["osd_calls"], {})  # stock mode: no wrapper
            calls = row["results"]["mixed"]["osd_calls"]
            self.assertEqual(calls["stock"]["run"], ["0", "2"])
            self.assertEqual(calls["candidate"]["run"], ["1"])
            self.assertEqual(calls["candidate"]["mkfs"], ["1"])
            self.assertIn("| osd/osd-rep-recov-eio/TEST_rep_recovery_unfound | passed", (out / "report.md").read_text())
            # stock's result is kept: stock alone now runs nothing
            again = stage("--mode", "stock", "--script", SCRIPT, "--test", TEST, "--out", Path(tmp) / "stock",
                          timeout=300)
            self.assertEqual(again.returncode, 0, again.stderr[-4000:])
            self.assertIn("stock: 1 results cached, 0 to run", again.stderr)
        self.assertEqual(leftovers(), [])

    def test_a_candidate_whose_store_fails_reads_fails_a_test_stock_passes(self):
        candidate = Path(tempfile.mkdtemp(dir=scratch_dir()))
        self.addCleanup(rmtree, candidate)
        (candidate / "ceph-osd").write_text(BROKEN_OSD)
        (candidate / "ceph-osd").chmod(0o755)
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "report"
            r = stage("--candidate", candidate, "--mode", "mixed", "--script", BROKEN_SCRIPT, "--test", BROKEN_TEST,
                      "--out", out, timeout=BROKEN_BOUND)
            self.assertEqual(r.returncode, 1, r.stderr[-4000:])
            self.assertIn("upstream-standalone: fail: 1 tests in modes stock, mixed", r.stderr)
            self.assertIn(f"\n  {BROKEN_ID} (mixed): fail\n", r.stderr)
            report = json.loads((out / "report.json").read_text())
            (row,) = report["tests"]
            self.assertEqual(row["verdicts"], {"stock": "pass", "mixed": "fail"})
            self.assertEqual(row["results"]["mixed"]["osd_calls"]["candidate"]["run"], ["1", "3"])
            # stock passed it (from the cache or run now), the mixed cluster failed it
            self.assertRegex((out / "report.md").read_text(), rf"\| {re.escape(BROKEN_ID)} \| passed, \d+ s( \(cached\))? "
                             r"\| \*\*FAIL\*\*: failed \(exit 1\), \d+ s \| fail \|")
            # the get the test expects to succeed, and the candidate's injected EIO behind it
            self.assertRegex(row["results"]["mixed"]["tail"],
                             r"error getting pool-jerasure/obj-eio-\d+-0: \(5\) Input/output error")
            logs = out / "logs" / "mixed" / BROKEN_ID / "archive" / "log"
            self.assertTrue(any("inject random EIO" in (logs / f"osd.{n}.log").read_text() for n in (1, 3)))
        self.assertEqual(leftovers(), [])

    def test_bad_inputs_are_named_on_one_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            bad = Path(tmp) / "list.toml"
            bad.write_text('[[script]]\npath = "osd/no-such-script.sh"\ntest_seconds = 60\ncovers = "nothing"\n')
            for args, said in ((["--list", bad, "--mode", "stock"], f"{bad}: [[script]] osd/no-such-script.sh: no such script"),
                               (["--candidate", tmp, "--script", SCRIPT], "expected 'debian', a directory of .debs")):
                r = stage(*args, "--out", Path(tmp) / "report", timeout=300)
                self.assertEqual(r.returncode, 2, r.stderr)
                errors = [line for line in r.stderr.splitlines() if line.startswith("upstream-standalone: error:")]
                self.assertEqual(len(errors), 1, r.stderr)
                self.assertIn(said, errors[0])
                self.assertNotIn("Traceback", r.stderr)


if __name__ == "__main__":
    unittest.main()
