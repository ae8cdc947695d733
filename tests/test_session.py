"""Sessions: one total budget for every call on a dataset, charged before a call touches the data.

- GDP calls compose in mu^2; a pure call in a GDP session is charged as ``pure_dp_gdp_mu(eps)``-GDP; an
  (epsilon, delta) call in a GDP session and a non-private call are refused.
- In an (epsilon, delta) session, GDP calls are converted together at the delta the other calls leave over;
  pure and (epsilon, delta) calls compose by the approx-DP accountant (never worse than basic composition).
- A refused call costs nothing and draws nothing: the generator, the pipeline and the noise are untouched.
  So does a call rejected while its configuration or its data's schema is checked.
- A call that starts on the data is charged in full whatever its outcome: a failed PTR test (whose
  ``PTRFailed`` carries the run's ledger) and an error count.
- A session file records every call before it runs and again when it ends; reopening it restores the session.
  A refusal that needs only n (blbquant's ``min_block``) is checked before the call is admitted: free.
- The file is a hash chain of canonical JSON lines: an edited, removed, reordered, inserted or cut-short line
  and a changed header are refused; a file cut back to an earlier line or deleted is refused while its
  lock file remembers the last line, and always with an expected head; a chain rewritten with recomputed
  hashes only under a key. A resealed chain is still replayed by the rules (order, charges, the total).
  A ``privframe-session/1`` file is refused until ``Session.upgrade`` converts it.
- Four spawned processes racing on one file admit exactly what the total allows, each call once; a process
  that dies mid-call leaves its charge on file.
- ``privframe run --session FILE --session-budget SPEC`` charges each run to the file.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import multiprocessing
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import privframe as pf
import privframe.plugin as pp
from privframe.cli import main
from privframe.pipeline.build import Pipeline
from privframe.privacy.budgets import budget_to_table
from privframe.session import SessionCall

N = 2000
BOUNDS = (0.0, 1.0)


@pytest.fixture(scope="module")
def x() -> np.ndarray:
    return np.random.default_rng(0).uniform(size=N)


def _mean(session: pf.Session, x: Any, budget: pf.Budget | None, **kw: Any) -> pf.IntervalResult:
    """A CR-GS interval for the mean, charged to ``session``."""
    return session.confidence_interval(x, "mean", method="cr-gs", budget=budget, bounds=BOUNDS, **kw)  # type: ignore[arg-type]


def _privsub(session: pf.Session, x: Any, budget: pf.Budget, **kw: Any) -> pf.IntervalResult:
    """A PrivSub interval for the mean (takes pure and (epsilon, delta) budgets), charged to ``session``."""
    return session.confidence_interval(x, "mean", method="privsub", budget=budget, bounds=BOUNDS, **kw)


def _lines(path: Path) -> list[dict[str, Any]]:
    """The lines of a session file, as tables (the header first)."""
    return [json.loads(line) for line in path.read_text().splitlines()]


class Counter:
    """Counts the calls of a wrapped function."""

    def __init__(self) -> None:
        self.calls = 0

    def wrap(self, function: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return function(*args, **kwargs)

        return counted


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> Counter:
    """Counts ``Pipeline.execute`` (every run goes through it, ``Pipeline.run`` included)."""
    counter = Counter()
    monkeypatch.setattr(Pipeline, "execute", counter.wrap(Pipeline.execute))
    return counter


@pytest.fixture
def releases(monkeypatch: pytest.MonkeyPatch) -> Counter:
    """Counts ``pp.noise.release``: every exact noisy release of the standard mechanisms."""
    counter = Counter()
    monkeypatch.setattr(pp.noise, "release", counter.wrap(pp.noise.release))
    return counter


# ---------------------------------------------------------------------------------------------------------
# GDP sessions
# ---------------------------------------------------------------------------------------------------------


def test_gdp_calls_compose_in_squares_and_the_call_over_the_total_is_refused(x: np.ndarray) -> None:
    session = pf.Session(pf.GDP(1.0))
    assert session.spent is None
    assert session.remaining == pf.GDP(1.0)
    _mean(session, x, pf.GDP(0.6), rng=1)
    _mean(session, x, pf.GDP(0.6), rng=2)
    spent, remaining = session.spent, session.remaining
    assert isinstance(spent, pf.GDP)
    assert isinstance(remaining, pf.GDP)
    assert spent.mu == pytest.approx(math.sqrt(0.72), rel=1e-12)
    assert spent.delta == 0.0
    assert remaining.mu == pytest.approx(math.sqrt(1 - 0.72), rel=1e-12)
    assert [call.label for call in session.calls] == ["call 1", "call 2"]
    assert [call.outcome for call in session.calls] == ["released", "released"]
    assert [call.budget for call in session.calls] == [pf.GDP(0.6), pf.GDP(0.6)]
    assert session.fits(pf.GDP(0.52))
    assert not session.fits(pf.GDP(0.6))
    before = session.calls
    with pytest.raises(pf.BudgetError, match="nothing was run") as info:
        _mean(session, x, pf.GDP(0.6), rng=3)
    assert info.value.path == "budget"
    assert session.calls == before
    assert session.spent == spent
    # What is left still fits.
    _mean(session, x, remaining, rng=4)
    last = session.spent
    assert isinstance(last, pf.GDP)
    assert last.mu == pytest.approx(1.0, rel=1e-12)
    assert session.remaining is None
    assert "3 calls spent" in session.summary()


def test_a_refused_call_draws_nothing_and_runs_nothing(x: np.ndarray, runs: Counter, releases: Counter) -> None:
    session = pf.Session(pf.GDP(1.0))
    _mean(session, x, pf.GDP(0.8), rng=1)
    assert runs.calls == 1
    assert releases.calls >= 2  # centre and radius: the counters see real calls
    runs.calls = releases.calls = 0
    rng = np.random.default_rng(5)
    state = rng.bit_generator.state
    calls = session.calls
    with pytest.raises(pf.BudgetError, match="nothing was run"):
        _mean(session, x, pf.GDP(0.8), rng=rng)
    assert rng.bit_generator.state == state
    assert (runs.calls, releases.calls) == (0, 0)
    assert session.calls == calls
    # The same refusal through Session.run, with a prebuilt pipeline.
    pipe = Pipeline.build("mean", method="cr-gs", budget=pf.GDP(0.8), bounds=BOUNDS)
    with pytest.raises(pf.BudgetError, match="nothing was run"):
        session.run(pipe, x, rng=rng)
    assert rng.bit_generator.state == state
    assert (runs.calls, releases.calls) == (0, 0)
    assert session.calls == calls
    # An admitted call does consume the generator, so the state check above can fail.
    _mean(session, x, pf.GDP(0.6), rng=rng)
    assert rng.bit_generator.state != state
    assert runs.calls == 1


def test_regions_are_charged_like_intervals(x: np.ndarray) -> None:
    session = pf.Session(pf.GDP(1.0))
    region = session.confidence_region(x, "mean", method="cr-gs", budget=pf.GDP(0.8), bounds=BOUNDS, rng=1)
    assert isinstance(region, pf.RegionResult)
    assert session.spent == pf.GDP(0.8)
    assert session.calls[0].events == region.privacy.events
    with pytest.raises(pf.BudgetError, match="nothing was run"):
        session.confidence_region(x, "mean", method="cr-gs", budget=pf.GDP(0.8), bounds=BOUNDS, rng=2)
    assert len(session.calls) == 1


def test_pure_calls_in_a_gdp_session_are_charged_by_their_gdp_mu(x: np.ndarray) -> None:
    session = pf.Session(pf.GDP(1.0))
    _privsub(session, x, pf.PureDP(0.5), rng=1)
    mu_pure = pp.accounting.pure_dp_gdp_mu(0.5)
    assert mu_pure > 0.5  # not charged as if epsilon were mu
    assert session.spent == pf.GDP(mu_pure)
    _mean(session, x, pf.GDP(0.6), rng=2)
    spent = session.spent
    assert isinstance(spent, pf.GDP)
    assert spent.mu == pytest.approx(math.hypot(mu_pure, 0.6), rel=1e-12)


def test_approx_dp_and_non_private_calls_are_refused_by_a_gdp_session(
    x: np.ndarray, runs: Counter, releases: Counter
) -> None:
    session = pf.Session(pf.GDP(5.0, delta=1e-5))
    with pytest.raises(pf.BudgetError, match="GDP session") as info:
        _privsub(session, x, pf.ApproxDP(0.5, 1e-6), rng=1)
    assert info.value.path == "budget"
    assert not session.fits(pf.ApproxDP(0.5, 1e-6))
    assert "bootstrap" in pf.registry.names("method")
    with pytest.raises(pf.BudgetError, match="private calls only") as info:
        session.confidence_interval(x, "mean", method="bootstrap", budget=None, bounds=BOUNDS, rng=1)  # type: ignore[arg-type]
    assert info.value.path == "budget"
    with pytest.raises(pf.BudgetError, match="private calls only"):
        session.run(Pipeline.build("mean", method="bootstrap", budget=None, bounds=BOUNDS), x, rng=1)
    assert session.calls == ()
    assert session.spent is None
    assert (runs.calls, releases.calls) == (0, 0)


# ---------------------------------------------------------------------------------------------------------
# (epsilon, delta) and pure sessions
# ---------------------------------------------------------------------------------------------------------


def test_gdp_calls_in_an_approx_dp_session_are_charged_at_half_the_spare_delta(x: np.ndarray) -> None:
    """Each GDP(mu) call is charged (eps(d'), d') with d' half the delta left when it is admitted; the charges
    then add (basic composition, a valid privacy filter for adaptively chosen calls)."""
    session = pf.Session(pf.ApproxDP(6.0, 1e-5))
    _mean(session, x, pf.GDP(0.5), rng=1)
    first = pf.GDP(0.5).to_approx_dp(0.5e-5)
    assert session.calls[0].charge == pf.ApproxDP(first.epsilon, 0.5e-5)
    _mean(session, x, pf.GDP(0.5), rng=2)
    second = pf.GDP(0.5).to_approx_dp(0.25e-5)
    spent = session.spent
    assert isinstance(spent, pf.ApproxDP)
    assert spent.epsilon == pytest.approx(first.epsilon + second.epsilon, rel=1e-12)
    assert spent.delta == pytest.approx(0.75e-5, rel=1e-12)
    # An (epsilon, delta) call is charged as it is and takes its delta from what is left.
    _privsub(session, x, pf.ApproxDP(0.5, 2e-6), rng=3)
    spent = session.spent
    assert isinstance(spent, pf.ApproxDP)
    assert spent.epsilon == pytest.approx(first.epsilon + second.epsilon + 0.5, rel=1e-12)
    assert spent.delta == pytest.approx(0.95e-5, rel=1e-12)
    assert session.calls[2].charge == pf.ApproxDP(0.5, 2e-6)


def test_a_gdp_call_needs_spare_delta_in_an_approx_dp_session(x: np.ndarray) -> None:
    session = pf.Session(pf.PureDP(10.0))
    with pytest.raises(pf.BudgetError, match="delta"):
        _mean(session, x, pf.GDP(0.5), rng=1)
    assert session.calls == ()


def test_repeated_pure_calls_compose_no_worse_than_basic_composition(x: np.ndarray) -> None:
    session = pf.Session(pf.ApproxDP(2.0, 1e-5))
    k, eps = 4, 0.3
    for seed in range(k):
        _privsub(session, x, pf.PureDP(eps), rng=seed)
    spent = session.spent
    assert isinstance(spent, (pf.ApproxDP, pf.PureDP))
    assert eps <= spent.epsilon <= k * eps * (1 + 1e-12)
    assert (spent.delta if isinstance(spent, pf.ApproxDP) else 0.0) <= 1e-5


def test_a_pure_session_admits_exactly_what_basic_composition_fits(x: np.ndarray, runs: Counter) -> None:
    session = pf.Session(pf.PureDP(1.0))
    for seed in range(4):
        assert session.fits(pf.PureDP(0.25))
        _privsub(session, x, pf.PureDP(0.25), rng=seed)
    assert session.spent == pf.PureDP(1.0)
    assert session.remaining is None
    assert runs.calls == 4
    with pytest.raises(pf.BudgetError, match="nothing was run"):
        _privsub(session, x, pf.PureDP(0.25), rng=5)
    assert runs.calls == 4
    assert len(session.calls) == 4
    # An (epsilon, delta) call cannot fit a pure total either.
    assert not pf.Session(pf.PureDP(1.0)).fits(pf.ApproxDP(0.1, 1e-9))


@pytest.mark.parametrize(
    ("total", "budget", "match"),
    [
        # delta alone overflows: epsilon is far from spent, and the message says so rather than "remaining 4-DP"
        (
            pf.ApproxDP(5.0, 1e-6),
            pf.ApproxDP(1.0, 1e-6),
            r"over its total \(5, 1e-06\)-DP: delta would be 2e-06 > 1e-06; the remaining delta is 0: "
            r"a pure-epsilon call of up to 4 fits; nothing was run$",
        ),
        # epsilon alone overflows: the delta left is offered with the epsilon left
        (
            pf.ApproxDP(5.0, 1e-6),
            pf.ApproxDP(3.0, 1e-7),
            r": epsilon would be 6 > 5; the remaining epsilon is 2: a call of up to \(2, 9e-07\)-DP fits; "
            r"nothing was run$",
        ),
        # both overflow: both are named
        (
            pf.ApproxDP(5.0, 1e-6),
            pf.ApproxDP(3.0, 1e-6),
            r": epsilon would be 6 > 5; delta would be 2e-06 > 1e-06; the remaining epsilon is 2, the remaining "
            r"delta is 0: a pure-epsilon call of up to 2 fits;",
        ),
        (pf.PureDP(5.0), pf.PureDP(3.0), r": epsilon would be 6 > 5; the remaining epsilon is 2: a pure-epsilon call"),
        # mu in a GDP session
        (
            pf.GDP(1.0),
            pf.GDP(0.8),
            r": mu would be 1.13137 > 1; the remaining mu is 0.6: a call of up to 0.6-GDP fits; nothing was run$",
        ),
        # delta in a GDP session: mu is not the cause
        (
            pf.GDP(1.0, delta=1e-6),
            pf.GDP(0.5, delta=1e-6),
            r": delta would be 2e-06 > 1e-06; the remaining delta is 0: a call of up to 0.866025-GDP fits;",
        ),
        # nothing left at all
        (pf.GDP(1.0), pf.GDP(1.0), r": mu would be 1.41421 > 1; the remaining mu is 0: no further call fits;"),
    ],
)
def test_a_refusal_names_the_component_that_overflows_and_what_fits(
    x: np.ndarray, total: pf.Budget, budget: pf.Budget, match: str
) -> None:
    session = pf.Session(total)
    _mean(session, x, budget, rng=1)
    with pytest.raises(pf.BudgetError, match=match) as info:
        _mean(session, x, budget, rng=2)
    assert info.value.path == "budget"
    assert len(session.calls) == 1
    # What the message offers does fit.
    message = str(info.value)
    if "no further call fits" in message:
        assert session.remaining is None
        return
    pure = re.search(r"a pure-epsilon call of up to (\S+) fits", message)
    gdp = re.search(r"a call of up to \(?([\d.e+-]+)(?:, ([\d.e+-]+)\))?-GDP fits", message)
    approx = re.search(r"a call of up to \(([\d.e+-]+), ([\d.e+-]+)\)-DP fits", message)
    if pure:
        fits: pf.Budget = pf.PureDP(float(pure.group(1)))
    elif gdp:
        fits = pf.GDP(float(gdp.group(1)), delta=float(gdp.group(2) or 0.0))
    else:
        assert approx is not None
        fits = pf.ApproxDP(float(approx.group(1)), float(approx.group(2)))
    assert session.fits(fits)


# ---------------------------------------------------------------------------------------------------------
# The session ledger, failures and errors
# ---------------------------------------------------------------------------------------------------------


def test_the_session_ledger_holds_every_event_of_every_call(x: np.ndarray) -> None:
    session = pf.Session(pf.GDP(1.0))
    first = _mean(session, x, pf.GDP(0.6), rng=1)
    second = _mean(session, x, pf.GDP(0.6), rng=2)
    ledger = session.ledger
    assert isinstance(ledger, pf.Ledger)
    assert ledger.accountant == "session"
    assert ledger.total == session.spent
    expected = [f"call 1: {e.label}" for e in first.privacy.events] + [
        f"call 2: {e.label}" for e in second.privacy.events
    ]
    assert expected == ["call 1: center", "call 1: radius", "call 2: center", "call 2: radius"]
    assert [e.label for e in ledger.events] == expected
    assert [e.budget for e in ledger.events] == [e.budget for e in (*first.privacy.events, *second.privacy.events)]
    assert session.calls[0].events == first.privacy.events


def _ptr_median(session: pf.Session, x: Any, **kw: Any) -> pf.IntervalResult:
    """CR-SS for the median with classic PTR and a centre proposal far below the smooth sensitivity."""
    options: dict[str, Any] = {
        "method": "cr-ss",
        "budget": pf.GDP(1.0, delta=1e-6),
        "bounds": BOUNDS,
        "B": 100,
        "mechanism": {"name": "ptr-gdp", "variant": "classic"},
        "center_proposal": 1e-9,
        "radius_proposal": 10.0,
        "rng": 3,
        **kw,
    }
    return session.confidence_interval(x, "median", **options)


def test_a_failed_ptr_test_is_charged_and_its_ledger_travels_with_the_error(x: np.ndarray, tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    session = pf.Session.open(path, pf.GDP(2.0, delta=1e-5))
    with pytest.raises(pf.PTRFailed, match="center") as info:
        _ptr_median(session, x)
    ledger = info.value.ledger
    assert isinstance(ledger, pf.Ledger)
    assert len(ledger.events) >= 1
    assert ledger.events[0].label == "center"
    assert ledger.events[0].mechanism == "ptr-gdp"
    (call,) = session.calls
    assert call.outcome == "ptr-failed"
    assert call.budget == pf.GDP(1.0, delta=1e-6)
    assert call.events == ledger.events
    assert session.spent == pf.GDP(1.0, delta=1e-6)  # the whole call, not only the failed test
    assert [e.label for e in session.ledger.events] == [f"call 1: {e.label}" for e in ledger.events]
    # Retrying spends again.
    with pytest.raises(pf.PTRFailed):
        _ptr_median(session, x, rng=4)
    spent = session.spent
    assert isinstance(spent, pf.GDP)
    assert spent.mu == pytest.approx(math.sqrt(2.0), rel=1e-12)
    assert spent.delta == pytest.approx(2e-6, rel=1e-12)
    # The file keeps the outcome and the events (details included).
    reloaded = pf.Session.open(path)
    assert reloaded.calls == session.calls
    assert [c.outcome for c in reloaded.calls] == ["ptr-failed", "ptr-failed"]


def test_a_ptr_failure_outside_a_run_has_no_ledger() -> None:
    assert pf.PTRFailed("failed", path="ptr").ledger is None


def test_an_error_during_the_run_is_charged(x: np.ndarray, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: Pipeline, data: Any, rng: Any = None, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(Pipeline, "execute", broken)
    session = pf.Session(pf.GDP(1.0))
    with pytest.raises(RuntimeError, match="boom"):
        _mean(session, x, pf.GDP(0.6), rng=1)
    (call,) = session.calls
    assert (call.outcome, call.budget, call.events) == ("error", pf.GDP(0.6), ())
    assert session.spent == pf.GDP(0.6)


def test_a_config_error_or_malformed_data_costs_nothing(x: np.ndarray, runs: Counter, releases: Counter) -> None:
    session = pf.Session(pf.GDP(1.0))
    with pytest.raises(pf.ConfigError, match="frobnicate"):
        _mean(session, x, pf.GDP(0.6), rng=1, frobnicate=3)
    bad = x.copy()
    bad[7] = np.nan
    rng = np.random.default_rng(5)
    state = rng.bit_generator.state
    with pytest.raises(pf.DataError):
        _mean(session, bad, pf.GDP(0.6), rng=rng)
    with pytest.raises(pf.DataError):
        session.run(Pipeline.build("mean", method="cr-gs", budget=pf.GDP(0.6), bounds=BOUNDS), bad, rng=rng)
    assert rng.bit_generator.state == state
    assert session.calls == ()
    assert session.spent is None
    assert (runs.calls, releases.calls) == (0, 0)
    with pytest.raises(pf.ConfigError, match="pipeline"):
        session.run("mean", x)  # type: ignore[arg-type]
    # A call over the total is refused before its configuration is even built.
    _mean(session, x, pf.GDP(0.9), rng=2)
    with pytest.raises(pf.BudgetError, match="nothing was run"):
        _mean(session, x, pf.GDP(0.9), rng=3, frobnicate=3)


def test_a_session_rejects_a_total_that_is_not_a_budget() -> None:
    with pytest.raises(pf.BudgetError):
        pf.Session(None)  # type: ignore[arg-type]
    with pytest.raises(pf.ConfigError, match="already spend more"):
        pf.Session(pf.GDP(1.0), calls=[SessionCall("call 1", pf.GDP(1.5), pf.GDP(1.5), "released")])
    with pytest.raises(pf.ConfigError, match="unit"):
        pf.Session(pf.GDP(1.0), calls=[SessionCall("call 1", pf.PureDP(0.1), pf.PureDP(0.1), "released")])


# ---------------------------------------------------------------------------------------------------------
# Session files
# ---------------------------------------------------------------------------------------------------------


def test_a_session_file_is_created_reloaded_and_its_total_never_changes(x: np.ndarray, tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    session = pf.Session.open(path, pf.GDP(1.0))
    assert path.is_file()
    assert [record["format"] for record in _lines(path)] == ["privframe-session/2"]  # a header, no record yet
    _mean(session, x, pf.GDP(0.6), rng=1)
    reloaded = pf.Session.open(path)
    assert reloaded.budget == pf.GDP(1.0)
    assert reloaded.calls == session.calls
    assert reloaded.spent == pf.GDP(0.6)
    assert pf.Session.open(path, pf.GDP(1.0)).calls == session.calls  # the same total is accepted
    # A call through the reloaded session is written back and seen by the next reader.
    _mean(reloaded, x, pf.GDP(0.6), rng=2)
    again = pf.Session.open(path)
    assert len(again.calls) == 2
    assert again.spent == reloaded.spent
    with pytest.raises(pf.BudgetError, match="nothing was run"):
        _mean(again, x, pf.GDP(0.6), rng=3)
    assert len(pf.Session.open(path).calls) == 2
    with pytest.raises(pf.ConfigError, match="never changes") as info:
        pf.Session.open(path, pf.GDP(2.0))
    assert info.value.path == "session"


def test_a_call_is_on_file_before_it_reads_the_data(
    x: np.ndarray, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.json"
    session = pf.Session.open(path, pf.GDP(1.0))
    seen: list[list[str]] = []
    original = Pipeline.execute

    def spy(self: Pipeline, data: Any, rng: Any = None, **kwargs: Any) -> Any:
        seen.append([record["kind"] for record in _lines(path)[1:]])
        assert [call.outcome for call in pf.Session.open(path).calls] == ["running"]
        return original(self, data, rng, **kwargs)

    monkeypatch.setattr(Pipeline, "execute", spy)
    _mean(session, x, pf.GDP(0.6), rng=1)
    assert seen == [["admit"]]
    assert [record["kind"] for record in _lines(path)[1:]] == ["admit", "finish"]
    assert [call.outcome for call in pf.Session.open(path).calls] == ["released"]


def test_a_missing_file_needs_a_total(tmp_path: Path) -> None:
    path = tmp_path / "missing.json"
    with pytest.raises(pf.ConfigError) as info:
        pf.Session.open(path)
    assert info.value.path == "session-budget"
    assert not path.exists()


@pytest.mark.parametrize(
    "text",
    [
        "not json {",
        "[]",
        '{"format": "something-else/1", "budget": {"unit": "gdp", "mu": 1.0}, "calls": []}',
        '{"format": "privframe-session/1", "calls": []}',
        '{"format": "privframe-session/1", "budget": {"unit": "gdp", "mu": -1.0}, "calls": []}',
        '{"format": "privframe-session/1", "budget": {"unit": "gdp", "mu": 1.0}, "calls": {}}',
        '{"format": "privframe-session/1", "budget": {"unit": "gdp", "mu": 1.0}, "calls": [{"outcome": "released"}]}',
        '{"format": "privframe-session/1", "budget": {"unit": "gdp", "mu": 1.0},'
        ' "calls": [{"budget": {"unit": "gdp", "mu": 0.5}, "outcome": "won"}]}',
        '{"format": "privframe-session/1", "budget": {"unit": "gdp", "mu": 1.0},'
        ' "calls": [{"budget": {"unit": "gdp", "mu": 0.5}, "outcome": "released", "events": [{"label": 1}]}]}',
    ],
)
def test_a_corrupt_session_file_is_a_config_error(tmp_path: Path, text: str) -> None:
    """Not a session file, or a malformed one of the previous format."""
    path = tmp_path / "s.json"
    path.write_text(text)
    with pytest.raises(pf.ConfigError):
        pf.Session.open(path)
    with pytest.raises(pf.ConfigError):
        pf.Session.open(path, pf.GDP(1.0))
    with pytest.raises(pf.ConfigError):
        pf.Session.upgrade(path)  # a malformed version-1 file is not upgraded either
    assert path.read_text() == text  # never overwritten
    assert not (tmp_path / "s.json.v1").exists()


def test_a_session_file_that_is_not_utf8_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(pf.ConfigError, match="UTF-8"):
        pf.Session.open(path)


def test_events_round_trip_through_json(x: np.ndarray) -> None:
    results = [
        pf.confidence_interval(x, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=BOUNDS, rng=1),
        pf.confidence_interval(x, "mean", method="privsub", budget=pf.ApproxDP(1.0, 1e-6), bounds=BOUNDS, rng=1),
        pf.confidence_interval(
            x, "median", method="cr-ss", budget=pf.GDP(1.0, delta=1e-6), bounds=BOUNDS, B=100, rng=1
        ),
    ]
    events = [event for result in results for event in result.privacy.events]
    assert any(event.details for event in events)
    assert any(event.note for event in events)
    for event in events:
        table = json.loads(json.dumps(event.to_dict()))
        back = pf.PrivacyEvent.from_dict(table)
        assert back == event
        assert hash(back) == hash(event)
        assert dict(back.details) == dict(event.details)
    # details take part in equality (though not in the hash).
    event = next(e for e in events if e.details)
    changed = pf.PrivacyEvent.from_dict({**event.to_dict(), "details": {}})
    assert changed != event
    assert hash(changed) == hash(event)
    # A subsample survives the round trip too.
    sub = pf.PrivacyEvent(
        label="s", mechanism="laplace", budget=pf.PureDP(0.5), count=3, subsample=pp.Subsample(1000, 100)
    )
    assert pf.PrivacyEvent.from_dict(json.loads(json.dumps(sub.to_dict()))) == sub
    with pytest.raises(pf.ConfigError) as info:
        pf.PrivacyEvent.from_dict({**sub.to_dict(), "colour": "red"}, "here")
    assert info.value.path == "here.colour"


def test_budget_tables_round_trip() -> None:
    for budget in (pf.GDP(1.0), pf.GDP(0.5, delta=1e-6), pf.ApproxDP(2.0, 1e-7), pf.PureDP(0.25)):
        table = budget_to_table(budget)
        assert table is not None
        assert pf.budget_from_table(json.loads(json.dumps(table))) == budget
    assert budget_to_table(None) is None
    with pytest.raises(pf.ConfigError) as info:
        pf.budget_from_table({"unit": "gdp", "mu": 1.0, "epsilon": 1.0}, "b")
    assert info.value.path == "b.epsilon"


# ---------------------------------------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------------------------------------

CONFIG = """
[pipeline]
method = "cr-gs"
statistic = "mean"
bounds = [0.0, 1.0]
budget = { unit = "gdp", mu = 0.6 }
"""


@pytest.fixture
def cli_files(tmp_path: Path, x: np.ndarray) -> tuple[Path, Path, Path]:
    config = tmp_path / "pipe.toml"
    config.write_text(CONFIG)
    data = tmp_path / "data.csv"
    data.write_text("value\n" + "".join(f"{float(v)!r}\n" for v in x))
    return config, data, tmp_path / "session.json"


def test_cli_runs_compose_in_a_session_file(
    cli_files: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    config, data, session = cli_files
    args = ["run", str(config), "--data", str(data), "--session", str(session)]
    assert main([*args, "--session-budget", "mu=1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["session"]["spent"] == str(pf.GDP(0.6))
    assert out["session"]["total"] == str(pf.GDP(1.0))
    assert out["session"]["calls"] == 1
    assert main([*args, "--session-budget", "mu=1"]) == 0  # the same total may be repeated
    captured = capsys.readouterr()
    assert f"session {session}: 2 calls spent" in captured.out
    spent = pf.Session.open(session).spent
    assert isinstance(spent, pf.GDP)
    assert spent.mu == pytest.approx(math.sqrt(0.72), rel=1e-12)
    assert main(args) == 2  # the total comes from the file; the third run does not fit
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("privframe: error: pipeline.budget:")
    assert "nothing was run" in captured.err
    assert len(pf.Session.open(session).calls) == 2
    assert main([*args, "--session-budget", "mu=2"]) == 2
    assert "never changes" in capsys.readouterr().err


def test_cli_session_options_are_checked(
    cli_files: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    config, data, session = cli_files
    args = ["run", str(config), "--data", str(data)]
    assert main([*args, "--session-budget", "mu=1"]) == 2
    assert "session-budget: only meaningful with --session" in capsys.readouterr().err
    for spec in ("mu=abc", "mu", "sigma=1", "mu=1,epsilon=1", "delta=1e-6", "mu=1,mu=2", "mu=-1"):
        assert main([*args, "--session", str(session), "--session-budget", spec]) == 2, spec
        err = capsys.readouterr().err
        assert err.startswith("privframe: error: --session-budget"), (spec, err)
    assert not session.exists()
    assert main([*args, "--session", str(session)]) == 2  # a new file needs its total
    assert "session-budget" in capsys.readouterr().err
    assert not session.exists()


def test_cli_session_budget_specs(
    cli_files: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config, data, _ = cli_files
    for spec, budget in (
        ("mu=1.5,delta=1e-6", pf.GDP(1.5, delta=1e-6)),
        ("epsilon=4", pf.PureDP(4.0)),
        ("epsilon=4,delta=1e-5", pf.ApproxDP(4.0, 1e-5)),
    ):
        session = tmp_path / f"{spec}.json"
        status = main(["run", str(config), "--data", str(data), "--session", str(session), "--session-budget", spec])
        capsys.readouterr()
        assert pf.Session.open(session).budget == budget
        # A GDP call fits a GDP total or an (epsilon, delta) total with delta to spare, not a pure total.
        assert status == (2 if isinstance(budget, pf.PureDP) else 0), spec


def test_cli_sessions_print_their_head_and_take_a_key_and_an_expected_head(
    cli_files: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config, data, session = cli_files
    key = tmp_path / "session.key"
    key.write_bytes(bytes(range(32)))
    args = ["run", str(config), "--data", str(data), "--session", str(session), "--session-key-file", str(key)]
    assert main([*args, "--session-budget", "mu=1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)["session"]
    head = out["head"]
    assert head == _lines(session)[-1]["hash"]
    assert out["id"] == _lines(session)[0]["session"]
    assert _lines(session)[0]["mac"] == "hmac-sha256"
    assert main([*args, "--session-expect-head", head]) == 0  # the file extends the head kept
    captured = capsys.readouterr().out
    later = pf.Session.open(session, key=key.read_bytes()).head
    assert f"session head {later}" in captured
    older = session.read_bytes()
    session.write_bytes(older[: older.rindex(b"\n", 0, -1) + 1])  # the last line removed
    session.with_name(session.name + ".lock").unlink()
    assert main([*args, "--session-expect-head", later]) == 2
    err = capsys.readouterr().err
    assert err.startswith("privframe: error: --session: the session file was altered")
    assert "does not hold the head you expected" in err
    no_key = [arg for arg in args if arg not in ("--session-key-file", str(key))]
    assert main(no_key) == 2
    assert "sealed with a key" in capsys.readouterr().err
    assert main([*no_key, "--session-expect-head", "abc"]) == 2
    assert capsys.readouterr().err.startswith("privframe: error: --session-expect-head: expected a session head")
    short = tmp_path / "short.key"
    short.write_bytes(b"short")
    assert main([*no_key, "--session-key-file", str(short)]) == 2
    assert capsys.readouterr().err.startswith("privframe: error: --session-key-file: expected a secret")
    assert main([*no_key, "--session-key-file", str(tmp_path / "missing.key")]) == 2
    assert capsys.readouterr().err.startswith("privframe: error: --session-key-file: cannot read the key file")
    plain = ["run", str(config), "--data", str(data)]
    for option, value in (("--session-expect-head", head), ("--session-key-file", str(key))):
        assert main([*plain, option, value]) == 2
        assert f"{option[2:]}: only meaningful with --session" in capsys.readouterr().err


def test_cli_refuses_a_version_1_session_file(
    cli_files: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    config, data, session = cli_files
    _v1_file(session)
    assert main(["run", str(config), "--data", str(data), "--session", str(session)]) == 2
    assert "pf.Session.upgrade(path)" in capsys.readouterr().err


def test_two_sessions_on_one_file_see_each_others_charges(tmp_path: Path, x: np.ndarray) -> None:
    """Two handles on one file (two processes, say) reread the file under a lock before admitting a call, so
    together they cannot spend more than the total."""
    path = tmp_path / "shared.json"
    first = pf.Session.open(path, pf.GDP(1.0))
    second = pf.Session.open(path)
    _mean(first, x, pf.GDP(0.8), rng=1)
    with pytest.raises(pf.BudgetError, match="nothing was run"):
        _mean(second, x, pf.GDP(0.8), rng=2)
    assert not second.fits(pf.GDP(0.8))
    _mean(second, x, pf.GDP(0.6), rng=3)
    reloaded = pf.Session.open(path)
    assert [call.label for call in reloaded.calls] == ["call 1", "call 2"]
    assert isinstance(reloaded.spent, pf.GDP)
    assert reloaded.spent.mu == pytest.approx(1.0)


def test_a_budget_the_method_cannot_honour_is_refused_when_the_pipeline_is_built(x: np.ndarray) -> None:
    """privboot cannot give pure eps-DP: the refusal comes from the method's defaults, before the data are
    read, so it costs nothing."""
    session = pf.Session(pf.GDP(2.0))
    with pytest.raises(pf.BudgetError, match="pure epsilon-DP"):
        session.confidence_interval(x, "mean", method="privboot", budget=pf.PureDP(1.0), bounds=BOUNDS, rng=1)
    assert session.calls == ()


def test_a_refusal_that_needs_only_n_charges_nothing(tmp_path: Path, runs: Counter) -> None:
    """blbquant's min_block refusal depends only on n and the budget (public): a session checks it before it
    admits the call, so it charges nothing (the review had found 0.62-GDP spent)."""
    path = tmp_path / "s.json"
    session = pf.Session.open(path, pf.GDP(5.0))
    x = np.random.default_rng(2).uniform(size=500)
    with pytest.raises(pf.ConfigError, match="min_block") as info:
        session.confidence_interval(x, "mean", method="blbquant", budget=pf.PureDP(1.0), bounds=BOUNDS, rng=1)
    assert info.value.path == "min_block"
    assert session.calls == ()
    assert session.spent is None
    assert runs.calls == 0
    assert len(_lines(path)) == 1  # the header only: nothing was admitted
    assert pf.Session.open(path).spent is None


# ---------------------------------------------------------------------------------------------------------
# Tamper evidence: the session file is a hash chain
# ---------------------------------------------------------------------------------------------------------

SMALL = np.random.default_rng(1).uniform(size=200)


def _cheap(session: pf.Session, budget: pf.Budget, rng: Any = 1) -> pf.IntervalResult:
    """A cheap real call: a CR-GS interval for the mean of 200 records with 20 resamples."""
    return session.confidence_interval(SMALL, "mean", method="cr-gs", budget=budget, bounds=BOUNDS, B=20, rng=rng)


def _canonical(table: Any) -> str:
    """The documented canonical JSON, written here independently of privframe."""
    return json.dumps(table, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def _reseal(tables: list[dict[str, Any]], key: bytes | None = None) -> list[dict[str, Any]]:
    """What a forger who knows the format does: renumber every line and recompute every prev and hash."""
    prev, out = "0" * 64, []
    for seq, table in enumerate(tables):
        body = {name: value for name, value in table.items() if name != "hash"} | {"seq": seq, "prev": prev}
        data = _canonical(body).encode()
        digest = hashlib.sha256(data).hexdigest() if key is None else hmac.new(key, data, "sha256").hexdigest()
        out.append({**body, "hash": digest})
        prev = digest
    return out


def _write_lines(path: Path, tables: list[dict[str, Any]]) -> None:
    path.write_text("".join(_canonical(table) + "\n" for table in tables))


def _lock_file(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    """A session file with three released calls at 0.5-GDP in a 1-GDP total (0.866-GDP spent)."""
    path = tmp_path / "s.json"
    session = pf.Session.open(path, pf.GDP(1.0))
    for seed in range(3):
        _cheap(session, pf.GDP(0.5), rng=seed)
    return path


def _refused(path: Path, match: str, **kw: Any) -> str:
    """Opening ``path`` is a ConfigError at ``session`` saying the file was altered and what to do."""
    before = path.read_bytes()
    with pytest.raises(pf.ConfigError, match=match) as info:
        pf.Session.open(path, **kw)
    message = str(info.value)
    assert info.value.path == "session"
    assert "cannot be trusted" in message
    assert "restore the file" in message  # what to do
    assert not re.search(r"\d\.\d", message)  # no number from the data or the charges
    assert path.read_bytes() == before  # never rewritten
    return message


def test_the_file_is_a_chain_of_canonical_lines_that_anyone_can_recompute(ledger: Path) -> None:
    text = ledger.read_text()
    tables = _lines(ledger)
    assert text == "".join(_canonical(table) + "\n" for table in tables)  # every line is canonical JSON
    assert _reseal(tables) == tables  # SHA-256 of each line without "hash", chained by "prev"
    header = tables[0]
    assert header["format"] == "privframe-session/2"
    assert header["budget"] == {"unit": "gdp", "mu": 1.0}
    assert header["mac"] == "sha256"
    assert re.fullmatch(r"[0-9a-f]{32}", header["session"])
    assert {"created", "privframe"} <= set(header)
    assert [(t["kind"], t["call"]) for t in tables[1:]] == [
        (kind, f"call {k}") for k in (1, 2, 3) for kind in ("admit", "finish")
    ]
    session = pf.Session.open(ledger)
    assert session.head == tables[-1]["hash"]
    assert session.id == header["session"]
    assert pf.Session(pf.GDP(1.0)).head is None


def test_floats_round_trip_bit_for_bit(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    awkward = pf.GDP(0.1 + 0.2, delta=math.nextafter(1e-7, 1.0))
    session = pf.Session.open(path, pf.GDP(1.0 / 3.0 + 0.5, delta=1e-6))
    _cheap(session, awkward)
    reloaded = pf.Session.open(path)
    assert reloaded.calls == session.calls
    assert reloaded.calls[0].budget.mu.hex() == awkward.mu.hex()  # type: ignore[union-attr]
    assert reloaded.budget == session.budget


@pytest.mark.parametrize(
    ("case", "match"),
    [
        ("edit a charge", "line 2 does not match its hash"),
        ("edit an outcome", "line 3 does not match its hash"),
        ("edit a charge and keep the hash, pretty-printed", "line 2 is not as privframe writes it"),
        ("delete a record", "line 4 does not follow line 3"),
        ("reorder two records", "line 4 does not follow line 3"),
        ("insert a record", "line 3 does not follow line 2"),
        ("change the header's total", "line 1 does not match its hash"),
        ("truncate mid-line", "line 7 is cut short"),
        ("empty the calls", "does not hold line 7"),
        ("truncate at a line boundary", "does not hold line 7"),
        ("empty the file", "it is empty"),
    ],
)
def test_every_edit_of_a_session_file_is_detected(ledger: Path, case: str, match: str) -> None:
    tables = _lines(ledger)
    text = ledger.read_text()
    if case == "edit a charge":
        tables[1]["charge"]["mu"] = 0.05
    elif case == "edit an outcome":
        tables[2]["outcome"] = "error"
    elif case == "delete a record":
        del tables[3]
    elif case == "reorder two records":
        tables[3], tables[5] = tables[5], tables[3]
    elif case == "insert a record":
        tables.insert(2, dict(tables[1]))
    elif case == "change the header's total":
        tables[0]["budget"]["mu"] = 100.0
    elif case == "empty the calls":
        tables = tables[:1]
    elif case == "truncate at a line boundary":
        tables = tables[:-1]
    if case == "edit a charge and keep the hash, pretty-printed":
        lines = text.splitlines(keepends=True)
        table = json.loads(lines[1])
        table["charge"]["mu"] = 0.05
        lines[1] = json.dumps(table) + "\n"
        ledger.write_text("".join(lines))
    elif case == "truncate mid-line":
        ledger.write_text(text[:-10])
    elif case == "empty the file":
        ledger.write_text("")
    else:
        _write_lines(ledger, tables)
    _refused(ledger, match)


def test_without_the_lock_file_a_file_cut_back_is_an_older_copy_that_only_a_head_kept_elsewhere_refuses(
    ledger: Path,
) -> None:
    """Removing the last lines leaves a shorter chain that verifies: the lock file's record of the last line
    is a tripwire, and whoever removes it too is stopped only by a head kept where they cannot write."""
    head = pf.Session.open(ledger).head
    assert head is not None
    _write_lines(ledger, _lines(ledger)[:1])  # "calls": [] of the old format: the whole budget back
    _lock_file(ledger).unlink()
    assert pf.Session.open(ledger).spent is None  # the documented limit: an older copy of the file
    _refused(ledger, "does not hold the head you expected", expect_head=head)


def test_an_older_copy_put_back_is_refused_by_the_lock_file_or_the_expected_head(ledger: Path) -> None:
    old, old_lock = ledger.read_bytes(), _lock_file(ledger).read_bytes()
    session = pf.Session.open(ledger)
    _cheap(session, pf.GDP(0.3))
    head = session.head
    assert head is not None
    ledger.write_bytes(old)
    _refused(ledger, "does not hold line 9")
    _lock_file(ledger).write_bytes(old_lock)  # both files of the older copy: consistent, so accepted ...
    assert len(pf.Session.open(ledger).calls) == 3
    _refused(ledger, "does not hold the head you expected", expect_head=head)  # ... unless a head was kept
    with pytest.raises(pf.ConfigError, match="64 lowercase hex") as info:
        pf.Session.open(ledger, expect_head="abc")
    assert info.value.path == "expect_head"


def test_a_session_that_is_open_refuses_a_file_cut_short_underneath_it(ledger: Path, runs: Counter) -> None:
    session = pf.Session.open(ledger)
    _write_lines(ledger, _lines(ledger)[:3])
    _lock_file(ledger).unlink()  # even without the tripwire, this session has read the lines
    with pytest.raises(pf.ConfigError, match="already read are not there any more"):
        _cheap(session, pf.GDP(0.3))
    assert runs.calls == 0
    with pytest.raises(pf.ConfigError, match="altered"):
        session.fits(pf.GDP(0.1))


def test_a_deleted_file_is_refused_while_its_lock_file_or_an_expected_head_remembers_it(ledger: Path) -> None:
    head = pf.Session.open(ledger).head
    ledger.unlink()
    with pytest.raises(pf.ConfigError, match="deleted or moved") as info:
        pf.Session.open(ledger, pf.GDP(1.0))
    assert info.value.path == "session"
    assert "remove s.json.lock" in str(info.value)
    assert not ledger.exists()
    _lock_file(ledger).unlink()
    with pytest.raises(pf.ConfigError, match="deleted or moved"):
        pf.Session.open(ledger, pf.GDP(1.0), expect_head=head)
    assert not ledger.exists()
    # Deleting both files cannot be detected from them: a new session starts (docs/concepts.md says so).
    assert pf.Session.open(ledger, pf.GDP(1.0)).spent is None


def test_a_forged_chain_with_recomputed_hashes_is_refused_only_under_a_key(tmp_path: Path) -> None:
    """A chain is not a signature: who knows the format can rewrite it. Sealed with HMAC-SHA256 under a
    key the forger does not hold, the rewrite is refused."""
    key = bytes(range(32))
    for sealed in (None, key):
        path = tmp_path / f"{'keyed' if sealed else 'plain'}.json"
        session = pf.Session.open(path, pf.GDP(1.0), key=sealed)
        _cheap(session, pf.GDP(0.9))
        tables = _lines(path)
        # The forger rewrites the admitted charge down, inserts a forged admission, and reseals.
        tables[1]["budget"]["mu"] = tables[1]["charge"]["mu"] = 0.01
        tables.insert(2, {**tables[1], "call": "call 2"})
        _write_lines(path, _reseal(tables))  # they do not hold the key: plain SHA-256
        _lock_file(path).unlink()
        if sealed is None:
            forged = pf.Session.open(path)  # undetectable without a key or a head kept elsewhere
            assert [call.label for call in forged.calls] == ["call 1", "call 2"]
            assert forged.spent == pf.GDP(math.hypot(0.01, 0.01))
        else:
            _refused(path, "line 1 does not match its hash or the key is not the session's", key=key)
            _write_lines(path, _reseal([tables[0] | {"mac": "sha256"}, *tables[1:]]))  # strip the key
            _refused(path, "sealed without a key, but a key was given", key=key)
    # Whoever holds the key can reseal: the key is the secret the analyst must not hold.
    forged = _reseal([tables[0] | {"mac": "hmac-sha256"}, *tables[1:]], key)
    _write_lines(tmp_path / "keyed.json", forged)
    assert pf.Session.open(tmp_path / "keyed.json", key=key).spent == pf.GDP(math.hypot(0.01, 0.01))


def test_a_keyed_session_needs_its_key(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    key = b"0123456789abcdef0123456789abcdef"
    session = pf.Session.open(path, pf.GDP(1.0), key=key)
    _cheap(session, pf.GDP(0.5))
    tables = _lines(path)
    assert tables[0]["mac"] == "hmac-sha256"
    assert _reseal(tables, key) == tables  # HMAC-SHA256 of the same canonical lines
    assert key.decode() not in path.read_text()
    assert pf.Session.open(path, key=key).calls == session.calls
    with pytest.raises(pf.ConfigError, match="sealed with a key") as info:
        pf.Session.open(path)
    assert info.value.path == "session"
    _refused(path, "the key is not the session's", key=b"another key of 32 bytes, not it!")
    for bad in (b"short", "a text key, not bytes"):
        with pytest.raises(pf.ConfigError, match="16 bytes") as info:
            pf.Session.open(path, key=bad)  # type: ignore[arg-type]
        assert info.value.path == "key"
    plain = tmp_path / "plain.json"
    pf.Session.open(plain, pf.GDP(1.0))
    _refused(plain, "sealed without a key", key=key)


def test_an_anchor_receives_every_head_before_the_line_is_written(tmp_path: Path, runs: Counter) -> None:
    path = tmp_path / "s.json"
    heads: list[str] = []
    session = pf.Session.open(path, pf.GDP(1.0), anchor=heads.append)
    _cheap(session, pf.GDP(0.5))
    assert heads == [table["hash"] for table in _lines(path)]  # header, admit, finish
    assert heads[-1] == session.head

    def failing(head: str) -> None:
        raise OSError("the anchor store is down")

    broken = pf.Session.open(path, anchor=failing)
    with pytest.raises(OSError, match="anchor store"):
        _cheap(broken, pf.GDP(0.5))
    assert runs.calls == 1  # the second call did not run ...
    assert len(pf.Session.open(path).calls) == 1  # ... and was not charged: nothing was written
    assert pf.Session.open(path, expect_head=heads[1]).head == heads[-1]  # any head kept, not only the last


# ---------------------------------------------------------------------------------------------------------
# Files of the previous format
# ---------------------------------------------------------------------------------------------------------


def _v1_file(path: Path) -> None:
    calls = [
        SessionCall("call 1", pf.GDP(0.6), pf.GDP(0.6), "released").to_dict(),
        SessionCall("call 2", pf.GDP(0.3), pf.GDP(0.3), "running").to_dict(),
    ]
    table = {"format": "privframe-session/1", "budget": {"unit": "gdp", "mu": 1.0}, "calls": calls}
    path.write_text(json.dumps(table, indent=1))


def test_a_version_1_file_is_refused_until_it_is_upgraded(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    _v1_file(path)
    text = path.read_text()
    with pytest.raises(pf.ConfigError, match=r"no hash chain.*pf\.Session\.upgrade\(path\)") as info:
        pf.Session.open(path)
    assert info.value.path == "session"
    assert path.read_text() == text
    heads: list[str] = []
    session = pf.Session.upgrade(path, anchor=heads.append)
    assert (tmp_path / "s.json.v1").read_text() == text  # the old file is kept
    assert [call.outcome for call in session.calls] == ["released", "running"]  # a running call stays charged
    spent = session.spent
    assert isinstance(spent, pf.GDP)
    assert spent.mu == pytest.approx(math.hypot(0.6, 0.3))
    header = _lines(path)[0]
    assert header["upgraded"] == {"from": "privframe-session/1", "calls": 2, "verified": False}
    assert heads == [session.head]
    assert pf.Session.open(path, expect_head=session.head).calls == session.calls
    with pytest.raises(pf.ConfigError, match="only a privframe-session/1 file can be upgraded"):
        pf.Session.upgrade(path)
    _v1_file(path)
    with pytest.raises(pf.ConfigError, match=r"s\.json\.v1 already exists"):
        pf.Session.upgrade(path)
    with pytest.raises(pf.ConfigError, match="no session file to upgrade"):
        pf.Session.upgrade(tmp_path / "missing.json")


def test_save_writes_a_new_file_and_never_overwrites_one(tmp_path: Path) -> None:
    session = pf.Session(pf.GDP(1.0))
    _cheap(session, pf.GDP(0.6))
    path = tmp_path / "saved.json"
    session.save(path)
    assert pf.Session.open(path).calls == session.calls
    with pytest.raises(pf.ConfigError, match="never overwritten"):
        pf.Session(pf.GDP(5.0)).save(path)
    assert pf.Session.open(path).budget == pf.GDP(1.0)


@pytest.mark.parametrize(
    ("case", "match"),
    [
        ("a charge below its budget", "line 2 charges less than its call's budget costs"),
        ("a call over the total", "line 6 admits a call over the session's total"),
        ("a call finished twice", "line 4 ends a call that is not running"),
        ("a call out of order", "line 2 admits a call out of order"),
        ("a line of another kind", "line 2 neither admits nor ends a call"),
    ],
)
def test_a_resealed_chain_is_still_replayed_by_the_rules(ledger: Path, case: str, match: str) -> None:
    """A chain that verifies still has to be one privframe could have written: calls numbered in order,
    each charged at least what its budget costs, within the total, each ended once."""
    tables = _lines(ledger)
    if case == "a charge below its budget":
        tables[1]["charge"]["mu"] = 0.01
    elif case == "a call over the total":
        tables[5]["budget"]["mu"] = tables[5]["charge"]["mu"] = 0.9
    elif case == "a call finished twice":
        tables.insert(3, dict(tables[2]))
    elif case == "a call out of order":
        tables[1]["call"] = "call 7"
    else:
        tables[1]["kind"] = "refund"
    _write_lines(ledger, _reseal(tables))
    _lock_file(ledger).unlink()
    _refused(ledger, match)


# ---------------------------------------------------------------------------------------------------------
# Several processes on one session file
# ---------------------------------------------------------------------------------------------------------


def _race_worker(path: str, worker: int, calls: int, mu: float, barrier: Any, queue: Any) -> None:
    """One process of a race: ``calls`` cheap calls at mu-GDP on the shared file; puts what happened."""
    try:
        pf.confidence_interval(SMALL, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=BOUNDS, B=20, rng=0)
        session = pf.Session.open(path)  # the plugins are loaded (above, outside the session): a tight race
        barrier.wait(timeout=300)
        start, released, refused = time.perf_counter(), 0, 0
        for i in range(calls):
            try:
                _cheap(session, pf.GDP(mu), rng=1000 * worker + i)
            except pf.BudgetError:
                refused += 1
            else:
                released += 1
        queue.put((worker, released, refused, time.perf_counter() - start, ""))
    except BaseException as exc:  # the parent reports it instead of waiting
        queue.put((worker, 0, 0, 0.0, repr(exc)))


def _race(path: Path, workers: int, calls: int, mu: float, total: float) -> None:
    """``workers`` spawned processes race ``calls`` calls each on one file; the file is checked by hand."""
    pf.Session.open(path, pf.GDP(total))
    context = multiprocessing.get_context("spawn")
    barrier, queue = context.Barrier(workers), context.Queue()
    processes = [
        context.Process(target=_race_worker, args=(str(path), w, calls, mu, barrier, queue)) for w in range(workers)
    ]
    start = time.perf_counter()
    for process in processes:
        process.start()
    try:
        results = [queue.get(timeout=600) for _ in processes]
    finally:
        for process in processes:
            process.join(timeout=60)
            if process.is_alive():  # pragma: no cover - a hung worker
                process.kill()
    wall = time.perf_counter() - start
    assert [error for *_, error in results if error] == []
    assert [process.exitcode for process in processes] == [0] * workers
    tables = _lines(path)
    assert _reseal(tables) == tables  # the chain verifies, recomputed by hand
    admits = [table for table in tables if table.get("kind") == "admit"]
    finishes = [table for table in tables if table.get("kind") == "finish"]
    labels = [table["call"] for table in admits]
    assert labels == [f"call {k}" for k in range(1, len(admits) + 1)]  # every admitted call once, in order
    assert sorted(table["call"] for table in finishes) == sorted(labels)  # and ended once
    assert all(tables.index(a) < tables.index(f) for a in admits for f in finishes if f["call"] == a["call"])
    assert {table["outcome"] for table in finishes} == {"released"}
    spent = math.sqrt(math.fsum(table["charge"]["mu"] ** 2 for table in admits))  # mu adds in squares
    assert spent <= total * (1 + 1e-12)  # never overspent
    admitted = round((total / mu) ** 2)  # what the total admits (exact here: mu and total are powers of 2)
    released, refused = sum(r[1] for r in results), sum(r[2] for r in results)
    assert len(admits) == released == admitted
    assert refused == workers * calls - admitted
    session = pf.Session.open(path)
    assert len(session.calls) == admitted
    assert isinstance(session.spent, pf.GDP)
    assert session.spent.mu == pytest.approx(total, rel=1e-12)
    per_worker = sorted((r[0], r[1]) for r in results)
    race = max(r[3] for r in results)
    print(
        f"\n{workers} x {calls}: admitted {admitted}, released {released}, refused {refused}, released by "
        f"worker {per_worker}; race {race:.1f} s, wall {wall:.1f} s (with the processes' start)"
    )


def test_four_processes_race_fifty_calls_each_on_one_session_file(tmp_path: Path) -> None:
    """4 spawned processes x 50 calls at 0.125-GDP race on a 1-GDP file: exactly 64 of the 200 are admitted,
    each once, and the file never overspends (about 20 s on two busy cores, nearly all of it the processes'
    start: the race itself takes a second or two)."""
    _race(tmp_path / "shared.json", workers=4, calls=50, mu=0.125, total=1.0)


def _dying_worker(path: str) -> None:
    """A process that dies (no exception, no cleanup) once its call has started on the data."""

    def die(self: Pipeline, *args: Any, **kwargs: Any) -> Any:
        os._exit(17)

    Pipeline.execute = die  # type: ignore[method-assign]
    _cheap(pf.Session.open(path), pf.GDP(0.5))


def test_a_process_that_dies_mid_call_leaves_its_charge_on_file(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    pf.Session.open(path, pf.GDP(1.0))
    process = multiprocessing.get_context("spawn").Process(target=_dying_worker, args=(str(path),))
    process.start()
    process.join(timeout=300)
    assert process.exitcode == 17
    assert [table.get("kind") for table in _lines(path)] == [None, "admit"]  # admitted, never ended
    session = pf.Session.open(path)  # the chain verifies
    (call,) = session.calls
    assert (call.outcome, call.charge) == ("running", pf.GDP(0.5))
    assert session.spent == pf.GDP(0.5)
    assert not session.fits(pf.GDP(0.9))
    _cheap(session, pf.GDP(0.8))
    assert [call.outcome for call in pf.Session.open(path).calls] == ["running", "released"]
