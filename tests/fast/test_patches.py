"""Our patch series, the patches waiting for the next release (patches/next/)
and the Debian delta: every patch listed exists and carries a DEP-3 header,
and patches/README.md is short and has one card per patch, in series order,
each with its headings."""
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


README = REPO / "patches" / "README.md"
MAX_LINES = 450
HEADINGS = ("Does", "Why", "Test", "Effect", "Review")


def cards(text):
    """The cards of patches/README.md: {patch name: the card's text}, in order."""
    out = {}
    for part in re.split(r"^### ", text, flags=re.M)[1:]:
        heading, _, body = part.partition("\n")
        out[heading.split()[0]] = body
    return out


def card_faults(text, names):
    """What is wrong with text as patches/README.md for the patches names."""
    faults = []
    if len(text.splitlines()) >= MAX_LINES:
        faults.append(f"{len(text.splitlines())} lines, not under {MAX_LINES}")
    found = cards(text)
    if [n for n in found if n in names] != list(names):
        faults.append(f"cards {[n for n in found if n in names]} are not one per patch in series order {list(names)}")
    for name in names:
        for h in HEADINGS:
            if name in found and not re.search(rf"^- \*\*{h}:\*\*", found[name], re.M):
                faults.append(f"{name}: no **{h}:**")
    return faults


class CardsTest(unittest.TestCase):
    def test_one_short_card_per_patch(self):
        names = [p.name for s in SERIES[:2] for p in listed(s)]
        self.assertEqual(card_faults(README.read_text(), names), [])

    def test_a_missing_card_or_heading_or_a_long_file_is_named(self):
        names = [p.name for p in listed(SERIES[0])]
        text = README.read_text()
        last = names[-1]
        no_card = re.sub(rf"^### {re.escape(last)}\n(?:.+\n)*", "", text, flags=re.M)
        self.assertTrue(any("series order" in f for f in card_faults(no_card, names)))
        no_review = text.replace("- **Review:**", "- **Checked:**", 1)
        self.assertEqual(card_faults(no_review, names), [f"{names[0]}: no **Review:**"])
        long = text + "\n" * MAX_LINES
        self.assertEqual(card_faults(long, names), [f"{len(long.splitlines())} lines, not under {MAX_LINES}"])


if __name__ == "__main__":
    unittest.main()
