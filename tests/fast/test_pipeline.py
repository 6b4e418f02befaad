"""The release's pipeline is declared once (cmake/pipeline.toml) and the rest
derives from it: the README's chain and docs/stages.md's chain and table
cannot drift from it, each stage's program is the thin entry point of the
declared module, the CMake targets are one per stage, and a check stage's
up-to-date key covers the code it runs, found from the imports."""
import os
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from tests.helpers import REPO

from cephperf import pipeline
from cephperf.common import StageError, load_pins
from cephperf.packaging import release_build, release_osd, roots, source_tree
from cephperf.packaging.dpkg_build import build_environment
from cephperf.stages import build_debs, store_test
from cephperf.imports import closure, module_file

DECLARED = [s.name for s in pipeline.load()]


def chain_block(text: str, after: str) -> list[str]:
    """The stages of the indented `a → b → ...` block that follows the line holding `after`."""
    lines = text[text.index(after):].splitlines()[1:]
    start = next(i for i, line in enumerate(lines) if "→" in line)
    block = []
    for line in lines[start:]:
        if not line.strip():
            break
        block.append(line.strip())
    return [name.strip() for name in " ".join(block).split("→")]


def table_stages(text: str, heading: str) -> list[str]:
    """The first column of the table under `heading`."""
    lines = text[text.index(heading):].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append(line.split("|")[1].strip().strip("`"))
    return rows


class DocumentsTest(unittest.TestCase):
    def test_the_readme_chain_is_the_declared_one(self):
        readme = (REPO / "README.md").read_text()
        self.assertEqual(chain_block(readme, "It runs these stages in order"), DECLARED)

    def test_docs_stages_chain_and_table_are_the_declared_ones(self):
        stages = (REPO / "docs" / "stages.md").read_text()
        self.assertEqual(chain_block(stages, "## The release chain"), DECLARED)
        self.assertEqual(table_stages(stages, "## What each reads and writes"), DECLARED)

    def test_the_table_names_each_stages_program(self):
        stages = (REPO / "docs" / "stages.md").read_text()
        lines = stages[stages.index("## What each reads and writes"):].splitlines()
        rows = {line.split("|")[1].strip().strip("`"): line.split("|")[2] for line in lines
                if line.startswith("| `")}
        for s in pipeline.load():
            self.assertIn(f"`{s.program}", rows[s.name], f"docs/stages.md: the row of {s.name} names another program")


class DeclarationTest(unittest.TestCase):
    def test_each_program_is_the_thin_entry_point_of_its_module(self):
        for s in pipeline.load():
            program = REPO / s.program
            self.assertTrue(program.is_file() and program.stat().st_mode & 0o111, f"{program}: not a program")
            self.assertIn(f"from {s.module} import main", program.read_text(), f"{program} runs another module")
            self.assertIsNotNone(module_file(s.module), s.module)

    def write(self, text: str) -> Path:
        tmp = Path(tempfile.mkdtemp())
        self.addCleanup(subprocess.run, ["rm", "-rf", str(tmp)])
        (tmp / "pipeline.toml").write_text(text)
        return tmp / "pipeline.toml"

    def stage(self, name: str, follows: str | None = None, **extra) -> str:
        fields = {"name": name, "program": "ci/x", "module": "cephperf.stages.source", "args": [], "outputs": [],
                  "skip": "itself", "what": "w", **({"follows": follows} if follows else {}), **extra}
        return "[[stage]]\n" + "".join(f"{k} = {self.toml(v)}\n" for k, v in fields.items())

    @staticmethod
    def toml(value) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, list):
            return "[" + ", ".join(f'"{v}"' for v in value) + "]"
        return f'"{value}"'

    def test_the_order_is_the_one_follows_makes(self):
        path = self.write(self.stage("c", "b") + self.stage("a") + self.stage("b", "a"))
        self.assertEqual([s.name for s in pipeline.load(path)], ["a", "b", "c"])

    def test_a_broken_declaration_is_named_on_one_line(self):
        cases = [
            (self.stage("a") + self.stage("b"), "exactly one stage follows none"),
            (self.stage("a") + self.stage("b", "a") + self.stage("c", "a"), "both follow a"),
            (self.stage("a") + self.stage("b", "nowhere"), "stage b: follows nowhere, which is not declared"),
            (self.stage("a") + self.stage("b", "c") + self.stage("c", "b"), "follow in a circle"),
            (self.stage("a", colour="red"), "stage a: unknown field colour"),
            (self.stage("a", args=["{nowhere}"]), "unknown placeholder(s) nowhere"),
            (self.stage("a", skip="passed"), 'inputs are given exactly when skip = "passed"'),
            (self.stage("a", inputs=["x"]), 'inputs are given exactly when skip = "passed"'),
            (self.stage("a", args=["--out", "{out}"]), "args use {out}, but there are no outputs"),
            (self.stage("a").replace('args = []', 'args = "--all"'), "args must be a list"),
            (self.stage("a").replace('args = []', 'args = [1]'), "args: every entry must be a string"),
        ]
        for text, named in cases:
            path = self.write(text)
            with self.assertRaises(StageError) as e:
                pipeline.load(path)
            self.assertIn(str(path), str(e.exception))
            self.assertIn(named, str(e.exception))
            self.assertEqual(len(str(e.exception).splitlines()), 1)

    def test_the_cmake_targets_are_one_per_stage_beside_the_hand_written_ones(self):
        text = pipeline.cmake_targets(pipeline.load())
        generated = re.findall(r"^add_custom_target\((\S+) ", text, re.M)
        self.assertEqual(generated, [s.cmake_target for s in pipeline.load()])
        for s in pipeline.load():
            self.assertIn(f"--stage {s.name} ", text)
        by_hand = re.findall(r"^add_custom_target\((\S+)", (REPO / "CMakeLists.txt").read_text(), re.M)
        self.assertEqual(sorted(by_hand), ["build-debs", "build-osd", "gate", "release"])
        self.assertEqual(set(by_hand) & set(generated), set())

    def test_the_chain_is_printed_in_order(self):
        r = subprocess.run([sys.executable, "-m", "cephperf.pipeline", "chain"], cwd=REPO, capture_output=True,
                           text=True)
        self.assertEqual(r.stdout.strip(), " → ".join(DECLARED))


