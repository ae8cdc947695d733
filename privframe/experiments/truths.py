"""Population values that need numerical work: the KS distance and the penalised logistic slope.

Both are computed deterministically (quadrature and optimisation), never by simulation, so a coverage
estimate is not biased by Monte Carlo error in its own target.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt
from scipy import integrate, optimize, special

from privframe.errors import ConfigError

__all__ = ["ks_distance", "logistic_penalised_coefficients"]

FloatArray = npt.NDArray[np.float64]
Cdf = Callable[[FloatArray], FloatArray]


def ks_distance(cdf: Cdf, reference: Cdf, low: float, high: float, *, grid: int = 20001) -> float:
    """``sup_x |cdf(x) - reference(x)|`` over ``[low, high]``: a dense grid, then local refinement.

    Parameters
    ----------
    cdf, reference : callable
        Vectorised CDFs.
    low, high : float
        A range outside of which both CDFs are (numerically) equal, e.g. both 0 or both 1.
    grid : int
        Grid points of the first pass; every local maximum of the grid is refined with a bounded
        scalar search between its neighbours.

    Returns
    -------
    float
    """
    x = np.linspace(low, high, grid)
    gap = np.abs(cdf(x) - reference(x))
    best = float(gap.max())
    interior = np.flatnonzero((gap[1:-1] >= gap[:-2]) & (gap[1:-1] >= gap[2:])) + 1
    # Refine the largest local maxima only; there are few for smooth CDFs.
    for i in interior[np.argsort(gap[interior])[::-1][:8]]:
        res = optimize.minimize_scalar(
            lambda t: -float(np.abs(cdf(np.array([t])) - reference(np.array([t])))[0]),
            bounds=(float(x[i - 1]), float(x[i + 1])),
            method="bounded",
            options={"xatol": 1e-12},
        )
        best = max(best, -float(res.fun))
    return best


def logistic_penalised_coefficients(
    intercept: float, slope: float, low: float, high: float, penalty: float
) -> FloatArray:
    """The minimiser of the penalised population logistic loss with features ``z = (1, x) / sqrt(2)``.

    ``x ~ Unif[low, high]``, ``P(y = +1 | x) = 1 / (1 + exp(-(intercept + slope x)))``, and the objective
    is ``E[log(1 + exp(-y b'z))] + penalty * ||b||^2`` (the objective of the ``logistic-slope``
    statistic, in population form). The expectation over x is computed by adaptive quadrature
    (``scipy.integrate.quad_vec``) and the strictly convex objective is minimised with its exact gradient.

    Returns
    -------
    ndarray, shape (2,)
        The coefficients on ``(1/sqrt(2), x/sqrt(2))``.
    """
    if not penalty > 0:
        raise ConfigError("penalty: must be > 0 for the penalised population slope")
    root2 = np.sqrt(2.0)
    width = high - low

    def integrand(x: float, b: FloatArray) -> FloatArray:
        z = np.array([1.0, x]) / root2
        t = float(b @ z)
        p = float(special.expit(intercept + slope * x))
        # p log(1 + e^-t) + (1 - p) log(1 + e^t), and its gradient (sigmoid(t) - p) z.
        loss = p * np.logaddexp(0.0, -t) + (1.0 - p) * np.logaddexp(0.0, t)
        grad = (float(special.expit(t)) - p) * z
        return np.concatenate(([loss], grad)) / width

    def objective(b: FloatArray) -> tuple[float, FloatArray]:
        values, _ = integrate.quad_vec(lambda x: integrand(x, b), low, high, epsabs=1e-14, epsrel=1e-13)
        return float(values[0] + penalty * (b @ b)), values[1:] + 2.0 * penalty * b

    result = optimize.minimize(objective, np.zeros(2), jac=True, method="BFGS", options={"gtol": 1e-12})
    _, gradient = objective(result.x)
    if not np.all(np.abs(gradient) < 1e-9):
        raise ConfigError("penalty: the population logistic minimiser did not converge")
    coefficients: FloatArray = np.asarray(result.x, dtype=np.float64)
    return coefficients
