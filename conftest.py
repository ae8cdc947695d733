"""Shared by every test and doctest (tests/, docs/, README.md and the docstrings under privframe/)."""

from __future__ import annotations

import pytest
from _pytest.doctest import DoctestItem

from privframe import _repeats


@pytest.fixture(autouse=True)
def _fresh_repeat_counts() -> None:
    """Each test (each doctest file) starts with no plain calls counted: the hint at the 5th plain call on the
    same data (privframe._repeats) is about one user's run, not about the tests that ran before."""
    _repeats.forget()


@pytest.fixture(autouse=True)
def _doctests_of_the_accounting_extra(request: pytest.FixtureRequest) -> None:
    """A doctest that shows dp-accounting's view of a ledger (``pf.event_pld``) needs the ``accounting`` extra:
    skipped where it is not installed (the README's test line, and so CI, installs it)."""
    if isinstance(request.node, DoctestItem) and "event_pld(" in (request.node.dtest.docstring or ""):
        pytest.importorskip("dp_accounting")
