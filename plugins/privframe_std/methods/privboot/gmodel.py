"""Efron's g-modelling: penalised maximum-likelihood deconvolution with a log-spline prior.

Model: ``y_b = theta_b + sigma Z_b`` with ``Z_b ~ N(0, 1)``, sigma known, and theta_b i.i.d. from an unknown
law g. g is supported on a grid ``t_1 < ... < t_K`` with ``g_j = exp(Q_j a) / sum_k exp(Q_k a)``, Q the
natural cubic spline basis with ``df`` degrees of freedom (R's ``splines::ns(t, df)``, no intercept). The
coefficients maximise ``sum_b log f_b(a) - c0 ||a||_2`` with ``f_b = sum_j phi_sigma(y_b - t_j) g_j``
(Efron 2016, "Empirical Bayes deconvolution estimates"; the defaults - df 5, c0 = 0.1, 300 grid points
spanning the observations - are those of ``REBayes::BDGLmix``).

PrivBoot uses it to estimate the law of the noiseless bootstrap statistic from its noisy releases; this
is post-processing of released values.
"""

from __future__ import annotations

import math

import attrs
import numpy as np
import numpy.typing as npt
from scipy import interpolate, optimize, special

from privframe.errors import ConfigError, DataError

__all__ = ["GModelFit", "fit_gmodel", "natural_spline_basis", "penalised_objective"]

FloatArray = npt.NDArray[np.float64]


def natural_spline_basis(x: FloatArray, df: int) -> FloatArray:
    """The natural cubic spline basis of R's ``splines::ns(x, df)`` (intercept excluded): ``(len(x), df)``.

    ``df - 1`` interior knots at the quantiles ``1/df, ..., (df-1)/df`` of x, boundary knots at its range;
    B-spline basis without its first function, projected onto the null space of the second-derivative
    constraints at the boundary knots. Any orthonormal basis of that null space spans the same functions;
    the fitted law does not depend on which one (the penalty ``||a||`` is rotation invariant).
    """
    if df < 2:
        raise ConfigError("must be an integer >= 2", path="df")
    x = np.asarray(x, dtype=np.float64)
    low, high = float(x.min()), float(x.max())
    if not high > low:
        raise DataError("the spline basis needs at least two distinct points", path="x")
    interior = np.quantile(x, np.arange(1, df) / df)
    knots = np.concatenate([[low] * 4, interior, [high] * 4])
    count = knots.size - 4
    design = interpolate.BSpline.design_matrix(np.clip(x, low, high), knots, 3).toarray()
    constraints = np.empty((2, count))
    for j in range(count):
        coefficients = np.zeros(count)
        coefficients[j] = 1.0
        second = interpolate.BSpline(knots, coefficients, 3).derivative(2)
        constraints[:, j] = second(np.array([low, high]))
    design, constraints = design[:, 1:], constraints[:, 1:]
    q, _ = np.linalg.qr(constraints.T, mode="complete")
    basis: FloatArray = design @ q[:, 2:]
    return basis


def penalised_objective(
    a: FloatArray, basis: FloatArray, kernel: FloatArray, penalty: float
) -> tuple[float, FloatArray]:
    """``-sum_b log f_b(a) + penalty ||a||`` (up to a constant) and its gradient.

    ``kernel[b, j]`` is proportional to ``phi_sigma(y_b - t_j)`` (row scaling only shifts the value).
    With ``g = softmax(basis a)`` and ``v = kernel^T (1 / f)``: ``d/da sum log f = basis^T (g (v - B))``,
    since ``g . v = B``.
    """
    eta = basis @ a
    g = np.exp(eta - special.logsumexp(eta))
    # einsum, not BLAS: these matrix-vector products are small, and BLAS threads only contend for the cores.
    f = np.einsum("bj,j->b", kernel, g)
    norm = math.sqrt(float(a @ a))
    value = -float(np.sum(np.log(f))) + penalty * norm
    v = np.einsum("bj,b->j", kernel, 1.0 / f)
    gradient: FloatArray = -(basis.T @ (g * (v - kernel.shape[0])))
    if norm > 0:
        gradient = gradient + penalty * a / norm
    return value, gradient


