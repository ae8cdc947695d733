"""Refusals that follow from public inputs alone (n, the data's shape, the options, the budget) cost nothing.

A session charges a call in full once it starts on the data, whatever its outcome; a refusal it could have
made from the public inputs must therefore come before the charge, or a user's typo spends budget. These
tests run every such refusal through a session kept in a file and check that nothing was recorded, and that
``Pipeline.check(n, shape=...)`` raises the same error before a single value is read.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import attrs
import numpy as np
import pytest

import privframe as pf
import privframe.plugin as pp

_RNG = np.random.default_rng(7)
_SCALARS = _RNG.uniform(size=200)
_VECTORS = _RNG.uniform(size=(200, 2))

# (id, data, statistic, keyword arguments, error class, path)
REFUSALS: list[tuple[str, Any, str, dict[str, Any], type[pf.PrivframeError], str]] = [
    ("two records", np.array([0.2, 0.4]), "mean", {"method": "cr-gs", "budget": pf.GDP(1.0)}, pf.DataError, "x"),
    ("vectors in scalar bounds", _VECTORS, "mean", {"method": "cr-gs", "budget": pf.GDP(1.0)}, pf.DataError, "x"),
    (
        "scalars in an L2 ball",
        _SCALARS,
        "mean",
        {"method": "cr-gs", "budget": pf.GDP(1.0), "bounds": pf.L2Ball(1.0)},
        pf.DataError,
        "x",
    ),
    (
        "m as large as n",
        _SCALARS,
        "mean",
        {"method": "cr-gs", "budget": pf.GDP(1.0), "sampler": {"name": "wor", "m": 200}},
        pf.ConfigError,
        "sampler.m",
    ),
    (
        "B beyond the memory budget",
        _SCALARS,
        "mean",
        {"method": "privsub", "budget": pf.ApproxDP(1.0, 1e-6), "T": 10**12},
        pf.ConfigError,
        "sampler.B",
    ),
    (
        "a U-statistic of vectors",
        _VECTORS,
        "u-statistic",
        {"method": "cr-gs", "budget": pf.GDP(1.0)},
        pf.DataError,
        "x",
    ),
    (
        "a logistic slope of scalars",
        _SCALARS,
        "logistic-slope",
        {"method": "cr-gs", "budget": pf.GDP(1.0), "bounds": 1.0},
        pf.DataError,
        "x",
    ),
    (
        "privsub's Gaussian noise under a pure budget",
        _SCALARS,
        "mean",
        {"method": "privsub", "mechanism": "gaussian", "budget": pf.PureDP(1.0)},
        pf.BudgetError,
        "budget",
    ),
    (
        "bounds too wide for private-variance's noise variances",
        _SCALARS,
        "mean",
        {"method": "private-variance", "budget": pf.PureDP(1.0), "bounds": (-1e300, 1e300)},
        pf.ConfigError,
        "bounds",
    ),
    (
        "a sensitivity that overflows at the bounds",
        _SCALARS,
        "u-statistic",
        {"method": "cr-gs", "budget": pf.GDP(1.0), "bounds": (-1e300, 1e300)},
        pf.ConfigError,
        "bounds",
    ),
    (
        "a sensitivity that overflows at the bounds, dette-graw",
        _SCALARS,
        "u-statistic",
        {"method": "dette-graw", "budget": pf.GDP(1.0), "bounds": (-1e300, 1e300)},
        pf.ConfigError,
        "bounds",
    ),
    (
        "a sensitivity that overflows at the bounds, privboot",
        _SCALARS,
        "u-statistic",
        {"method": "privboot", "budget": pf.ApproxDP(4.0, 1e-6), "bounds": (-1e300, 1e300)},
        pf.ConfigError,
        "bounds",
    ),
    (
        "a vector mean for blbquant",
        _RNG.uniform(size=(5000, 2)),
        "mean",
        {"method": "blbquant", "budget": pf.PureDP(5.0), "bounds": pf.L2Ball(1.0), "min_block": 0},
        pf.ConfigError,
        "bounds",
    ),
    (
        "privsub with replacement",
        _SCALARS,
        "mean",
        {"method": "privsub", "budget": pf.GDP(1.0), "sampler": {"name": "wr"}},
        pf.ConfigError,
        "sampler",
    ),
]


def _kwargs(options: dict[str, Any]) -> dict[str, Any]:
    return {"bounds": (0.0, 1.0), **options}


@pytest.mark.parametrize(("case", "x", "statistic", "options", "error", "path"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_a_public_refusal_is_not_charged_to_the_session(
    tmp_path: Path,
    case: str,
    x: Any,
    statistic: str,
    options: dict[str, Any],
    error: type[pf.PrivframeError],
    path: str,
) -> None:
    ledger = tmp_path / "session.jsonl"
    session = pf.Session.open(ledger, budget=pf.ApproxDP(50.0, 1e-5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(error) as info:
            session.confidence_interval(x, statistic, rng=1, **_kwargs(options))
    assert info.value.path == path
    assert session.calls == ()
    assert pf.Session.open(ledger).calls == ()  # nothing on file either


@pytest.mark.parametrize(("case", "x", "statistic", "options", "error", "path"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_check_at_the_shape_raises_what_the_run_raises(
    case: str, x: Any, statistic: str, options: dict[str, Any], error: type[pf.PrivframeError], path: str
) -> None:
    kwargs = _kwargs(options)
    pipe = pf.Pipeline.build(statistic, **kwargs)
    with pytest.raises(error) as checked:
        pipe.check(x.shape[0], shape=x.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(error) as ran:
            pf.confidence_interval(x, statistic, rng=1, **kwargs)
    assert checked.value.path == ran.value.path == path
    assert checked.value.message == ran.value.message


@attrs.frozen
class Picky:
    """Refuses every dataset in ``prepare``, after reading it (a refusal that may depend on the data)."""

    name: ClassVar[str] = "test-picky"

    def prepare(self, x: pp.Array, bounds: Any) -> pp.Array:
        raise pf.DataError("refuses every dataset, after reading it", path="x")

    def evaluate_batch(self, x: pp.Array, index: pp.IndexMatrix) -> pp.Array:
        return np.asarray(x[index].mean(axis=1, keepdims=True))

    def sensitivity(self, k: int, bounds: Any) -> float:
        return float(bounds.width) / k


SEEN_SHAPES: list[tuple[int, ...]] = []


@attrs.frozen
class ScalarsOnly:
    """Declares its shapes (``pp.ShapedStatistic``): scalars only."""

    name: ClassVar[str] = "test-scalars-only"

    def check_shape(self, shape: tuple[int, ...], bounds: Any) -> None:
        SEEN_SHAPES.append(shape)
        if len(shape) != 1:
            raise pf.DataError("takes scalars", path="x")

    def prepare(self, x: pp.Array, bounds: Any) -> pp.Array:
        self.check_shape(x.shape, bounds)
        return np.clip(x, bounds.low, bounds.high)

    def evaluate_batch(self, x: pp.Array, index: pp.IndexMatrix) -> pp.Array:
        return np.asarray(x[index].mean(axis=1, keepdims=True))

    def sensitivity(self, k: int, bounds: Any) -> float:
        return float(bounds.width) / k


class Plugin:
    @pp.hookimpl
    def privframe_register_statistics(self, registry: pp.StatisticRegistry) -> None:
        registry.add(Picky)
        registry.add(ScalarsOnly)


@pytest.fixture
def statistics() -> Iterator[None]:
    name = pf.registry.register(Plugin(), name="test-public-refusals")
    try:
        yield
    finally:
        pf.registry.unregister(name)


@pytest.mark.usefixtures("statistics")
def test_a_call_refused_after_the_data_are_read_is_still_charged() -> None:
    """The other side of the rule: a refusal that may depend on the data is a release, and is paid for."""
    session = pf.Session(pf.GDP(5.0))
    with pytest.raises(pf.DataError, match="after reading it"):
        session.confidence_interval(_SCALARS, "test-picky", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), rng=1)
    assert [call.outcome for call in session.calls] == ["error"]


@pytest.mark.usefixtures("statistics")
def test_a_shaped_third_party_statistic_refuses_before_the_charge() -> None:
    assert isinstance(ScalarsOnly(), pp.ShapedStatistic)
    assert not isinstance(Picky(), pp.ShapedStatistic)
    SEEN_SHAPES.clear()
    session = pf.Session(pf.GDP(5.0))
    with pytest.raises(pf.DataError, match="takes scalars"):
        session.confidence_interval(
            _VECTORS, "test-scalars-only", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), rng=1
        )
    assert session.calls == ()
    assert SEEN_SHAPES == [(200, 2)]


@pytest.mark.parametrize("bad", [0, -5, 2.0, True, "100", None])
def test_check_refuses_an_n_that_is_not_a_positive_integer(bad: Any) -> None:
    pipe = pf.Pipeline.build("mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1))
    with pytest.raises(pf.ConfigError, match=r"^n: "):
        pipe.check(bad)


@pytest.mark.parametrize("shape", [(99,), (), [100], "100"])
def test_check_refuses_a_shape_that_is_not_the_data_shape(shape: Any) -> None:
    pipe = pf.Pipeline.build("mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1))
    with pytest.raises(pf.ConfigError, match=r"^shape: "):
        pipe.check(100, shape=shape)


@pytest.mark.parametrize("method", ["cr-gs", "dette-graw"])
def test_an_approx_budget_without_delta_runs_as_the_pure_budget_it_is(method: str) -> None:
    """(eps, 0)-DP is eps-DP: the methods run it with Laplace noise, exactly as PureDP(eps)."""
    run: Callable[[pf.Budget], pf.IntervalResult] = lambda budget: pf.confidence_interval(  # noqa: E731
        _SCALARS, "mean", method=method, budget=budget, bounds=(0, 1), rng=3
    )
    approx, pure = run(pf.ApproxDP(1.0, 0.0)), run(pf.PureDP(1.0))
    assert (approx.low, approx.high) == (pure.low, pure.high)
    assert approx.privacy.total == pure.privacy.total == pf.PureDP(1.0)
    assert approx.parameters.get("mu") is None


@pytest.mark.parametrize("method", ["cr-gs", "dette-graw"])
def test_an_approx_budget_without_delta_is_refused_for_gaussian_noise_when_built(method: str) -> None:
    with pytest.raises(pf.BudgetError, match=r"^budget\.delta: .*no mu-GDP guarantee implies"):
        pf.Pipeline.build("mean", method=method, mechanism="gaussian", budget=pf.ApproxDP(1.0, 0.0), bounds=(0, 1))
