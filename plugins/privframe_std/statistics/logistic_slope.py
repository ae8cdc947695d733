"""One coefficient of L2-penalised logistic regression (``docs/algorithms.md``, section 4), by vectorised Newton."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import attrs
import numpy as np
from scipy import special

import privframe as pf
from privframe.errors import ConfigError, DataError

__all__ = ["LogisticSlope", "fit_penalised_logistic", "logistic_penalised_coefficients"]

_ROUNDING = 8 * np.finfo(np.float64).eps


def _margins(yz: pf.Array, b: pf.Array) -> pf.Array:
    """``y_i b'z_i`` for every row and record, ``(T, k)`` (batched matrix products)."""
    margins: pf.Array = np.matmul(yz, b[..., np.newaxis])[..., 0]
    return margins


def _objective(yz: pf.Array, b: pf.Array, penalty: float) -> pf.Array:
    values: pf.Array = np.mean(np.logaddexp(0.0, -_margins(yz, b)), axis=1) + penalty * np.sum(b * b, axis=1)
    return values


def fit_penalised_logistic(
    features: pf.Array, labels: pf.Array, penalty: float, *, tol: float = 1e-10, max_iter: int = 100
) -> pf.Array:
    """Minimisers of ``(1/k) sum_i log(1 + exp(-y_i b'z_i)) + penalty ||b||^2`` for T datasets at once.

    Damped Newton (Armijo backtracking) on all T problems together; the objective is ``2 penalty``-strongly
    convex, so it converges globally. Stops when every gradient norm is at most ``tol``, which puts each
    solution within ``tol / (2 penalty)`` of the exact minimiser.

    Parameters
    ----------
    features : ndarray, shape (T, k, d)
    labels : ndarray, shape (T, k)
        Values in {-1, +1}.
    penalty : float
        c > 0.
    tol : float
        Gradient-norm tolerance.
    max_iter : int
        Newton iterations at most; the last iterate is returned if the tolerance is not met by then (not
        reached in practice; an error would depend on the data).

    Returns
    -------
    ndarray, shape (T, d)
    """
    rows, k, d = features.shape
    yz = labels[..., np.newaxis] * features
    b = np.zeros((rows, d), dtype=np.float64)
    ridge = 2.0 * penalty * np.eye(d)
    current = _objective(yz, b, penalty)
    for _ in range(max_iter):
        s = special.expit(-_margins(yz, b))  # sigma(-y b'z)
        gradient = -np.matmul(s[:, np.newaxis, :], yz)[:, 0, :] / k + 2.0 * penalty * b
        if np.all(np.linalg.norm(gradient, axis=1) <= tol):
            return b
        weighted = features * (s * (1.0 - s))[..., np.newaxis]
        hessian = np.matmul(weighted.transpose(0, 2, 1), features) / k + ridge
        step = np.linalg.solve(hessian, gradient[..., np.newaxis])[..., 0]
        decrement = np.sum(gradient * step, axis=1)
        size = np.ones(rows)
        for _ in range(60):
            trial = _objective(yz, b - size[:, np.newaxis] * step, penalty)
            accepted = trial <= current - 1e-4 * size * decrement + _ROUNDING * np.abs(current)
            if accepted.all():
                break
            size = np.where(accepted, size, 0.5 * size)
        b = b - size[:, np.newaxis] * step
        current = trial if accepted.all() else _objective(yz, b, penalty)
    # Not reached in practice (the objective is strongly convex). Raising here would make the failure itself a
    # release that a neighbouring dataset need not make, so the last iterate is returned instead.
    return b


def _radius(bounds: Any) -> float:
    if bounds is None:
        return 1.0
    if isinstance(bounds, pf.L2Ball):
        return bounds.radius
    if isinstance(bounds, (int, float)) and not isinstance(bounds, bool) and math.isfinite(bounds) and bounds > 0:
        return float(bounds)
    raise ConfigError("logistic-slope takes a feature-norm bound (a number > 0 or pf.L2Ball), default 1", path="bounds")


def logistic_penalised_coefficients(
    intercept: float, slope: float, low: float, high: float, penalty: float
) -> pf.Array:
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
    from scipy import integrate, optimize  # only experiments need the population value

    if not penalty > 0:
        raise ConfigError("must be > 0 for the penalised population slope", path="penalty")
    root2 = np.sqrt(2.0)
    width = high - low

    def integrand(x: float, b: pf.Array) -> pf.Array:
        z = np.array([1.0, x]) / root2
        t = float(b @ z)
        p = float(special.expit(intercept + slope * x))
        # p log(1 + e^-t) + (1 - p) log(1 + e^t), and its gradient (sigmoid(t) - p) z.
        loss = p * np.logaddexp(0.0, -t) + (1.0 - p) * np.logaddexp(0.0, t)
        grad = (float(special.expit(t)) - p) * z
        return np.concatenate(([loss], grad)) / width

    def objective(b: pf.Array) -> tuple[float, pf.Array]:
        values, _ = integrate.quad_vec(lambda x: integrand(x, b), low, high, epsabs=1e-14, epsrel=1e-13)
        return float(values[0] + penalty * (b @ b)), values[1:] + 2.0 * penalty * b

    result = optimize.minimize(objective, np.zeros(2), jac=True, method="BFGS", options={"gtol": 1e-12})
    _, gradient = objective(result.x)
    if not np.all(np.abs(gradient) < 1e-9):
        raise ConfigError("the population logistic minimiser did not converge", path="penalty")
    coefficients: pf.Array = np.asarray(result.x, dtype=np.float64)
    return coefficients


