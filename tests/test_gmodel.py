"""Efron's g-modelling deconvolution (PrivBoot's deconvolution interval, algorithms.md section 6).

The fit must recover a known mixing law from observations convolved with Gaussian noise of known
sigma. Distances are stated per test; each is checked on several seeds, and the tolerance is a few
times the spread of the distance over seeds measured when the test was written (noted in each test).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize, stats

import privframe as pf
from privframe_std.methods.privboot.gmodel import fit_gmodel, natural_spline_basis, penalised_objective


def test_spline_basis_spans_the_natural_cubic_splines() -> None:
    x = np.linspace(-2.0, 3.0, 301)
    basis = natural_spline_basis(x, 5)
    assert basis.shape == (301, 5)
    assert np.allclose(basis[0], 0.0)  # every column but the dropped first B-spline vanishes at the left end
    design = np.column_stack([np.ones_like(x), basis])
    # Natural splines contain the linear functions exactly ...
    coef, *_ = np.linalg.lstsq(design, 2.0 - 0.7 * x, rcond=None)
    assert np.allclose(design @ coef, 2.0 - 0.7 * x, atol=1e-10)
    # ... have zero second derivative at the boundary knots: the second difference next to an end, relative
    # to the largest one, shrinks in proportion to the grid step (it is f''(h) h^2 with f''(0) = 0) ...
    for points, bound in ((301, 0.03), (3001, 0.003)):
        second = np.diff(natural_spline_basis(np.linspace(-2.0, 3.0, points), 5), n=2, axis=0)
        scale = np.abs(second).max()
        assert np.abs(second[0]).max() < bound * scale
        assert np.abs(second[-1]).max() < bound * scale
    # ... and not beyond: a quadratic is not in the span (a cubic spline space of dimension 6).
    coef, *_ = np.linalg.lstsq(design, x**2, rcond=None)
    assert np.max(np.abs(design @ coef - x**2)) > 1e-3
    assert np.linalg.matrix_rank(design) == 6


def test_gradient_matches_finite_differences() -> None:
    rng = np.random.default_rng(0)
    y = rng.normal(size=80)
    grid = np.linspace(y.min(), y.max(), 50)
    basis = natural_spline_basis(grid, 5)
    kernel = np.exp(-0.5 * (y[:, None] - grid[None, :]) ** 2)
    for a in rng.normal(size=(5, 5)):
        err = optimize.check_grad(
            lambda v: penalised_objective(v, basis, kernel, 0.1)[0],
            lambda v: penalised_objective(v, basis, kernel, 0.1)[1],
            a,
        )
        assert err < 1e-4


@pytest.mark.parametrize("seed", range(2))
def test_recovers_a_normal_prior(seed: int) -> None:
    """theta ~ N(0, 1), sigma = 1, 2000 observations: sup |G_hat - Phi| <= 0.07, quantiles within 0.31.

    Tolerances are mean + 4 SD of each distance over 30 other seeds, measured when the test was written:
    Kolmogorov distance mean 0.023 (SD 0.012), worst error of the 5/50/95% quantiles mean 0.10 (SD 0.05).
    The naive quantiles of y (which ignore the noise) miss the 5% and 95% quantiles by ~0.7.
    """
    rng = np.random.default_rng(100 + seed)
    y = rng.normal(size=2000) + rng.normal(size=2000)
    fit = fit_gmodel(y, 1.0)
    assert fit.converged
    assert fit.g.sum() == pytest.approx(1.0)
    assert np.max(np.abs(np.cumsum(fit.g) - stats.norm.cdf(fit.grid))) <= 0.07
    q = fit.quantile([0.05, 0.5, 0.95])
    assert np.allclose(q, stats.norm.ppf([0.05, 0.5, 0.95]), atol=0.31)


@pytest.mark.parametrize("seed", range(2))
def test_recovers_a_bimodal_prior(seed: int) -> None:
    """theta ~ (N(-2, 0.5^2) + N(2, 0.5^2)) / 2, sigma = 1, 3000 observations: Wasserstein-1 <= 0.17.

    The observations' own law is at W1 ~ 0.48 from the prior; a fit that ignored the noise would fail.
    Tolerances are mean + 4 SD over 30 other seeds: W1 mean 0.107 (SD 0.016); |mean| 0.027 (SD 0.024).
    """
    rng = np.random.default_rng(200 + seed)
    theta = rng.normal(0.0, 0.5, size=3000) + rng.choice([-2.0, 2.0], size=3000)
    y = theta + rng.normal(size=3000)
    fit = fit_gmodel(y, 1.0)
    true_cdf = 0.5 * (stats.norm.cdf(fit.grid, -2, 0.5) + stats.norm.cdf(fit.grid, 2, 0.5))
    w1 = float(np.sum(np.abs(np.cumsum(fit.g) - true_cdf)[:-1] * np.diff(fit.grid)))
    assert w1 <= 0.17
    assert fit.mean() == pytest.approx(0.0, abs=0.125)


def test_small_noise_gives_back_the_data_law() -> None:
    """With sigma tiny compared with the spread, g is the (smoothed) law of y itself."""
    rng = np.random.default_rng(3)
    y = rng.normal(1.0, 2.0, size=2000)
    fit = fit_gmodel(y, 0.01)
    assert fit.quantile([0.1, 0.9]) == pytest.approx(np.quantile(y, [0.1, 0.9]), abs=0.15)


def test_bad_inputs_name_their_parameter() -> None:
    with pytest.raises(pf.ConfigError, match=r"^sigma:"):
        fit_gmodel([0.0, 1.0, 2.0], 0.0)
    with pytest.raises(pf.DataError, match=r"^y:"):
        fit_gmodel([1.0], 1.0)
    with pytest.raises(pf.DataError, match=r"^y:"):
        fit_gmodel([1.0, 1.0, 1.0], 1.0)
    with pytest.raises(pf.ConfigError, match=r"^grid_size:"):
        fit_gmodel([0.0, 1.0], 1.0, grid_size=3)
