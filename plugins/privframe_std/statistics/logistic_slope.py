"""One coefficient of L2-penalised logistic regression (``docs/algorithms.md``, section 4), by vectorised Newton."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import attrs
import numpy as np

import privframe.plugin as pp
from privframe._typing import LazyModule
from privframe.errors import ConfigError, DataError
from privframe_std.statistics.mean import NOISE_MECHANISMS

special = LazyModule("scipy.special")  # imported on first use (0.2 s the plugins' loading need not pay)

__all__ = [
    "DEFAULT_PENALTY",
    "DEFAULT_PENALTY_SCALED",
    "LogisticSlope",
    "fit_penalised_logistic",
    "logistic_penalised_coefficients",
]

_ROUNDING = 8 * np.finfo(np.float64).eps

DEFAULT_PENALTY = 0.01
"""The penalty c when the features are given as they are (rows of norm <= R); the experiments use it."""

DEFAULT_PENALTY_SCALED = 0.001
"""The penalty c with ``feature_bounds``: the smallest power of ten whose noise still leaves a useful interval at
n = 2000 under 1-GDP on a one-feature model (measured in ``docs/logistic-regression.md``)."""


def _margins(yz: pp.Array, b: pp.Array) -> pp.Array:
    """``y_i b'z_i`` for every row and record, ``(T, k)`` (batched matrix products)."""
    margins: pp.Array = np.matmul(yz, b[..., np.newaxis])[..., 0]
    return margins


def _objective(yz: pp.Array, b: pp.Array, penalty: float) -> pp.Array:
    values: pp.Array = np.mean(np.logaddexp(0.0, -_margins(yz, b)), axis=1) + penalty * np.sum(b * b, axis=1)
    return values


def fit_penalised_logistic(
    features: pp.Array, labels: pp.Array, penalty: float, *, tol: float = 1e-10, max_iter: int = 100
) -> pp.Array:
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
    if isinstance(bounds, pp.L2Ball):
        return bounds.radius
    if isinstance(bounds, (int, float)) and not isinstance(bounds, bool) and math.isfinite(bounds) and bounds > 0:
        return float(bounds)
    raise ConfigError("logistic-slope takes a feature-norm bound (a number > 0 or pf.L2Ball), default 1", path="bounds")


def _label(_: object, attribute: attrs.Attribute[str | None], value: object) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise ConfigError("must be the name of the label column (a string), or None for an array", path="label")


def _real(value: object) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def _feature_bounds(value: Any) -> tuple[tuple[float, float], ...] | None:
    """``feature_bounds`` as a tuple of ``(low, high)`` pairs; a ``ConfigError`` naming it otherwise.

    Each pair is a ``(low, high)`` sequence of two finite real numbers with ``low < high``, or a
    ``pf.Bounds``. A flat pair ``(5.0, 30.0)`` is refused rather than guessed to mean one feature.
    """
    if value is None:
        return None
    example = "e.g. [(5.0, 30.0)] for one feature"
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)) or not value:
        raise ConfigError(f"expected a list of (low, high) pairs, one per feature, {example}", path="feature_bounds")
    pairs: list[tuple[float, float]] = []
    for number, pair in enumerate(value, start=1):
        if isinstance(pair, pp.Bounds):
            pairs.append((pair.low, pair.high))
            continue
        if isinstance(pair, (str, bytes)) or not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ConfigError(
                f"entry {number} is not a (low, high) pair; expected one pair per feature, {example}",
                path="feature_bounds",
            )
        if not all(_real(end) for end in pair):
            raise ConfigError(f"entry {number}: low and high must be real numbers", path="feature_bounds")
        low, high = float(pair[0]), float(pair[1])
        if not (math.isfinite(low) and math.isfinite(high)):
            raise ConfigError(
                f"entry {number}: low and high must be finite (bounds are public inputs)", path="feature_bounds"
            )
        if not low < high or not math.isfinite(high - low):
            raise ConfigError(f"entry {number}: need low < high (and a finite width)", path="feature_bounds")
        pairs.append((low, high))
    return tuple(pairs)


