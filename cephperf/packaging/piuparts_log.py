"""Reading piuparts' log: which tests passed, and where a run failed.

piuparts (1.6, --log-level dump) writes one entry per line, "<elapsed>
LEVEL: message", with a command's output indented below it. It runs
commands in its chroot ("Starting command: ['chroot', DIR, ...]") and stops
at the first that fails ("Command failed (status=N): [...]") or at the first
check that fails ("FAIL: ..."). The phase is told by the commands: the
packages' installation, the archive's version installed by name before an
upgrade, the upgrade, their removal and their purge; what comes before the
first installation is piuparts' own set-up of its chroot, where a failure
means it could not run (the archive unreachable, say), not that the
packages are bad.
"""
from __future__ import annotations

import ast
import re

INSTALL_PURGE, UPGRADE = "install and purge", "install, upgrade and purge"
PASSED = {"PASS: Installation and purging test.": INSTALL_PURGE,
          "PASS: Installation, upgrade and purging tests.": UPGRADE}
SETUP = "set-up of piuparts' chroot"
# check_results()'s findings, made after the purge
AFTER_PURGE = ("FAIL: Package purging left files", "FAIL: After purging files have",
               "FAIL: Installed diversions", "FAIL: Existing diversions")
# piuparts.debian.org's scripts (--scriptsdir), by the step piuparts runs them at
SCRIPT_PHASES = (("pre_test", "setup"), ("post_setup", "setup"), ("post_chroot_unpack", "setup"),
                 ("is_testable", "setup"), ("pre_install", "install"), ("post_install", "install"),
                 ("pre_remove", "remove"), ("post_remove", "remove"), ("post_purge", "purge"),
                 ("post_test", "purge"))
# ERROR entries that are not failures: piuparts logs its warnings at that level
NOT_FAILURES = ("WARN", "piuparts run ends", "Command failed (status=")
# a failed command is shown up to this length (a removal names every dependency)
COMMAND_CHARS = 300
ENTRY = re.compile(r"^\d+m\d+(?:\.\d+)?s (DEBUG|DUMP|INFO|WARNING|ERROR|CRITICAL): (.*)$")
# how many lines of a failed command's output a report repeats
OUTPUT_LINES = 20


def entries(text: str) -> list[tuple[str, str, list[str]]]:
    """(level, message, the indented lines below it) for each entry; a line
    that is neither (a traceback printed on stdout) is an entry of level ''."""
    out: list[tuple[str, str, list[str]]] = []
    for line in text.splitlines():
        m = ENTRY.match(line)
        if m:
            out.append((m.group(1), m.group(2), []))
        elif line.startswith("  ") and out:
            out[-1][2].append(line[2:])
        elif line.strip():
            out.append(("", line, []))
    return out


def command_of(message: str) -> list[str] | None:
    """The argv a "Starting command:" or "Command failed ...:" entry names."""
    start = message.find("[")
    if start < 0:
        return None
    try:
        argv = ast.literal_eval(message[start:])
    except (ValueError, SyntaxError):
        return None
    return [str(a) for a in argv] if isinstance(argv, list) else None


def phase_of(argv: list[str], test: str) -> str | None:
    """The phase a command in piuparts' chroot belongs to; None for one that
    says nothing of it (a query, a clean-up)."""
    if len(argv) < 3 or argv[0] != "chroot":
        return "setup" if argv[:1] == ["tar"] else None
    cmd = argv[2:]
    if cmd[0].startswith("tmp/scripts/"):
        script = cmd[0].rsplit("/", 1)[1]
        return next((phase for prefix, phase in SCRIPT_PHASES if script.startswith(prefix)), None)
    if cmd[:1] == ["dpkg"] and "--purge" in cmd and "--pending" not in cmd:
        return "purge"
    if cmd[:1] == ["dpkg"] and "-i" in cmd:
        return "upgrade" if test == UPGRADE else "install"
    if cmd[:1] != ["apt-get"]:
        return None
    if "update" in cmd or "dist-upgrade" in cmd:
        return "setup"
    if "remove" in cmd:
        return "remove"
    if "install" in cmd:
        args = cmd[cmd.index("install") + 1:]
        if any(a.endswith("-") for a in args):
            return "remove"  # restoring the selections: apt-get install dep- ...
        if any(a.endswith(".deb") for a in args):
            return "upgrade" if test == UPGRADE else "install"
        return "install of the archive's version" if test == UPGRADE else "install"
    return None