class KeysTest(unittest.TestCase):
    def key_items(self, name: str) -> dict:
        """What ci/release hashes into a check stage's key: label -> value."""
        [step] = [s for s in pipeline.steps("osd-only") if s.name == name]
        captured = []
        with mock.patch.object(pipeline, "hash_inputs", side_effect=lambda items: captured.append(dict(items))):
            step.key()
        return captured[0]

    def test_audit_flags_key_covers_archive_py_which_it_imports_through_elf_py(self):
        items = self.key_items("audit-flags")
        self.assertIn("code cephperf/packaging/archive.py", items)
        self.assertIn("code cephperf/packaging/elf.py", items)
        self.assertEqual(items["code cephperf/packaging/archive.py"], REPO / "cephperf/packaging/archive.py")

    def test_every_check_stages_key_covers_its_module_and_all_it_imports(self):
        for s in pipeline.load():
            if s.skip != "passed":
                continue
            items = self.key_items(s.name)
            code = {label.removeprefix("code ") for label in items if label.startswith("code ")}
            wanted = {str(module_file(m).relative_to(REPO)) for m in closure(s.module)}
            self.assertEqual(code, wanted, s.name)
            self.assertIn(str(module_file(s.module).relative_to(REPO)), code)
            for declared in s.inputs:
                self.assertIn(f"input {declared}", items, s.name)

    def test_the_node_checks_keys_cover_the_shared_stage_and_its_library(self):
        for name in ("io-mock-test", "onode-cache-test", "rados-model-test"):
            items = self.key_items(name)
            for f in ("cephperf/stages/node_check.py", "cephperf/node_checks.py", "cephperf/nodes.py",
                      "cephperf/bench/rados_workload.py"):
                self.assertIn(f"code {f}", items, name)
            self.assertIn("input cmake/node-checks.toml", items, name)


