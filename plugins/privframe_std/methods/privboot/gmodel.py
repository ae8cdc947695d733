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
from collections.abc import Iterable, Iterator

import attrs
import numpy as np
import numpy.typing as npt

from privframe._typing import LazyModule
from privframe.errors import ConfigError, DataError

special = LazyModule("scipy.special")  # imported on first use (0.2 s the plugins' loading need not pay)

__all__ = ["GModelFit", "fit_gmodel", "natural_spline_basis", "penalised_hessian", "penalised_objective"]

FloatArray = npt.NDArray[np.float64]


def natural_spline_basis(x: FloatArray, df: int) -> FloatArray:
    """The natural cubic spline basis of R's ``splines::ns(x, df)`` (intercept excluded): ``(len(x), df)``.

    ``df - 1`` interior knots at the quantiles ``1/df, ..., (df-1)/df`` of x, boundary knots at its range;
    B-spline basis without its first function, projected onto the null space of the second-derivative
    constraints at the boundary knots. Any orthonormal basis of that null space spans the same functions;
    the fitted law does not depend on which one (the penalty ``||a||`` is rotation invariant).
    """
    from scipy import interpolate  # on first use: loading the plugins stays light

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
    value, gradient, _ = _likelihood_terms(a, basis, [kernel], hessian=False)
    pen_value, pen_gradient, _ = _penalty(a, penalty)
    return value + pen_value, gradient + pen_gradient


def penalised_hessian(a: FloatArray, basis: FloatArray, kernel: FloatArray, penalty: float) -> FloatArray:
    """The exact Hessian of :func:`penalised_objective` in ``a``, ``(df, df)``.

    With ``eta = basis a``, ``H_eta(sum log f) = diag(g (v - B)) + B g g^T - diag(g) P diag(g)``, where
    ``P = kernel^T diag(1 / f^2) kernel``; the last term is ``M^T M`` with ``M = diag(1 / f) kernel diag(g) basis``,
    ``(B, df)``, so the ``(K, K)`` matrix P is never formed. The penalty adds ``penalty (I - u u^T) / ||a||``
    (u = a / ||a||; taken as 0 at a = 0, where the norm has no Hessian).
    """
    _, _, hessian = _likelihood_terms(a, basis, [kernel], hessian=True)
    return hessian + _penalty(a, penalty)[2]


def _likelihood_terms(
    a: FloatArray, basis: FloatArray, kernels: Iterable[FloatArray], *, hessian: bool
) -> tuple[float, FloatArray, FloatArray]:
    """``-sum log f``, its gradient and (if asked, else zeros) its Hessian, summed over row blocks of the kernel."""
    eta = basis @ a
    g = np.exp(eta - special.logsumexp(eta))
    gq = g[:, np.newaxis] * basis
    size = basis.shape[1]
    value, count = 0.0, 0
    v = np.zeros(basis.shape[0])
    outer = np.zeros((size, size))
    right = np.column_stack([g, gq]) if hessian else g[:, np.newaxis]
    for kernel in kernels:
        products = kernel @ right  # f, and with the Hessian the columns of kernel diag(g) basis
        f = products[:, 0]
        value -= float(np.sum(np.log(f)))
        count += kernel.shape[0]
        v += (1.0 / f) @ kernel
        if hessian:
            m = products[:, 1:] / f[:, np.newaxis]
            outer += m.T @ m
    weight = g * (v - count)
    gradient: FloatArray = -(basis.T @ weight)
    if not hessian:
        return value, gradient, outer
    projected = basis.T @ g
    curvature: FloatArray = (
        -(basis.T @ (weight[:, np.newaxis] * basis)) - count * np.outer(projected, projected) + outer
    )
    return value, gradient, curvature


def _penalty(a: FloatArray, penalty: float) -> tuple[float, FloatArray, FloatArray]:
    """``penalty ||a||``, its gradient and Hessian (both 0 at a = 0)."""
    norm = math.sqrt(float(a @ a))
    if norm == 0:
        return 0.0, np.zeros_like(a), np.zeros((a.size, a.size))
    unit = a / norm
    return penalty * norm, penalty * unit, (penalty / norm) * (np.eye(a.size) - np.outer(unit, unit))


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
    memory_budget: int | None = None,
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
    memory_budget : int, optional
        Bytes the ``(len(y), grid_size)`` likelihood matrix may take; a larger one is recomputed block by block
        at each pass instead of kept (the result is the same). None keeps it whatever its size.
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
    kernels = _KernelRows(obs, grid, sigma, memory_budget)
    a, gradient = _newton(basis, kernels, penalty)
    eta = basis @ a
    g = np.exp(eta - special.logsumexp(eta))
    log_f = -_likelihood_terms(a, basis, kernels, hessian=False)[0]
    log_lik = log_f + kernels.log_shift - obs.size * math.log(sigma * math.sqrt(2 * math.pi))
    converged = float(np.max(np.abs(gradient))) <= _GRADIENT_TOLERANCE
    return GModelFit(grid=grid, g=g, coefficients=a, converged=converged, log_likelihood=log_lik)