def _labels(column: pp.Array) -> pp.Array:
    """Labels as -1 or +1: values >= 0.5 are positive and all others negative.

    This reads both codings, 0/1 and -1/+1, the same way. Any other value is mapped by the same rule instead
    of raising: an error raised for some datasets and not for their neighbours would itself be a release.
    """
    labels: pp.Array = np.where(column >= 0.5, 1.0, -1.0)
    return labels


def logistic_penalised_coefficients(
    intercept: float, slope: float, low: float, high: float, penalty: float
) -> pp.Array:
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

    def integrand(x: float, b: pp.Array) -> pp.Array:
        z = np.array([1.0, x]) / root2
        t = float(b @ z)
        p = float(special.expit(intercept + slope * x))
        # p log(1 + e^-t) + (1 - p) log(1 + e^t), and its gradient (sigmoid(t) - p) z.
        loss = p * np.logaddexp(0.0, -t) + (1.0 - p) * np.logaddexp(0.0, t)
        grad = (float(special.expit(t)) - p) * z
        return np.concatenate(([loss], grad)) / width

    def objective(b: pp.Array) -> tuple[float, pp.Array]:
        values, _ = integrate.quad_vec(lambda x: integrand(x, b), low, high, epsabs=1e-14, epsrel=1e-13)
        return float(values[0] + penalty * (b @ b)), values[1:] + 2.0 * penalty * b

    result = optimize.minimize(objective, np.zeros(2), jac=True, method="BFGS", options={"gtol": 1e-12})
    _, gradient = objective(result.x)
    if not np.all(np.abs(gradient) < 1e-9):
        raise ConfigError("the population logistic minimiser did not converge", path="penalty")
    coefficients: pp.Array = np.asarray(result.x, dtype=np.float64)
    return coefficients