class OwnKeysTest(unittest.TestCase):
    """A stage that skips its own work keys it on its code the same way."""

    def test_the_source_trees_key_covers_the_code_that_assembles_it(self):
        [items] = self.capture(source_tree, lambda: source_tree.tree_inputs(source_tree.Sources(), load_pins()))
        for module in ("source_tree", "fetch", "archive", "series", "pgo", "changelog"):
            self.assertIn(f"code cephperf/packaging/{module}.py", items)
        self.assertNotIn("code cephperf/stages/source.py", items, "the tree is the library's, whoever asks for it")

    def capture(self, module, call):
        """The items of every hash_inputs call `call` makes through `module`."""
        captured = []
        with mock.patch.object(module, "hash_inputs", side_effect=lambda items: captured.append(dict(items)) or "k"):
            call()
        return captured

    def test_the_source_packages_key_covers_the_code_that_makes_it(self):
        environment = build_environment({}, "source", 2)
        [items] = self.capture(build_debs, lambda: build_debs.build_key("tree", "source", environment))
        self.assertIn("code cephperf/stages/build_debs.py", items)
        self.assertIn("code cephperf/packaging/changelog.py", items)

    def test_a_release_builds_checks_are_keyed_on_their_code_and_its_build_on_its_arguments(self):
        environment = build_environment({}, "osd-only", 2)
        build, checks = self.capture(release_build, lambda: release_build.release_keys(
            REPO / "cmake/pins.toml", "osd-only", environment))
        for module in ("release_build", "blhc", "lto_warnings", "pgo"):
            self.assertIn(f"code cephperf/packaging/{module}.py", checks)
        self.assertIn("code cephperf/packaging/dpkg_build.py", build)
        # a change to the checks' code re-judges a finished build, never redoes it
        self.assertNotIn("code cephperf/packaging/release_build.py", build)

    def test_a_release_equivalent_osd_is_keyed_on_the_code_that_builds_it(self):
        environment = build_environment({}, "osd-only", 2)
        [items] = self.capture(release_osd, lambda: release_osd.osd_key(REPO / "cmake/pins.toml", environment))
        self.assertIn("code cephperf/packaging/release_osd.py", items)
        self.assertIn("code cephperf/packaging/dpkg_build.py", items)
        self.assertNotIn("code cephperf/packaging/blhc.py", items, "a check of packages does not change an OSD")

    def test_a_roots_key_names_the_mmdebstrap_command_that_makes_it(self):
        with tempfile.TemporaryDirectory() as cache, mock.patch.dict(os.environ, {"CEPH_PERF_CACHE": cache}), \
                mock.patch.object(roots, "apt_proxies", return_value={}):
            root = roots.Root("runtime")
            ran = []

            def mmdebstrap(cmd, *args, **kwargs):
                ran.append(cmd)
                raise StageError("the test stops before mmdebstrap runs", 1)

            with mock.patch.object(roots, "run", side_effect=mmdebstrap), self.assertRaises(StageError):
                root.create()
            [cmd] = ran
            # all that runs before the suite, the output and the sources is keyed
            self.assertEqual(cmd[1:cmd.index(root.conf["suite"])], root.contents_args(""))
            with mock.patch.object(roots.Root, "contents_args", lambda self, copied: ["--variant=minbase"]):
                self.assertNotEqual(roots.Root("runtime").key, root.key)

    def test_a_store_test_pass_is_keyed_on_the_code_run_inside_the_root(self):
        with tempfile.NamedTemporaryFile() as binary:
            [items] = self.capture(store_test, lambda: store_test.run_key(
                Path(binary.name), False, REPO / "cmake/store-test.toml", [], "root"))
        for f in ("stages/store_test.py", "runtime/store_test.py", "runtime/record.py", "runtime/shell.py"):
            self.assertIn(f"code cephperf/{f}", items)


class ImportsTest(unittest.TestCase):
    """cephperf/imports.py on a package of its own: every way of importing counts."""

    def test_the_closure_follows_every_kind_of_import(self):
        tmp = Path(tempfile.mkdtemp())
        self.addCleanup(subprocess.run, ["rm", "-rf", str(tmp)])
        files = {
            "cephperf/__init__.py": "",
            "cephperf/a.py": "import json\nfrom . import b\nfrom .sub.c import name\n",
            "cephperf/b.py": "def f():\n    from cephperf.sub import d  # lazy\n",
            "cephperf/sub/__init__.py": "",
            "cephperf/sub/c.py": "import cephperf.e\nname = 1\n",
            "cephperf/sub/d.py": "from ..f import g\n",
            "cephperf/e.py": "",
            "cephperf/f.py": "g = 1\n",
            "cephperf/unused.py": "",
        }
        for rel, text in files.items():
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / rel).write_text(text)
        self.assertEqual(closure("cephperf.a", tmp),
                         ["cephperf", "cephperf.a", "cephperf.b", "cephperf.e", "cephperf.f", "cephperf.sub",
                          "cephperf.sub.c", "cephperf.sub.d"])


if __name__ == "__main__":
    unittest.main()
