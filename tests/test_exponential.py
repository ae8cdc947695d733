"""The exponential-mechanism quantile (algorithms.md 4): exact densities on neighbours, sampling, the event."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

import privframe as pf
import privframe.plugin as pp
from privframe_std.mechanisms.exponential import (
    ExponentialMechanism,
    _exp_in_place,
    quantile_log_density,
    quantile_log_weights,
)
from privframe_std.statistics import Mean, Median, Quantile

LOW, HIGH = 0.0, 1.0
GRID = np.linspace(LOW, HIGH, 6)  # record values of the tiny datasets, bounds included


def _max_log_ratio(data: np.ndarray, eps: float, q: float) -> float:
    """Largest |log p_D(y) - log p_D'(y)| over every replace-one neighbour D' on the grid and every piece.

    The densities are piecewise constant with breaks at the records of D and D', so one test point inside
    every piece of their union (the midpoints) covers the whole output space: the check is exact.
    """
    worst = 0.0
    k = data.size
    for i, value in itertools.product(range(k), GRID):
        neighbour = data.copy()
        neighbour[i] = value
        edges = np.unique(np.concatenate(([LOW, HIGH], data, neighbour)))
        points = (edges[:-1] + edges[1:]) / 2
        rows = np.stack([np.sort(data), np.sort(neighbour)])
        log_p = quantile_log_density(rows, q, eps, LOW, HIGH, points)
        worst = max(worst, float(np.max(np.abs(log_p[0] - log_p[1]))))
    return worst


@pytest.mark.parametrize(("eps", "q"), [(0.5, 0.5), (2.0, 0.5), (1.0, 0.25)])
def test_exact_output_densities_of_neighbours_stay_within_e_eps(eps: float, q: float) -> None:
    """eps-DP, computed not sampled: on every replace-one neighbour of every dataset of 4 records on a
    6-point grid (bounds included, ties and records at the bounds), the output densities differ by at most
    e^eps everywhere. The worst case found reaches 0.84 eps (eps = 0.5) to 0.91 eps (eps = 2), so the check
    is not vacuous (the bound is approached only as the data concentrate)."""
    worst = 0.0
    for values in itertools.combinations_with_replacement(GRID, 4):
        worst = max(worst, _max_log_ratio(np.array(values), eps, q))
    assert worst <= eps + 1e-12
    assert worst >= 0.8 * eps


def test_the_density_audit_catches_a_mechanism_without_the_factor_one_half() -> None:
    """A broken mechanism sampling prop. to exp(eps u) (no 1/2) is only 2 eps-DP: the same audit fails it."""
    eps = 1.0
    data = np.array([0.0, 0.0, 0.8, 0.8])  # the worst dataset of the grid search above
    assert _max_log_ratio(data, eps, 0.5) <= eps + 1e-12
    assert _max_log_ratio(data, 2 * eps, 0.5) > 1.7 * eps  # what exp(eps u) would give: 1.81


def test_the_density_integrates_to_one_and_matches_the_weights() -> None:
    rows = np.sort(np.random.default_rng(0).uniform(LOW, HIGH, size=(3, 7)), axis=1)
    edges, log_weights = quantile_log_weights(rows, 0.5, 1.3, LOW, HIGH)
    fine = np.linspace(LOW, HIGH, 400_001)
    mid = (fine[:-1] + fine[1:]) / 2
    density = np.exp(quantile_log_density(rows, 0.5, 1.3, LOW, HIGH, mid))
    assert np.allclose(density.sum(axis=1) * (fine[1] - fine[0]), 1.0, atol=1e-3)
    lengths = np.diff(edges, axis=1)
    utility = -np.abs(np.arange(8) - 3.5)
    assert np.allclose(log_weights, np.log(lengths) + 0.65 * utility)


def test_sampling_follows_the_exact_piece_probabilities() -> None:
    """Chi-square goodness of fit of 200 000 draws (one row each) over the 8 pieces, at level 1e-3; and within
    the chosen piece the draw is uniform (KS test on the relative position)."""
    data = np.array([0.05, 0.1, 0.3, 0.35, 0.6, 0.9, 0.95])
    mech, stat = ExponentialMechanism(), Median()
    event = mech.plan_selection(stat, pf.PureDP(1.5), label="t")
    draws = 200_000
    index = np.tile(np.arange(data.size), (draws, 1))
    values = mech.select_batch(stat, data, index, pf.Bounds(LOW, HIGH), event, np.random.default_rng(5))[:, 0]
    edges, log_weights = quantile_log_weights(np.sort(data)[np.newaxis], 0.5, 1.5, LOW, HIGH)
    probs = np.exp(log_weights[0] - log_weights[0].max())
    probs /= probs.sum()
    piece = np.searchsorted(edges[0], values, side="right") - 1
    observed = np.bincount(piece, minlength=8)
    assert stats.chisquare(observed, probs * draws).pvalue > 1e-3
    relative = (values - edges[0][piece]) / np.diff(edges[0])[piece]
    assert stats.kstest(relative, "uniform").pvalue > 1e-3
    assert np.all((values >= LOW) & (values <= HIGH))


def test_rows_are_independent_calls_and_quantiles_concentrate() -> None:
    """At large eps each row's release is close to its own subsample's q-quantile (vectorised over rows)."""
    rng = np.random.default_rng(1)
    x = rng.uniform(LOW, HIGH, size=2000)
    index = np.stack([rng.choice(2000, size=400, replace=False) for _ in range(50)])
    stat = Quantile(q=0.2)
    mech = ExponentialMechanism()
    event = mech.plan_selection(stat, pf.PureDP(50.0), label="t")
    released = mech.select_batch(stat, x, index, pf.Bounds(LOW, HIGH), event, rng)
    assert released.shape == (50, 1)
    exact = np.quantile(x[index], 0.2, axis=1)
    # rank noise ~ Laplace(2 / eps) = 0.04 ranks: well inside one gap between records
    assert np.max(np.abs(released[:, 0] - exact)) < 0.02


def test_event_and_refusals() -> None:
    mech = ExponentialMechanism()
    event = mech.plan_selection(Median(), pf.ApproxDP(0.7, 1e-6), label="full")
    assert event.budget == pf.PureDP(0.7)
    assert event.sensitivity == 1.0
    assert event.noise_scale is None
    with pytest.raises(pf.BudgetError, match=r"^budget:"):
        mech.plan_selection(Median(), pf.GDP(1.0), label="x")
    with pytest.raises(pf.ConfigError, match=r"^mechanism: 'exponential' releases quantiles"):
        mech.plan_selection(Mean(), pf.PureDP(1.0), label="x")
    with pytest.raises(pf.ConfigError, match=r"^bounds:"):
        mech.select_batch(Median(), np.zeros(4), np.zeros((1, 4), dtype=np.intp), None, event, np.random.default_rng())
    assert isinstance(mech, pp.SelectionMechanism)
    assert not isinstance(mech, pp.Mechanism)  # it does not pretend to add noise to a value
    assert pf.registry.get("mechanism", "exponential").asserts_privacy


def test_privsub_median_defaults_to_the_exponential_mechanism_and_mechanism_overrides_it() -> None:
    x = np.random.default_rng(2).normal(size=3000)
    res = pf.confidence_interval(x, "median", method="privsub", budget=pf.ApproxDP(2, 1e-6), bounds=(-6, 4), rng=3)
    assert res.parameters["estimator"] == "median+exponential"
    assert [e.mechanism for e in res.privacy.events] == ["exponential", "exponential"]
    lap = pf.confidence_interval(
        x, "median", method="privsub", budget=pf.ApproxDP(2, 1e-6), bounds=(-6, 4), mechanism="laplace", rng=3
    )
    assert lap.parameters["estimator"] == "median+laplace"
    assert lap.diagnostics["sensitivity_sub"] == 10.0  # the global sensitivity of a median: the bounds' width
    # under a GDP budget the exponential mechanism runs at the largest eps whose T releases, amplified by
    # subsampling, are sqrt(1 - share) mu-GDP together; the full call at the pure conversion of sqrt(share) mu
    gdp = pf.confidence_interval(x, "median", method="privsub", budget=pf.GDP(1.0), bounds=(-6, 4), rng=3)
    assert gdp.diagnostics["composition"] == "gdp-amplified"
    assert gdp.diagnostics["mu_subsamples"] == pytest.approx(math.sqrt(0.5))
    eps_sub = gdp.diagnostics["epsilon_sub"]
    assert eps_sub > 5 * pp.accounting.gdp_pure_epsilon(math.sqrt(0.5 / 60))
    assert gdp.privacy.events[1].budget == pf.PureDP(eps_sub)
    assert gdp.privacy.total.mu <= 1.0 * (1 + 1e-12)  # type: ignore[union-attr]


def test_exp_in_place_is_exp_bit_for_bit_around_the_underflow() -> None:
    """The fast path sends values below -746 to -inf before exp: the same doubles as ``np.exp`` everywhere,
    the denormal range (-745.13, -708.4) and the exact zeros below it included."""
    values = np.concatenate(
        [
            np.linspace(-800.0, -700.0, 20_001),
            [-np.inf, -746.0, np.nextafter(-746.0, 0.0), -745.1332191019412, -745.13321910194, 0.0, 1.0],
        ]
    )
    expected = np.exp(values)
    got = _exp_in_place(values.copy())
    np.testing.assert_array_equal(got, expected)
    assert np.all(got[values < -745.14] == 0.0)
