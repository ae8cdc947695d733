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
- ``privframe run --session FILE --session-budget SPEC`` charges each run to the file.
"""

from __future__ import annotations

import json
import math
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
    path = tmp_path / "s.json"
    path.write_text(text)
    with pytest.raises(pf.ConfigError):
        pf.Session.open(path)
    with pytest.raises(pf.ConfigError):
        pf.Session.open(path, pf.GDP(1.0))
    assert path.read_text() == text  # never overwritten


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
    assert captured.err.startswith("privframe: error: budget:")
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
        assert err.startswith("privframe: error: session-budget"), (spec, err)
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
