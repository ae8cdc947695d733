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
from privframe_std.methods.privboot.gmodel import (
    fit_gmodel,
    natural_spline_basis,
    penalised_hessian,
    penalised_objective,
)


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


def test_hessian_matches_finite_differences_of_the_gradient() -> None:
    rng = np.random.default_rng(1)
    y = rng.normal(size=80)
    grid = np.linspace(y.min(), y.max(), 50)
    basis = natural_spline_basis(grid, 5)
    kernel = np.exp(-0.5 * (y[:, None] - grid[None, :]) ** 2)
    h = 1e-6
    for a in rng.normal(size=(5, 5)):
        exact = penalised_hessian(a, basis, kernel, 0.1)
        columns = [
            (
                penalised_objective(a + h * e, basis, kernel, 0.1)[1]
                - penalised_objective(a - h * e, basis, kernel, 0.1)[1]
            )
            / (2 * h)
            for e in np.eye(5)
        ]
        assert np.allclose(exact, exact.T)
        assert np.allclose(exact, np.array(columns).T, rtol=1e-5, atol=1e-5)


def _bfgs(y: np.ndarray, sigma: float, grid_size: int = 300) -> np.ndarray:
    """The former fit: scipy's BFGS on the same objective (gtol 1e-6), for comparison."""
    grid = np.linspace(y.min(), y.max(), grid_size)
    basis = natural_spline_basis(grid, 5)
    log_kernel = -0.5 * ((y[:, None] - grid[None, :]) / sigma) ** 2
    kernel = np.exp(log_kernel - log_kernel.max(axis=1, keepdims=True))
    result = optimize.minimize(
        penalised_objective,
        np.zeros(5),
        args=(basis, kernel, 0.1),
        jac=True,
        method="BFGS",
        options={"gtol": 1e-6, "maxiter": 500},
    )
    return np.asarray(result.x)


@pytest.mark.parametrize("case", ["normal", "bimodal", "skewed", "tiny noise"])
def test_newton_fit_agrees_with_the_bfgs_solution(case: str) -> None:
    """Newton with the exact Hessian lands on BFGS's optimum (to BFGS's own tolerance), in a few steps."""
    rng = np.random.default_rng(list(case.encode()))
    theta = {
        "normal": rng.normal(size=3000),
        "bimodal": rng.normal(0.0, 0.5, size=3000) + rng.choice([-2.0, 2.0], size=3000),
        "skewed": rng.exponential(size=3000),
        "tiny noise": rng.normal(1.0, 2.0, size=3000),
    }[case]
    sigma = 0.01 if case == "tiny noise" else 1.0
    y = theta + sigma * rng.normal(size=3000)
    fit = fit_gmodel(y, sigma)
    assert fit.converged
    reference = _bfgs(y, sigma)
    assert np.allclose(fit.coefficients, reference, rtol=1e-4, atol=1e-4)
    basis = natural_spline_basis(fit.grid, 5)
    g_ref = np.exp(basis @ reference - np.log(np.sum(np.exp(basis @ reference))))
    assert np.max(np.abs(np.cumsum(fit.g) - np.cumsum(g_ref))) <= 1e-5


def test_fit_in_blocks_of_rows_equals_the_fit_in_memory() -> None:
    """A memory budget below the likelihood matrix's size recomputes it in blocks: the same fit, bit for bit."""
    rng = np.random.default_rng(5)
    y = rng.normal(size=5000) + rng.normal(size=5000)  # three blocks of rows
    whole = fit_gmodel(y, 1.0)
    blocks = fit_gmodel(y, 1.0, memory_budget=2**20)  # below the 4.8 MB of the matrix
    np.testing.assert_array_equal(whole.coefficients, blocks.coefficients)
    assert whole.log_likelihood == blocks.log_likelihood


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