def shown_failure(message: str, argv: list[str]) -> str:
    """A failed command as a reader wants it: what ran in the chroot and its
    status, without the chroot's temporary path."""
    status = message[len("Command failed ("):].split(")", 1)[0]
    inside = " ".join(argv[2:] if argv[:1] == ["chroot"] else argv) or message
    if len(inside) > COMMAND_CHARS:
        inside = inside[:COMMAND_CHARS].rsplit(" ", 1)[0] + " ..."
    return f"{inside} failed ({status})" + (" in piuparts' chroot" if argv[:1] == ["chroot"] else "")


def output_tail(below: list[str]) -> list[str]:
    """The last lines of a command's output, blank ones dropped."""
    return [line for line in below if line.strip()][-OUTPUT_LINES:]


def judge(text: str, exit_code: int) -> dict:
    """The run's verdict from its log and exit code:
    pass   every test passed (both, the upgrade included);
    fail   a test failed in a phase of the packages' own (exit 1 of the stage);
    error  piuparts could not run or did not finish its tests (exit 2)."""
    test, phase, passed, version = INSTALL_PURGE, "setup", [], ""
    failure: dict | None = None
    for level, message, below in entries(text):
        if message.startswith("piuparts version "):
            version = message.split()[2]
        elif message in PASSED:
            passed.append(PASSED[message])
            test = UPGRADE
        elif message.startswith("Starting command:"):
            argv = command_of(message)
            phase = (phase_of(argv, test) if argv else None) or phase
        elif failure is None and level == "ERROR" and message.startswith("Command failed (status="):
            argv = command_of(message) or []
            failed_phase = phase_of(argv, test) or phase
            failure = {"test": test, "phase": failed_phase,
                       "lines": [shown_failure(message, argv), *output_tail(below)]}
        elif failure is None and level == "ERROR" and message.startswith("FAIL:"):
            failed_phase = "purge" if message.startswith(AFTER_PURGE) else phase
            failure = {"test": test, "phase": failed_phase, "lines": [message, *output_tail(below)]}
        elif failure is None and level == "" and message.startswith("Piuparts caught exception"):
            failure = {"test": test, "phase": "setup", "lines": [message]}
        elif failure is None and level == "ERROR" and not message.startswith(NOT_FAILURES):
            # "Could not install ceph-osd.", "Terminating command due to ..."
            failure = {"test": test, "phase": phase, "lines": [message, *output_tail(below)]}
    tail = [m for _, m, _ in entries(text)][-5:]
    result = {"piuparts": version, "passed": passed, "exit": exit_code}
    if failure:
        verdict = "error" if failure["phase"] == "setup" else "fail"
        return {**result, "verdict": verdict, **failure}
    if exit_code == 0 and passed == [INSTALL_PURGE, UPGRADE] and "PASS: All tests." in tail:
        return {**result, "verdict": "pass"}
    why = "the upgrade test did not run (apt knows none of the packages)" \
        if exit_code == 0 and passed == [INSTALL_PURGE] else "piuparts stopped without naming a failure"
    return {**result, "verdict": "error", "test": test, "phase": phase, "lines": [why, *tail]}


def summary(result: dict) -> str:
    """One line for the console and the stage's error."""
    if result["verdict"] == "pass":
        return f"piuparts {result['piuparts']}: both tests passed ({'; '.join(result['passed'])})"
    where = "could not run" if result["verdict"] == "error" else "failed"
    head = f"piuparts {result['piuparts']} {where}: the {result['test']} test, phase {result['phase']}"
    return head + ":\n  " + "\n  ".join(result["lines"])


def render(result: dict, packages: list[dict], seconds: float, date: str) -> str:
    """report.md: the package set, the tests and their verdict."""
    lines = [f"# piuparts on the package set ({result['verdict']}, {seconds:.0f} s, {date})", "",
             f"piuparts {result['piuparts'] or '(version not logged)'}, trixie, plain chroot; "
             "its whole log: `piuparts.log`.", "", "| package | version |", "|---|---|"]
    lines += [f"| {p['package']} | {p['version']} |" for p in packages]
    lines += ["", "| test | result |", "|---|---|"]
    for test in (INSTALL_PURGE, UPGRADE):
        state = "passed" if test in result["passed"] else \
            f"**{result['verdict']}** in phase {result['phase']}" if result.get("test") == test else "not run"
        lines.append(f"| {test} | {state} |")
    if result["verdict"] != "pass":
        lines += ["", "```", *result["lines"], "```"]
    return "\n".join(lines) + "\n"
