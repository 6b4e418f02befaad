"""The runtime root's PID 1 (cephperf/runtime/enter_root.py) reaps every
orphan it is handed while the command runs: a daemon that forks and exits is
gone, not a zombie that `kill -0` still sees (upstream's qa/standalone
kill_daemons waits for exactly that). The kernel hands orphans to a PID
namespace's first process; here a child subreaper stands in for it, so the
test needs no namespace and no root."""
import subprocess
import sys
import unittest
from pathlib import Path

from tests.helpers import REPO

PROBE = Path(__file__).with_name("orphan_exits.py")


class ReapingTest(unittest.TestCase):
    def run_init(self, command: list[str]) -> subprocess.CompletedProcess:
        """run_as_init(command) in a process that orphans are handed to, as PID 1 would be."""
        init = [sys.executable, "-m", "tests.fast.reaping_init", *command]
        return subprocess.run(init, cwd=REPO, capture_output=True, text=True, timeout=60)

    def test_an_orphan_that_exits_is_reaped(self):
        done = self.run_init([sys.executable, str(PROBE), "5"])
        self.assertEqual(done.returncode, 0, f"the init left a zombie: {done.stdout}{done.stderr}")

    def test_the_commands_exit_code_is_kept(self):
        self.assertEqual(self.run_init(["sh", "-c", "exit 7"]).returncode, 7)
        self.assertEqual(self.run_init(["sh", "-c", "kill -TERM $$"]).returncode, 128 + 15)


if __name__ == "__main__":
    unittest.main()
