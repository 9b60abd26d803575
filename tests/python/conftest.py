"""Puts suites/fixtures on sys.path, as generate.py does, so tests import gen.* and observer."""
import pathlib
import sys

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "suites" / "fixtures"
if str(FIXTURES) not in sys.path:
    sys.path.insert(0, str(FIXTURES))
