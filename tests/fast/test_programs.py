"""Every program in ci/ and bench/ says what it does with --help and exits 0,
doing nothing else: a thin entry point imports its module cleanly, and
ci/setup-host (which installs packages) stops before apt-get."""
import os
import subprocess
import tempfile
import unittest
from pathlib import Path

from tests.helpers import REPO


def programs() -> list[Path]:
    return sorted(p for d in ("ci", "bench") for p in (REPO / d).iterdir()
                  if p.is_file() and os.access(p, os.X_OK))


class ProgramsTest(unittest.TestCase):
    def test_every_program_answers_help_with_exit_0(self):
        with tempfile.TemporaryDirectory() as tmp:
            # a program that would install or fetch instead of answering meets these first on PATH
            for tool in ("apt-get", "apt", "mmdebstrap"):
                stub = Path(tmp) / tool
                stub.write_text("#!/bin/sh\necho \"$0 was run for --help\" >&2\nexit 99\n")
                stub.chmod(0o755)
            env = {**os.environ, "PATH": f"{tmp}:{os.environ['PATH']}"}
            for program in programs():
                with self.subTest(program=program.name):
                    r = subprocess.run([str(program), "--help"], capture_output=True, text=True, timeout=60, env=env)
                    self.assertEqual(r.returncode, 0, f"{program.relative_to(REPO)} --help: {r.stderr[-2000:]}")
                    self.assertTrue(r.stdout.strip(), f"{program.relative_to(REPO)} --help printed nothing")


if __name__ == "__main__":
    unittest.main()
