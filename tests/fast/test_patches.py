"""Our patch series, the patches waiting for the next release (patches/next/)
and the Debian delta: every patch listed exists and carries a DEP-3 header."""
import re
import unittest

from tests.helpers import REPO

SERIES = [REPO / "patches" / "series", REPO / "patches" / "next" / "series", REPO / "debian" / "delta" / "series"]


def listed(series):
    for line in series.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            yield series.parent / line


class Dep3Test(unittest.TestCase):
    def test_every_patch_is_listed_and_exists(self):
        for series in SERIES:
            names = [p.name for p in listed(series)]
            self.assertEqual(len(names), len(set(names)), f"{series}: a patch is listed twice")
            for p in listed(series):
                self.assertTrue(p.is_file(), f"{series} lists {p.name}, which does not exist")
            on_disk = {p.name for p in series.parent.glob("*.patch")}
            self.assertEqual(on_disk - set(names), set(), f"{series.parent}: patches not in {series.name}")

    def test_dep3_headers(self):
        for series in SERIES:
            for p in listed(series):
                header = p.read_text().split("\n---\n", 1)[0]
                fields = {m.group(1).lower() for m in re.finditer(r"^([A-Za-z-]+):", header, re.M)}
                self.assertTrue({"description", "subject"} & fields, f"{p.name}: no Description")
                self.assertTrue({"origin", "author", "from"} & fields, f"{p.name}: no Origin or Author")
                self.assertIn("forwarded", fields, f"{p.name}: no Forwarded")


if __name__ == "__main__":
    unittest.main()
