"""ci/patch-tests' part inside the build root (python3 stdlib only), run by
scripts/patch-tests.sh once the tree is configured: it needs the compile
database.

  patch_tests_helper.py BUILD_DIR     reads $PLAN and $OUT; writes $OUT/results.json

It compiles each translation unit the series touches with its real compile
command (-fsyntax-only), and builds and runs each unit test against Debian's
stock libceph-common (the patched units under test linked into the test).
"""
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

GTEST = "src/googletest/googletest"
CCACHE = shutil.which("ccache")


def googletest_ran_none(output: str) -> str | None:
    """Why a test run that exited 0 proved nothing, or None: googletest exits
    0 when its filter matches no test (a test case the series does not have
    yet, a misspelt name), so a run must report at least one passed test."""
    passed = [int(n) for n in re.findall(r"^\[  PASSED  \] (\d+) tests?\.", output, re.M)]
    if not passed:
        return "no googletest summary in its output"
    if max(passed) == 0:
        return "no test ran (does its --gtest_filter name tests this source has?)"
    return None


def load_database(build: Path) -> dict:
    """compile_commands.json by resolved source path: Ceph's, and the bundled
    RocksDB's (an ExternalProject with a database of its own) where its
    configure step has run."""
    entries = []
    for db in (build / "compile_commands.json", build / "src" / "rocksdb" / "compile_commands.json"):
        if db.exists():
            entries += json.loads(db.read_text())
    return {str(Path(e["directory"], e["file"]).resolve()): e for e in entries}


def command_for(db: dict, path) -> tuple[list[str], str] | None:
    """(argv, directory) of the database's command for `path`, or None."""
    e = db.get(str(Path(path).resolve()))
    if not e:
        return None
    return shlex.split(e["command"]), e["directory"]


def retarget(argv: list[str], src, out) -> list[str]:
    """The database's command for one file, turned into one for `src` -> `out`
    (an object without the original -O/-g), or a -fsyntax-only check of `src`
    when `out` is None."""
    a = list(argv)
    for flag in ("-o", "-MT", "-MF"):  # output and depfile arguments
        while flag in a:
            i = a.index(flag)
            del a[i:i + 2]
    a = [x for x in a if x not in ("-c", "-MD")]
    a = [x for x in a if not x.endswith((".cc", ".cpp", ".c")) or x.startswith("-")]
    a = [x for x in a if not re.match(r"^-(O[0-9s]|g[0-9]?)$", x)] if out else a
    return a + (["-c", str(src), "-o", str(out)] if out else ["-fsyntax-only", str(src)])


