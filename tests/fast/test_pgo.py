"""Profile-guided optimisation: the counts' names as debian/rules' flags make
them (compiled with the host's GCC), their packing, their verification
against cmake/pgo.toml, and the flag checks that refuse an instrumented build."""
import hashlib
import os
import re
import subprocess
import tarfile
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from cephperf import paths
from cephperf.packaging import audit, flags, pgo
from cephperf.common import StageError

DELTA = paths.DEBIAN / "delta" / "profile-guided-profile.patch"
OBJ = "obj-x86_64-linux-gnu/src/osd/CMakeFiles/osd.dir"
SOURCE = "int hot(int x) { if (x > 3) return x * 2; return x + 1; }\n" \
         "int main(int c, char **v) { int s = 0; for (int i = 0; i < 100; i++) s += hot(i + c); return s & 1; }\n"


def rules_flags(name: str, curdir: Path, pgo_dir: Path | None = None) -> list[str]:
    """debian/rules' pgo_flags of one branch, as the delta adds them ('generate' or 'use')."""
    added = "\n".join(line[1:] for line in DELTA.read_text().splitlines() if line.startswith("+"))
    joined = added.replace("\\\n", " ")
    found = [m.group(1) for m in re.finditer(r"^pgo_flags = (.*)$", joined, re.M)]
    [line] = [f for f in found if f"-fprofile-{name}" in f]
    line = line.replace("$(CURDIR)", str(curdir))
    if pgo_dir is not None:
        line = line.replace("$(pgo_dir)", str(pgo_dir))
    return line.split()


def compile_in(tree: Path, extra: list[str], source: str = SOURCE) -> subprocess.CompletedProcess:
    (tree / "src").mkdir(parents=True, exist_ok=True)
    (tree / "src" / "m.c").write_text(source)
    (tree / OBJ).mkdir(parents=True, exist_ok=True)
    # cwd and object path as CMake's Makefiles give them
    return subprocess.run(["gcc", "-O2", *extra, "-c", str(tree / "src" / "m.c"), "-o", "CMakeFiles/osd.dir/m.c.o"],
                          cwd=tree / "obj-x86_64-linux-gnu" / "src" / "osd", capture_output=True, text=True)