@attrs.frozen
class LogisticSlope:
    """One coefficient of the L2-penalised logistic-regression minimiser.

    Data are an ``(n, d + 1)`` array: d features, then the label in {-1, +1}. Feature rows are projected onto
    the ball of radius R (``bounds``: a number or ``pf.L2Ball(R)``; default 1). The estimate minimises
    ``(1/k) sum_i log(1 + exp(-y_i b'z_i)) + c ||b||^2``; the loss is R-Lipschitz in b and the objective
    2c-strongly convex, so replacing one record moves the minimiser by at most ``R / (k c)`` in L2
    (Chaudhuri, Monteleoni and Sarwate 2011), and so moves every coordinate by at most that. The solver stops
    at gradient norm ``tol``, within ``tol / (2 c)`` of the exact minimiser, so the sensitivity reported is
    ``R / (k c) + tol / c``. Rate ``sqrt(k)``.

    Parameters
    ----------
    penalty : float, default 0.01
        c > 0.
    coef : int, default -1
        The coordinate released (default the last feature, the slope).
    tol : float, default 1e-10
        Gradient-norm tolerance of the Newton solver.
    max_iter : int, default 100
        Newton iterations before giving up.
    """

    name: ClassVar[str] = "logistic-slope"
    requires_bounds: ClassVar[bool] = False
    penalty: float = attrs.field(default=0.01, validator=pf.validators.positive)
    coef: int = attrs.field(default=-1, validator=pf.validators.integer_at_least(-(2**31)))
    tol: float = attrs.field(default=1e-10, validator=pf.validators.positive)
    max_iter: int = attrs.field(default=100, validator=pf.validators.integer_at_least(1))

    def prepare(self, x: pf.Array, bounds: Any) -> pf.Array:
        """Check the labels and the coefficient index, and project feature rows onto the ball."""
        radius = _radius(bounds)
        if x.ndim != 2 or x.shape[1] < 2:
            raise DataError("logistic-slope needs an (n, d + 1) array: d >= 1 features, then the label", path="x")
        d = x.shape[1] - 1
        if not -d <= self.coef < d:
            raise ConfigError(f"must index one of the d = {d} features (-{d} .. {d - 1})", path="coef")
        labels = x[:, -1]
        if not np.all((labels == 1.0) | (labels == -1.0)):
            raise DataError("the last column (the label) must be -1 or +1", path="x")
        features = pf.L2Ball(radius).clip(x[:, :-1])
        prepared: pf.Array = np.column_stack((features, labels))
        return prepared

    def evaluate_batch(self, x: pf.Array, index: pf.IndexMatrix) -> pf.Array:
        """The chosen coefficient on B resamples, ``(B, 1)``, from one vectorised Newton solve."""
        rows = x[index]
        b = fit_penalised_logistic(rows[..., :-1], rows[..., -1], self.penalty, tol=self.tol, max_iter=self.max_iter)
        coefficient: pf.Array = b[:, self.coef][:, np.newaxis]
        return coefficient

    def sensitivity(self, k: int, bounds: Any) -> float:
        """``R / (k c) + tol / c``: the minimiser's replace-one L2 sensitivity plus the solver tolerance."""
        return _radius(bounds) / (k * self.penalty) + self.tol / self.penalty

    def default_mechanism(self, budget: pf.Budget) -> str:
        """Laplace under a pure or (eps, delta) budget, Gaussian under GDP."""
        return "gaussian" if isinstance(budget, pf.GDP) else "laplace"

    def population_value(self, population: Any) -> float:
        """The chosen coefficient of the penalised population minimiser of a logistic-regression model.

        ``population`` describes records ``z = (1, x) / sqrt(2)``, ``x ~ Unif[low, high]`` and
        ``P(y = +1 | x) = expit(intercept + slope x)`` through those four attributes (the experiments'
        ``logistic`` generator).
        """
        try:
            intercept, slope, low, high = (
                float(getattr(population, key)) for key in ("intercept", "slope", "low", "high")
            )
        except (AttributeError, TypeError, ValueError):
            raise ConfigError(
                f"statistic '{self.name}' knows the population value of a logistic-regression model (intercept, "
                "slope, low, high) only; give the method's truth explicitly",
                path="truth",
            ) from None
        if not -2 <= self.coef <= 1:
            raise ConfigError("must be a feature index (0, 1, or -1 for the last)", path="coef")
        return float(logistic_penalised_coefficients(intercept, slope, low, high, self.penalty)[self.coef])