@attrs.frozen
class GModelFit:
    """A fitted prior: probabilities ``g`` on ``grid``, the spline coefficients and the optimiser's status."""

    grid: FloatArray
    g: FloatArray
    coefficients: FloatArray
    converged: bool
    log_likelihood: float

    def quantile(self, probabilities: npt.ArrayLike) -> FloatArray:
        """Quantiles of g (its CDF interpolated linearly between grid points)."""
        cdf = np.cumsum(self.g)
        cdf /= cdf[-1]
        result: FloatArray = np.interp(np.asarray(probabilities, dtype=np.float64), cdf, self.grid)
        return result

    def mean(self) -> float:
        """Mean of g."""
        return float(self.g @ self.grid)


def fit_gmodel(
    y: npt.ArrayLike,
    sigma: float,
    *,
    grid_size: int = 300,
    df: int = 5,
    penalty: float = 0.1,
) -> GModelFit:
    """Estimate the law g of theta from ``y = theta + N(0, sigma^2)`` by penalised maximum likelihood.

    Parameters
    ----------
    y : array_like
        The noisy observations (at least two distinct values).
    sigma : float
        The known noise standard deviation (> 0).
    grid_size : int, default 300
        Support points of g, equally spaced from ``min(y)`` to ``max(y)``.
    df : int, default 5
        Degrees of freedom of the natural spline basis of ``log g``.
    penalty : float, default 0.1
        c0 in the penalty ``c0 ||a||_2``.
    """
    obs = np.asarray(y, dtype=np.float64).reshape(-1)
    if obs.size < 2 or not np.all(np.isfinite(obs)):
        raise DataError("need at least two finite observations", path="y")
    if not (math.isfinite(sigma) and sigma > 0):
        raise ConfigError("must be a finite number > 0", path="sigma")
    if grid_size < df + 1:
        raise ConfigError("must exceed df", path="grid_size")
    if not (math.isfinite(penalty) and penalty >= 0):
        raise ConfigError("must be a finite number >= 0", path="penalty")
    grid = np.linspace(obs.min(), obs.max(), grid_size)
    if not grid[-1] > grid[0]:
        raise DataError("need at least two distinct observations", path="y")
    basis = natural_spline_basis(grid, df)
    # log phi_sigma(y_b - t_j), shifted per row by its maximum for stability (the shift is a constant in a).
    log_kernel = -0.5 * ((obs[:, np.newaxis] - grid[np.newaxis, :]) / sigma) ** 2
    row_shift = log_kernel.max(axis=1)
    kernel = np.exp(log_kernel - row_shift[:, np.newaxis])
    start = np.zeros(basis.shape[1])
    result = optimize.minimize(
        penalised_objective,
        start,
        args=(basis, kernel, penalty),
        jac=True,
        method="BFGS",
        options={"gtol": 1e-6, "maxiter": 500},
    )
    count = obs.size
    a = np.asarray(result.x, dtype=np.float64)
    eta = basis @ a
    g = np.exp(eta - special.logsumexp(eta))
    log_lik = float(np.sum(np.log(kernel @ g) + row_shift) - count * math.log(sigma * math.sqrt(2 * math.pi)))
    # BFGS often stops with "precision loss" once the gradient is at rounding level; that is convergence.
    converged = bool(result.success) or float(np.max(np.abs(result.jac))) <= _GRADIENT_TOLERANCE
    return GModelFit(grid=grid, g=g, coefficients=a, converged=converged, log_likelihood=log_lik)


_GRADIENT_TOLERANCE = 1e-4
"""Largest gradient component (the objective is a sum over the observations) accepted as converged."""