class CountsNamingTest(unittest.TestCase):
    """Counts written by the instrumented build in one directory are found by
    the pkg.ceph.pgo build in another, and stale ones stop it."""

    def test_counts_travel_between_trees_and_stale_ones_stop_the_build(self):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            gen_tree, use_tree, prefix = tmp / "a" / "src", tmp / "b" / "src", tmp / "prefix"
            gen = rules_flags("generate", gen_tree)
            written_to = Path(next(f for f in gen if f.startswith("-fprofile-generate=")).split("=", 1)[1])
            # GCOV_PREFIX moves the compiled-in directory under a writable one, as ci/pgo-train does
            r = compile_in(gen_tree, [f for f in gen if f != "-g0"])
            self.assertEqual(r.returncode, 0, r.stderr)
            obj_dir = gen_tree / OBJ
            r = subprocess.run(["gcc", *gen, str(obj_dir / "m.c.o"), "-o", str(tmp / "m")], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            subprocess.run([str(tmp / "m")], env={**os.environ, "GCOV_PREFIX": str(prefix)}, timeout=60)
            found = pgo.counts_files(prefix / written_to.relative_to("/"))
            self.assertEqual([f.name for f in found], [OBJ.replace("/", "#") + "#m.c.gcda"])
            # packed and unpacked where the use build's rules put them
            archive = tmp / pgo.ARCHIVE
            pgo.pack(found, archive, 0)
            pgo_dir = use_tree / "obj-x86_64-linux-gnu" / "ceph-perf-pgo"
            pgo_dir.mkdir(parents=True)
            with tarfile.open(archive) as tar:
                tar.extractall(pgo_dir, filter="data")
            use = rules_flags("use", use_tree, pgo_dir)
            # Found and used in another directory: counts not found would only
            # warn, so -Werror=missing-profile makes that fail here; the source
            # path's part of GCC's check differs, which the rules make a warning.
            r = compile_in(use_tree, [f for f in use if f != "-Wno-missing-profile"] + ["-Werror=missing-profile"])
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("source locations for function", r.stderr)
            with_counts = (use_tree / OBJ / "m.c.o").read_bytes()
            r = compile_in(use_tree, [f for f in use if not f.startswith("-fprofile-use")])
            self.assertNotEqual((use_tree / OBJ / "m.c.o").read_bytes(), with_counts, "the counts changed nothing")
            # The same counts for changed code: GCC drops them, saying so with
            # a coverage-mismatch warning, which ci/build-release fails on.
            changed = SOURCE.replace("if (x > 3) return x * 2;", "if (x > 3) { if (x > 7) return 0; return x * 2; }")
            r = compile_in(use_tree, use, changed)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("-Wcoverage-mismatch", r.stderr)
            self.assertIn("does not match its profile data", r.stderr)


class PackTest(unittest.TestCase):
    def test_the_same_counts_pack_to_the_same_bytes_flat_and_sorted(self):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            sums = []
            for run, when in (("one", 1_000_000), ("two", 2_000_000)):
                d = tmp / run / "deep" / "dir"
                d.mkdir(parents=True)
                for name in ("b#x.cc.gcda", "a#y.cc.gcda"):
                    (d / name).write_bytes(name.encode() * 10)
                    os.utime(d / name, (when, when))
                packed = pgo.pack(pgo.counts_files(tmp / run), tmp / f"{run}.tar.xz", 1234)
                sums.append(packed["sha256"])
                self.assertEqual(packed["counts_files"], 2)
            self.assertEqual(sums[0], sums[1])
            with tarfile.open(tmp / "one.tar.xz") as tar:
                self.assertEqual(tar.getnames(), ["a#y.cc.gcda", "b#x.cc.gcda"])
                self.assertEqual({m.mtime for m in tar.getmembers()}, {1234})


class VerifiedCountsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.pin = Path(self.tmp.name) / "pgo.toml"
        self.pins = {"upstream": {"version": "1"}, "debian": {"version": "1-1"}, "files": []}
        self.archive = Path(self.tmp.name) / pgo.ARCHIVE
        self.archive.write_bytes(b"counts")
        for patcher in (mock.patch.object(paths, "PGO_PIN", self.pin),
                        mock.patch.object(paths, "PGO_COUNTS", self.archive)):
            patcher.start()
            self.addCleanup(patcher.stop)

    def write_pin(self, sha256: str, trained_on: str | None = None):
        self.pin.write_text(f'[profile]\nfile = "{pgo.ARCHIVE}"\nsha256 = "{sha256}"\nsize = 6\n'
                            f'trained_on = "{trained_on or pgo.compiled_sources_key(self.pins)}"\n')

    def test_no_pin_carries_nothing(self):
        path, why = pgo.verified_counts(self.pins)
        self.assertIsNone(path)
        self.assertIn("no training counts pinned", why)

    def test_the_pinned_file_is_carried(self):
        self.write_pin(hashlib.sha256(b"counts").hexdigest())
        path, _ = pgo.verified_counts(self.pins)
        self.assertEqual(path, self.archive)

    def test_a_file_that_is_not_the_pinned_one_is_an_error_naming_it(self):
        self.write_pin("0" * 64)
        with self.assertRaises(StageError) as e:
            pgo.verified_counts(self.pins)
        self.assertIn(str(self.archive), str(e.exception))
        self.assertIn("ci/pgo-train --pin", str(e.exception))

    def test_pinned_counts_that_are_absent_are_not_carried(self):
        self.write_pin(hashlib.sha256(b"counts").hexdigest())
        self.archive.unlink()
        path, why = pgo.verified_counts(self.pins)
        self.assertIsNone(path)
        self.assertIn("is absent", why)

    def test_counts_of_other_sources_are_not_carried(self):
        self.write_pin(hashlib.sha256(b"counts").hexdigest(), trained_on="f" * 64)
        path, why = pgo.verified_counts(self.pins)
        self.assertIsNone(path)
        self.assertIn("trained on other sources", why)


class CompiledSourcesKeyTest(unittest.TestCase):
    """The key the counts are pinned to follows what is applied and compiled,
    not the notes kept beside the patches."""

    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        root = Path(tmp.name)
        self.patches, debian = root / "patches", root / "debian"
        for d, patch in ((self.patches, "a.patch"), (debian / "delta", "flags.patch")):
            d.mkdir(parents=True)
            (d / "series").write_text(f"{patch}\n")
            (d / patch).write_text("--- a/x\n+++ b/x\n")
        (self.patches / "README.md").write_text("notes\n")
        (self.patches / "unit-tests.toml").write_text("[a]\n")
        self.pins = {"upstream": {"version": "1"}, "debian": {"version": "1-1"}, "files": []}
        for patcher in (mock.patch.object(paths, "PATCHES", self.patches),
                        mock.patch.object(paths, "DEBIAN", debian)):
            patcher.start()
            self.addCleanup(patcher.stop)

    def test_notes_beside_the_patches_leave_the_key_alone(self):
        before = pgo.compiled_sources_key(self.pins)
        (self.patches / "README.md").write_text("notes, measured again\n")
        (self.patches / "unit-tests.toml").write_text("[a]\n[b]\n")
        self.assertEqual(pgo.compiled_sources_key(self.pins), before)

    def test_patches_waiting_for_the_next_release_leave_the_key_alone(self):
        # patches/next/ holds measured patches the series does not apply yet:
        # they must not make the pinned counts stale before they join it
        before = pgo.compiled_sources_key(self.pins)
        waiting = self.patches / "next"
        waiting.mkdir()
        (waiting / "series").write_text("b.patch\n")
        (waiting / "b.patch").write_text("--- a/y\n+++ b/y\n")
        self.assertEqual(pgo.compiled_sources_key(self.pins), before)

    def test_a_patch_the_series_or_the_delta_changes_the_key(self):
        before = pgo.compiled_sources_key(self.pins)
        for f in (self.patches / "a.patch", self.patches / "series", paths.DEBIAN / "delta" / "flags.patch"):
            with self.subTest(changed=f.name):
                old = f.read_text()
                f.write_text(old + "+one more line\n")
                self.assertNotEqual(pgo.compiled_sources_key(self.pins), before)
                f.write_text(old)
        self.assertEqual(pgo.compiled_sources_key(self.pins), before)


class FlagChecksTest(unittest.TestCase):
    GEN = ["c++", "-O2", "-g", "-DNDEBUG", "-fprofile-generate=/var/lib/ceph-perf/pgo", "-c", "x.cc"]
    USE = ["c++", "-O2", "-g", "-DNDEBUG", "-fprofile-use=/p", "-fprofile-partial-training", "-c", "x.cc"]

    def test_an_instrumented_command_fails_every_case(self):
        e = flags.effective(self.GEN)
        self.assertEqual(e["profile"], "generate")
        self.assertIn("instrumented", flags.unit_problems(e, "Ceph", False, False))

    def test_the_pgo_case_requires_profile_use(self):
        self.assertIn("profile_use", flags.unit_problems(flags.effective(self.USE[:4] + ["-c", "x.cc"]),
                                                         "Ceph", False, False, True))
        self.assertEqual(flags.unit_problems(flags.effective(self.USE), "Ceph", False, False, True), [])

    def test_the_audit_refuses_instrumented_units_and_requires_use_when_asked(self):
        units = [{"name": "/build/src/src/osd/OSD.cc", "producer": "GNU C++17 14.2.0 -O2 -g -fprofile-generate=/v"},
                 {"name": "<artificial>", "producer": "GNU GIMPLE 14.2.0 -O2 -g"}]
        seen, problems = audit.profile_problems("ceph-osd", units, ["src"], False)
        self.assertEqual(seen, {"generate": 1, "none": 1})
        self.assertIn("-fprofile-generate", problems[0])
        units[0]["producer"] = "GNU C++17 14.2.0 -O2 -g -fprofile-use=/p"
        seen, problems = audit.profile_problems("ceph-osd", units, ["src"], True)
        self.assertEqual(len(problems), 1)
        self.assertIn("without -fprofile-use", problems[0])


if __name__ == "__main__":
    unittest.main()


class RequireCountsTest(unittest.TestCase):
    """A release with PGO (the default) and no counts of its sources stops
    before building, saying how to retrain; a build without PGO goes on."""

    def test_stale_counts_stop_a_pgo_build_with_how_to_retrain(self):
        with mock.patch.object(pgo, "verified_counts", return_value=(None, "they were trained on other sources")):
            for build_profiles in ("", "pkg.ceph.osd-only", "pkg.ceph.lto pkg.ceph.pgo"):
                with self.subTest(build_profiles=build_profiles), self.assertRaises(StageError) as e:
                    pgo.require_counts({}, build_profiles)
                self.assertEqual(e.exception.code, 1)
                self.assertIn("ci/pgo-train --pin", str(e.exception))
                self.assertIn("pkg.ceph.nopgo", str(e.exception))
            for build_profiles in ("pkg.ceph.nopgo", "pkg.ceph.nolto", "pkg.ceph.pgo-generate"):
                pgo.require_counts({}, build_profiles)  # no counts needed

    def test_fitting_counts_let_it_build(self):
        with mock.patch.object(pgo, "verified_counts", return_value=(Path("counts"), "carried")):
            pgo.require_counts({}, "")