@attrs.frozen
class LogisticSlope:
    """One coefficient of the L2-penalised logistic-regression minimiser.

    Data are an ``(n, d + 1)`` array: d features, then the label. Labels coded 0/1 or -1/+1 both work: a
    label of at least 0.5 is positive (+1), every other value negative (-1), so a value outside either
    coding is mapped, never refused (a refusal would depend on the data).

    Two ways to give the features:

    - ``feature_bounds`` (the usual way): one public ``(low, high)`` pair per feature. Each feature is
      clipped to its pair and scaled to ``[-1, 1]``, an intercept is added, and the row
      ``z = (1, u_1, ..., u_d) / sqrt(d + 1)`` has norm at most 1. The release is the slope of the chosen
      feature **per unit of the original feature**: the coefficient on ``z`` divided by
      ``(high - low) / 2 * sqrt(d + 1)``, a public constant, so the sensitivity is divided by it too.
      ``bounds`` must then be left out.
    - Without ``feature_bounds`` the features are used as given (build any intercept column yourself) and
      rows are projected onto the ball of radius R (``bounds``: a number or ``pf.L2Ball(R)``; default 1).

    The estimate minimises ``(1/k) sum_i log(1 + exp(-y_i b'z_i)) + c ||b||^2``; the loss is R-Lipschitz in
    b and the objective 2c-strongly convex, so replacing one record moves the minimiser by at most
    ``R / (k c)`` in L2 (Chaudhuri, Monteleoni and Sarwate 2011), and so moves every coordinate by at most
    that. The solver stops at gradient norm ``tol``, within ``tol / (2 c)`` of the exact minimiser, so the
    sensitivity reported is ``R / (k c) + tol / c`` (times the public scale with ``feature_bounds``). The
    penalty shrinks the slope towards 0 (``docs/logistic-regression.md`` measures how much). Rate ``sqrt(k)``.

    Parameters
    ----------
    penalty : float, optional
        c > 0; default ``DEFAULT_PENALTY_SCALED`` (0.001) with ``feature_bounds`` and ``DEFAULT_PENALTY``
        (0.01) without (:attr:`c` is the value in use).
    coef : int, default -1
        The feature whose coefficient is released (default the last feature, the slope).
    tol : float, default 1e-10
        Gradient-norm tolerance of the Newton solver.
    max_iter : int, default 100
        Newton iterations before giving up.
    feature_bounds : list of (low, high) pairs, optional
        Public bounds of the d features, in order; never computed from the data.

    Examples
    --------
    >>> import numpy as np, privframe as pf
    >>> rng = np.random.default_rng(0)
    >>> radius = rng.uniform(6.0, 28.0, size=20_000)
    >>> malignant = rng.binomial(1, 1 / (1 + np.exp(-(radius - 15.0) / 2.0)))   # slope 0.5 per unit
    >>> res = pf.confidence_interval(np.column_stack((radius, malignant)), "logistic-slope",
    ...                              feature_bounds=[(5.0, 30.0)], method="cr-gs", budget=pf.GDP(1.0), rng=1)
    >>> bool(0.3 < res.center < 0.6)       # the penalised slope (about 0.36): shrunk towards 0 from 0.5
    True
    """

    name: ClassVar[str] = "logistic-slope"
    penalty: float | None = attrs.field(default=None, validator=pp.validators.optional(pp.validators.positive))
    coef: int = attrs.field(
        default=-1, converter=pp.validators.as_int, validator=pp.validators.integer_at_least(-(2**31))
    )
    tol: float = attrs.field(default=1e-10, validator=pp.validators.positive)
    max_iter: int = attrs.field(
        default=100, converter=pp.validators.as_int, validator=pp.validators.integer_at_least(1)
    )
    feature_bounds: tuple[tuple[float, float], ...] | None = attrs.field(default=None, converter=_feature_bounds)
    label: str | None = attrs.field(default=None, validator=_label)

    bounds_help: ClassVar[str] = (
        "give public feature_bounds=[(low, high), ...], one pair per feature in the features' own units, chosen "
        "without looking at the data (for features you have already scaled onto a ball, bounds=pf.L2Ball(R))"
    )

    @property
    def traits(self) -> pp.StatisticTraits:
        """Bounds are required unless ``feature_bounds`` gives them per feature."""
        return pp.StatisticTraits(requires_bounds=self.feature_bounds is None, default_mechanisms=NOISE_MECHANISMS)

    @property
    def estimand(self) -> str:
        """What the interval is for, in words: the penalised slope, never the maximum-likelihood one."""
        which = "the last feature" if self.coef == -1 else f"feature {self.coef}"
        return f"penalised logistic slope of {which} (L2 penalty c = {self.c:g}; shrunk towards 0 from the MLE)"

    @property
    def c(self) -> float:
        """The penalty in use: ``penalty``, or its default for the way the features are given."""
        if self.penalty is not None:
            return self.penalty
        return DEFAULT_PENALTY if self.feature_bounds is None else DEFAULT_PENALTY_SCALED

    def __attrs_post_init__(self) -> None:
        if self.feature_bounds is not None and not -len(self.feature_bounds) <= self.coef < len(self.feature_bounds):
            d = len(self.feature_bounds)
            raise ConfigError(
                f"must index one of the d = {d} features of feature_bounds (-{d} .. {d - 1})", path="coef"
            )

    def _scale(self) -> float:
        """The released coefficient per unit of the coefficient on ``z`` (1 without ``feature_bounds``)."""
        if self.feature_bounds is None:
            return 1.0
        low, high = self.feature_bounds[self.coef]
        return 1.0 / ((high - low) / 2.0 * math.sqrt(len(self.feature_bounds) + 1))

    def check_shape(self, shape: tuple[int, ...], bounds: Any) -> None:
        """An ``(n, d + 1)`` array, one pair of ``feature_bounds`` per feature, ``coef`` one of the d features."""
        if self.feature_bounds is not None and bounds is not None:
            raise ConfigError(
                "logistic-slope with feature_bounds scales the features itself; leave bounds out", path="bounds"
            )
        _radius(bounds)
        if len(shape) != 2 or shape[1] < 2:
            raise DataError("logistic-slope needs an (n, d + 1) array: d >= 1 features, then the label", path="x")
        d = shape[1] - 1
        if self.feature_bounds is not None and len(self.feature_bounds) != d:
            raise ConfigError(
                f"gives {len(self.feature_bounds)} (low, high) pairs for d = {d} features (one per feature)",
                path="statistic.feature_bounds",
            )
        if not -d <= self.coef < d:
            raise ConfigError(f"must index one of the d = {d} features (-{d} .. {d - 1})", path="coef")

    def prepare(self, x: pp.Array, bounds: Any) -> pp.Array:
        """Check the shape and the coefficient index, code the labels -1/+1, and clip (and scale) the features."""
        self.check_shape(x.shape, bounds)
        radius = _radius(bounds)
        d = x.shape[1] - 1
        labels = _labels(x[:, -1])
        if self.feature_bounds is None:
            features = pp.L2Ball(radius).clip(x[:, :-1])
        else:
            low, high = np.array(self.feature_bounds).T
            centre, half = (low + high) / 2.0, (high - low) / 2.0
            scaled = (np.clip(x[:, :-1], low, high) - centre) / half
            rows = np.column_stack((np.ones(x.shape[0]), scaled)) / math.sqrt(d + 1)
            features = pp.L2Ball(1.0).clip(rows)  # norm <= 1 already; this removes rounding above it
        prepared: pp.Array = np.column_stack((features, labels))
        return prepared

    def evaluate_batch(self, x: pp.Array, index: pp.IndexMatrix) -> pp.Array:
        """The chosen coefficient on B resamples, ``(B, 1)``, from one vectorised Newton solve."""
        rows = x[index]
        b = fit_penalised_logistic(rows[..., :-1], rows[..., -1], self.c, tol=self.tol, max_iter=self.max_iter)
        if self.feature_bounds is None:
            chosen = b[:, self.coef]
        else:  # column 0 is the intercept
            chosen = b[:, 1 + self.coef % len(self.feature_bounds)] * self._scale()
        coefficient: pp.Array = chosen[:, np.newaxis]
        return coefficient

    def value_range(self, bounds: Any) -> tuple[float, float]:
        """``(-r, r)``: the released coefficient's range whatever the data (``pp.RangedStatistic``).

        The solver starts at b = 0, where the objective is ln 2, and accepts no step that raises it by more
        than a rounding (``_ROUNDING`` of it, at most 100 times), and the loss term is never negative, so
        ``c ||b||^2 <= ln 2 (1 + _ROUNDING)^100``: every coefficient is within ``sqrt(ln 2 / c)`` (with a
        margin of 1e-6) of 0, times the public scale of the release. The population slope, the minimiser of
        the expected objective, is within the same bound, so intersecting an interval with it
        (post-processing) never removes the estimand; an interval wider than it (at absurd bounds the noise
        can make it infinite) is then the whole range, flagged.
        """
        reach = math.sqrt(math.log(2.0) / self.c) * (1.0 + 1e-6) * self._scale()
        return (-reach, reach)

    def sensitivity(self, k: int, bounds: Any) -> float:
        """``R / (k c) + (tol + 2^-40) / c``: the minimiser's replace-one L2 sensitivity plus the solver
        tolerance, and a margin for the rounding of the computed gradient norm the tolerance is checked on
        (its terms are at most R + 2 c |b| in size: its error is below 2^-40 for the norms and penalties
        privframe allows).

        With ``feature_bounds``, R = 1 and the result is multiplied by the public scale of the release.
        """
        return (_radius(bounds) / (k * self.c) + (self.tol + 2.0**-40) / self.c) * self._scale()

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
        if self.feature_bounds is not None:
            raise ConfigError(
                "the population value is known for rows (1, x) / sqrt(2) given directly; leave feature_bounds out",
                path="feature_bounds",
            )
        if not -2 <= self.coef <= 1:
            raise ConfigError("must be a feature index (0, 1, or -1 for the last)", path="coef")
        return float(logistic_penalised_coefficients(intercept, slope, low, high, self.c)[self.coef])