class _KernelRows:
    """``phi_sigma(y_b - t_j)`` up to a per-row factor (each row divided by its maximum), in blocks of rows.

    The blocks are fixed (``_BLOCK_ROWS`` rows), and every sum runs over them in order, so the fit does not
    depend on the memory budget: the blocks are kept when the whole ``(B, K)`` matrix fits it, and otherwise
    recomputed at each pass.
    """

    def __init__(self, obs: FloatArray, grid: FloatArray, sigma: float, memory_budget: int | None) -> None:
        self.obs, self.grid, self.sigma = obs, grid, sigma
        keep = memory_budget is None or obs.size * grid.size * 8 <= memory_budget
        blocks: list[FloatArray] = []
        self.log_shift = 0.0
        """``sum_b max_j log phi`` (unnormalised): the constant the row scaling removed."""
        for start in self._starts():
            block = self._log_block(start)
            maxima = block.max(axis=1, keepdims=True)
            self.log_shift += float(maxima.sum())
            if keep:
                blocks.append(_scaled_exp(block, maxima))
        self.cached = blocks if keep else None

    def _block(self, start: int) -> FloatArray:
        block = self._log_block(start)
        return _scaled_exp(block, block.max(axis=1, keepdims=True))

    def _log_block(self, start: int) -> FloatArray:
        """``log phi_sigma(y_b - t_j)`` up to a constant, in one buffer updated in place."""
        block = self.obs[start : start + _BLOCK_ROWS, np.newaxis] - self.grid[np.newaxis, :]
        block /= self.sigma
        np.square(block, out=block)
        block *= -0.5
        return block

    def _starts(self) -> range:
        return range(0, self.obs.size, _BLOCK_ROWS)

    def __iter__(self) -> Iterator[FloatArray]:
        if self.cached is not None:
            return iter(self.cached)
        return (self._block(i) for i in self._starts())


def _scaled_exp(log_block: FloatArray, maxima: FloatArray) -> FloatArray:
    """``exp(log_block - maxima)``, in place."""
    log_block -= maxima
    np.exp(log_block, out=log_block)
    return log_block


def _newton(basis: FloatArray, kernels: Iterable[FloatArray], penalty: float) -> tuple[FloatArray, FloatArray]:
    """Minimise the penalised objective by Newton's method with the exact Hessian and a backtracking line search.

    An indefinite Hessian is shifted by a multiple of the identity until it is positive definite (a damped
    step). Stops once the gradient is below ``_NEWTON_TOLERANCE`` or the decrease the step predicts, or finds,
    is at rounding level. Returns the coefficients and the final gradient.
    """

    def terms(a: FloatArray) -> tuple[float, FloatArray, FloatArray]:
        value, gradient, hessian = _likelihood_terms(a, basis, kernels, hessian=True)
        pen_value, pen_gradient, pen_hessian = _penalty(a, penalty)
        return value + pen_value, gradient + pen_gradient, hessian + pen_hessian

    a = np.zeros(basis.shape[1])
    value, gradient, hessian = terms(a)
    for _ in range(_NEWTON_STEPS):
        if float(np.max(np.abs(gradient))) <= _NEWTON_TOLERANCE:
            break
        step = _descent_step(hessian, gradient)
        slope = float(gradient @ step)
        if -slope <= _ROUNDING * max(1.0, abs(value)):
            break  # the predicted decrease (twice the Newton decrement) is at rounding level
        scale = 1.0
        while scale > 1e-10:
            trial = terms(a + scale * step)  # with its Hessian: the full Newton step is nearly always taken
            if trial[0] < value and trial[0] <= value + 1e-4 * scale * slope:
                break
            scale /= 2.0
        else:
            break  # no decrease left at rounding level
        a = a + scale * step
        value, gradient, hessian = trial
    return a, gradient


def _descent_step(hessian: FloatArray, gradient: FloatArray) -> FloatArray:
    """``-(H + lambda I)^-1 gradient`` with the smallest lambda in 0, 1e-8 scale, 1e-7 scale, ... that makes
    ``H + lambda I`` positive definite."""
    scale = max(1.0, float(np.max(np.abs(np.diag(hessian)))))
    shift = 0.0
    while True:
        try:
            factor = np.linalg.cholesky(hessian + shift * np.eye(gradient.size))
        except np.linalg.LinAlgError:
            shift = scale * 1e-8 if shift == 0.0 else shift * 10.0
            continue
        step: FloatArray = -np.linalg.solve(factor.T, np.linalg.solve(factor, gradient))
        return step


_BLOCK_ROWS = 2048
"""Rows of the likelihood matrix per block (about 5 MB at 300 grid points)."""

_NEWTON_STEPS = 100
_NEWTON_TOLERANCE = 1e-8
"""Largest gradient component at which Newton stops (quadratic convergence gets there in a few steps)."""

_ROUNDING = 1e-14
"""A predicted decrease below this fraction of the objective is rounding."""

_GRADIENT_TOLERANCE = 1e-4
"""Largest gradient component (the objective is a sum over the observations) accepted as converged."""
