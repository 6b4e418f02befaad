"""README.md stays short (issue #70): at most 200 lines, its figures in kept
results (tests/fast/test_history.py) and its recipes in docs/recipes.md;
the patches' cards have their own limit (tests/fast/test_patches.py)."""
import unittest

from tests.helpers import REPO

README = REPO / "README.md"
MAX_LINES = 200


def too_long(text: str, limit: int = MAX_LINES) -> str | None:
    n = len(text.splitlines())
    return f"README.md has {n} lines, more than {limit}" if n > limit else None


class ReadmeSizeTest(unittest.TestCase):
    def test_readme_is_at_most_200_lines(self):
        self.assertIsNone(too_long(README.read_text()))

    def test_a_longer_one_is_named(self):
        self.assertEqual(too_long("x\n" * 201), "README.md has 201 lines, more than 200")
        self.assertIsNone(too_long("x\n" * 200))

    def test_the_recipes_it_points_to_exist(self):
        self.assertIn("docs/recipes.md", README.read_text())
        self.assertTrue((REPO / "docs" / "recipes.md").is_file())


if __name__ == "__main__":
    unittest.main()
