"""Stages are programs only: what two stages share lives in the library below
them (cephperf/packaging/, cephperf/bench/, cephperf/*.py), never in one stage
imported by another, and the library imports no stage."""
import unittest

from tests.helpers import REPO

from cephperf.imports import direct_imports

STAGES = "cephperf.stages"


def modules(folder: str) -> list[str]:
    return sorted(".".join(p.relative_to(REPO).with_suffix("").parts) for p in (REPO / folder).rglob("*.py")
                  if p.name != "__init__.py")


class LayoutTest(unittest.TestCase):
    def test_no_stage_imports_another_stage(self):
        for module in modules("cephperf/stages"):
            others = sorted(m for m in direct_imports(module) if m.startswith(STAGES + ".") and m != module)
            self.assertEqual(others, [], f"{module} imports stage module(s) {others}: move what they share "
                                         "into the library")

    def test_the_library_imports_no_stage(self):
        for module in modules("cephperf"):
            if module.startswith(STAGES + "."):
                continue
            stages = sorted(m for m in direct_imports(module) if m.startswith(STAGES + "."))
            self.assertEqual(stages, [], f"{module} imports stage module(s) {stages}")


if __name__ == "__main__":
    unittest.main()