class Checks:
    def __init__(self, build: Path, out: Path, plan: dict, tree: Path):
        self.build, self.out, self.plan, self.tree = build, out, plan, tree
        self.db = load_database(build)
        self.objects = {}  # (source, compile command) -> object file, shared between tests

    def run(self, argv, cwd, logname, timeout):
        t0 = time.monotonic()
        with open(self.out / logname, "w") as f:
            try:
                rc = subprocess.run(argv, cwd=cwd, stdout=f, stderr=subprocess.STDOUT, timeout=timeout).returncode
            except subprocess.TimeoutExpired:
                rc = "timeout"
        return rc, round(time.monotonic() - t0, 1)

    def compile_touched(self) -> list[dict]:
        def check(src: str) -> dict:
            cmd = command_for(self.db, self.tree / src)
            name = src.replace("/", "_") + ".log"
            if not cmd:
                return {"file": src, "rc": "not built by the minimal tree", "log": None}
            rc, secs = self.run(retarget(cmd[0], self.tree / src, None), cmd[1], name, 900)
            return {"file": src, "rc": rc, "seconds": secs, "log": name}
        # one check per core: each is a compiler run of its own (the OSD's
        # largest units take 25 to 40 s each)
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            return list(pool.map(check, self.plan["touched"]))

    def compile_object(self, name, path, argv, cwd):
        """One -O0 object of a test, compiled with `argv` retargeted to `path`."""
        gtest = self.tree / GTEST
        extra = ["-O0", "-g0", f"-I{gtest}/include", f"-I{gtest}", f"-I{self.tree}/src/googletest/googlemock/include"]
        key = (str(path), tuple(argv))
        if key in self.objects:
            return self.objects[key], None
        digest = hashlib.sha1("\0".join(key[1]).encode()).hexdigest()[:8]
        obj = Path("/tmp/unit/objects") / f"{str(path).strip('/').replace('/', '_')}.{digest}.o"
        obj.parent.mkdir(parents=True, exist_ok=True)
        logname = f"{name}.{path.name}.compile.log"
        # through ccache (its directory is in the persistent cache): a test
        # that carries the bundled RocksDB compiles a few hundred sources
        launcher = [CCACHE] if CCACHE and Path(argv[0]).name != "ccache" else []
        rc, _ = self.run(launcher + retarget(argv, path, obj) + extra, cwd, logname, 900)
        if rc != 0:
            return None, f"compiling {path} failed (exit {rc}); see {logname}"
        self.objects[key] = obj
        return obj, None

    def units_of(self, t: dict, base: tuple) -> list[tuple]:
        """(source, argv, directory) of every object the test links."""
        if t.get("ceph_common", True):
            support = [s for s in self.plan["test_support"]
                       if not (t.get("own_main") and s == "src/test/unit.cc")]
        else:
            # a test of the bundled RocksDB alone: googletest's own main
            support = [] if t.get("own_main") else [f"{GTEST}/src/gtest_main.cc"]
        units = [(self.tree / src, *base) for src in t["sources"]]
        # the test's main, what libceph-common does not export, and
        # googletest: each with its own command where the configured tree
        # builds it (as upstream links them into its tests, from libraries
        # built with their own flags), so that every test shares one object
        units += [(self.tree / src, *(command_for(self.db, self.tree / src) or base))
                  for src in [*support, f"{GTEST}/src/gtest-all.cc"]]
        if t.get("rocksdb_library"):
            # the bundled RocksDB's library, each source with its own command
            units += [(Path(src), argv, cwd) for src, (argv, cwd) in self.rocksdb_library()]
        if t.get("options_table"):
            # the generated table is compiled with its own command from the configured tree
            generated = self.build / "src/common/options/global_options.cc"
            units += [(generated, *(command_for(self.db, generated) or base)),
                      (self.tree / "src/common/options/build_options.cc", *base),
                      (Path(self.plan["options_table_source"]), *base)]
        return units

    def rocksdb_library(self) -> list[tuple[str, tuple[list[str], str]]]:
        """(source, (argv, directory)) of each source of the bundled RocksDB's
        library, from the database its own configure step wrote: every .cc
        under src/rocksdb but its tools, tests and benchmarks, and its own
        copy of googletest (the test has the tree's)."""
        root = (self.tree / "src" / "rocksdb").resolve()
        # and build_version.cc, which its configure writes into its build dir
        generated = (self.build / "src" / "rocksdb" / "build_version.cc").resolve()
        skip = ("tools/", "test_util/", "db_stress_tool/", "benchmarks/", "microbench/", "examples/", "java/",
                "third-party/")
        found = []
        for path in sorted(self.db):
            rel = Path(path).relative_to(root).as_posix() if Path(path).is_relative_to(root) else None
            if path != str(generated) and (rel is None or rel.startswith(skip)
                                           or rel.endswith(("_test.cc", "_bench.cc", "testutil.cc"))):
                continue
            found.append((path, command_for(self.db, path)))
        return found

    def link(self, name: str, objects: list, cwd: str, t: dict) -> str | None:
        work = Path("/tmp/unit") / name
        work.mkdir(parents=True, exist_ok=True)
        if t.get("ceph_common", True):
            lib = self.plan["libceph_common"]
            # -rdynamic: export the test's definitions, so that the library's
            # references through its GOT (ceph_options, the options table the
            # library reads) resolve to them; the library's direct calls to its
            # own functions cannot be redirected
            libs = ["-rdynamic", lib, "-Wl,-rpath," + str(Path(lib).parent),
                    "-lboost_thread", "-lboost_iostreams", "-lfmt"]
        else:
            libs = []
        libs += [f"-l{x}" for x in t.get("libraries", [])]
        rc, _ = self.run(["c++", "-o", str(work / name), *map(str, objects), *libs, "-lpthread", "-ldl"],
                         cwd, f"{name}.link.log", 300)
        return None if rc == 0 else f"linking failed (exit {rc}); see {name}.link.log"

    def unit_test(self, t: dict) -> dict:
        name = t["name"]
        entry = {"name": name, "patch": t["patch"]}
        base = command_for(self.db, self.tree / t["flags_from"])
        if not base:
            return {**entry, "rc": "no compile command for " + t["flags_from"]}
        # what a source outside Ceph's compile database (RocksDB's own) needs on top
        extra = [f.replace("{tree}", str(self.tree)) for f in t.get("extra_flags", [])]
        base = (base[0] + extra, base[1])
        t0 = time.monotonic()
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            built = list(pool.map(lambda unit: self.compile_object(name, *unit), self.units_of(t, base)))
        failed = next((err for _, err in built if err), None) or self.link(name, [o for o, _ in built], base[1], t)
        entry["build_seconds"] = round(time.monotonic() - t0, 1)
        if failed:
            return {**entry, "rc": failed}
        rc, secs = self.run([f"/tmp/unit/{name}/{name}", *t.get("args", [])], base[1], f"{name}.run.log",
                            t["timeout_seconds"])
        if rc == 0:
            why = googletest_ran_none((self.out / f"{name}.run.log").read_text(errors="replace"))
            if why:
                rc = f"{why}; see {name}.run.log"
        return {**entry, "rc": rc, "run_seconds": secs}


def main():
    out = Path(os.environ["OUT"])
    checks = Checks(Path(sys.argv[1]), out, json.loads(os.environ["PLAN"]), Path.cwd())
    results = {"options_ok": (out / "options.rc").read_text().strip() == "0",
               "compiles": checks.compile_touched(),
               "tests": [checks.unit_test(t) for t in checks.plan["tests"]]}
    (out / "results.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
