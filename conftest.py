"""Shared by every test and doctest (tests/, docs/, README.md and the docstrings under privframe/)."""

from __future__ import annotations

import pytest

from privframe import _repeats


@pytest.fixture(autouse=True)
def _fresh_repeat_counts() -> None:
    """Each test (each doctest file) starts with no plain calls counted: the hint at the 5th plain call on the
    same data (privframe._repeats) is about one user's run, not about the tests that ran before."""
    _repeats.forget()
