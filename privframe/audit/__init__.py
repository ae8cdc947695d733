"""Empirical privacy auditing: test a release against the tradeoff curve its ledger claims.

A mechanism that is mu-GDP (or (eps, delta)-DP) makes every test of "the output came from ``d0``"
against "it came from ``d1``" hard: its type II error ``beta`` is at least ``f(alpha)`` for the claimed
tradeoff curve ``f``. :func:`audit_mechanism` runs a release many times on two neighbouring datasets,
evaluates threshold tests on the outputs, bounds each test's errors with exact (Clopper-Pearson)
binomial confidence intervals, and reports

- whether some test **violates** the claimed curve beyond statistical error (``passed`` is False), and
- the **empirical lower bound** on mu (GDP claims) or epsilon ((eps, delta)-DP and pure-DP claims)
  that the tests prove.

Both statements hold simultaneously with probability at least ``1 - significance``: every binomial
interval is taken at level ``1 - significance / (2 K)`` for the ``K`` thresholds tested (a Bonferroni
correction), and the thresholds are chosen on a separate calibration sample, so they are fixed before
the counted outputs are drawn.

An audit can only ever show that a release is **less** private than claimed; passing is evidence, not
proof. It is strongest on a worst-case pair of neighbours, which the caller supplies (see
:func:`worst_case_pair` for bounded data).

Examples
--------
A Gaussian release with sensitivity 1 and noise ``1 / mu`` is mu-GDP; with half the noise it is not:

>>> import numpy as np
>>> import privframe as pf
>>> def release(value, rng, batch):
...     return value + rng.standard_normal(batch)
>>> result = pf.audit.audit_mechanism(release, 0.0, 1.0, pf.GDP(1.0), n_samples=20_000, rng=1, batch=10_000)
>>> result.passed, 0.8 < result.empirical_lower_bound <= 1.0
(True, True)
>>> def broken(value, rng, batch):
...     return value + 0.5 * rng.standard_normal(batch)
>>> pf.audit.audit_mechanism(broken, 0.0, 1.0, pf.GDP(1.0), n_samples=20_000, rng=1, batch=10_000).passed
False
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal

import attrs
import numpy as np
import numpy.typing as npt
from scipy import special, stats

from privframe._rng import RngLike, as_seed_sequence, spawn_generators
from privframe._typing import Array
from privframe.bounds import Bounds, L2Ball
from privframe.errors import BudgetError, ConfigError, PTRFailed
from privframe.plugin.protocols import BatchSmoothMechanism, Mechanism, SelectionMechanism, SmoothMechanism, Statistic
from privframe.privacy.budgets import GDP, ApproxDP, Budget, PureDP

__all__ = [
    "AuditPoint",
    "AuditResult",
    "SELECTION_PAIR",
    "Release",
    "additive_release",
    "approx_dp_tradeoff",
    "audit_additive_mechanism",
    "audit_mechanism",
    "audit_registered_mechanism",
    "audit_selection_mechanism",
    "audit_smooth_mechanism",
    "clopper_pearson",
    "gdp_tradeoff",
    "selection_release",
    "smooth_release",
    "tradeoff_curve",
    "worst_case_pair",
]

Release = Callable[..., npt.ArrayLike]
"""``release(data, rng)`` -> one release (a number or an array); batched: ``release(data, rng, batch=k)``."""

Projection = Literal["mean-difference", "coordinates"]
Tail = Literal["upper", "lower"]
_PROJECTIONS = ("mean-difference", "coordinates")
_MIN_SAMPLES = 100
_MU_MIN, _MU_MAX = 1e-6, 100.0  # search range for the (mu, delta)-GDP lower bound
_EPS_GRID = 2001  # lines per (mu, delta)-GDP envelope; each is a valid bound, so density only sets tightness
_ENVELOPE_CHUNK = 256  # points per envelope evaluation (bounds the (points, _EPS_GRID) temporaries)


# ---------------------------------------------------------------------------------------------------------
# Results


@attrs.frozen
class AuditPoint:
    """One threshold test and its error rates, with simultaneous confidence bounds.

    The test rejects "the output came from ``d0``" when the score is above ``threshold``
    (``tail="upper"``) or at or below it (``tail="lower"``).

    Attributes
    ----------
    threshold : float
        The threshold on the score.
    tail : {"upper", "lower"}
        Which side of the threshold rejects.
    coordinate : int or None
        The output coordinate tested (``projection="coordinates"``), or None for a scalar score.
    alpha, beta : float
        Estimated type I error ``P(reject | d0)`` and type II error ``P(accept | d1)``.
    alpha_low, alpha_high, beta_low, beta_high : float
        Clopper-Pearson bounds (Bonferroni-corrected over all thresholds).
    bound : float
        The privacy parameter (mu or epsilon) this point proves: the true parameter is at least this
        large unless a confidence interval failed. ``-inf`` when the point proves nothing.
    violates : bool
        Whether the point lies below the claimed curve even at its upper confidence bounds.
    """

    threshold: float
    tail: Tail
    coordinate: int | None
    alpha: float
    beta: float
    alpha_low: float
    alpha_high: float
    beta_low: float
    beta_high: float
    bound: float
    violates: bool


@attrs.frozen
class AuditResult:
    """The outcome of :func:`audit_mechanism`.

    Attributes
    ----------
    passed : bool
        True when no tested point violates the claimed tradeoff curve beyond statistical error.
    claimed : Budget
        The guarantee that was audited.
    empirical_lower_bound : float
        The largest mu (GDP claims) or epsilon (other claims) proved by the tests, at least 0. With
        probability at least ``1 - significance`` the release's true parameter is at least this large.
    unit : {"mu", "epsilon"}
        The unit of ``empirical_lower_bound``.
    n_samples : int
        Releases per dataset that were counted (the calibration releases come on top).
    significance : float
        The family-wise error level of all the confidence bounds together.
    points : tuple of AuditPoint
        Every tested (threshold, alpha, beta) point, both tails.
    detectable_limit : float
        The largest claim (in ``unit``) this sample size could refute at all: what a release that tells the
        two datasets apart every time would prove. A claim at or above it cannot fail, whatever the release.
    samples_needed : int or None
        For an inconclusive audit, the sample size per dataset at which the claim becomes refutable
        (None when the audit is conclusive, or when no sample size below 10^12 suffices).

    The verdict is ``"failed"`` when a point violates the claim, ``"inconclusive"`` when none does but the
    claim is at or beyond ``detectable_limit``, and ``"passed"`` otherwise; ``passed`` is True only for
    ``"passed"``.
    """

    passed: bool
    claimed: Budget
    empirical_lower_bound: float
    unit: Literal["mu", "epsilon"]
    n_samples: int
    significance: float
    points: tuple[AuditPoint, ...] = attrs.field(repr=False)
    detectable_limit: float = math.inf
    samples_needed: int | None = None

    @property
    def conclusive(self) -> bool:
        """Whether the sample size could have refuted the claim (a violation is always conclusive)."""
        return bool(self.violations) or self.claimed_value < self.detectable_limit

    @property
    def verdict(self) -> Literal["passed", "failed", "inconclusive"]:
        """``"failed"`` (a violation), ``"inconclusive"`` (no violation, claim beyond reach) or ``"passed"``."""
        if self.violations:
            return "failed"
        return "passed" if self.conclusive else "inconclusive"

    @property
    def claimed_value(self) -> float:
        """The claimed parameter in ``unit`` (mu, or epsilon)."""
        return self.claimed.mu if isinstance(self.claimed, GDP) else self.claimed.epsilon

    @property
    def violations(self) -> tuple[AuditPoint, ...]:
        """The points that violate the claimed curve."""
        return tuple(p for p in self.points if p.violates)

    def __str__(self) -> str:
        if self.verdict == "failed":
            verdict = f"VIOLATION at {len(self.violations)} of {len(self.points)} points"
        elif self.verdict == "inconclusive":
            needed = f"; about {self.samples_needed} samples per dataset could" if self.samples_needed else ""
            verdict = (
                f"INCONCLUSIVE: {self.n_samples} samples cannot refute a claim of {self.claimed_value:g} or more "
                f"(largest refutable {self.unit} {self.detectable_limit:.4g}{needed})"
            )
        else:
            verdict = "passed"
        return (
            f"audit of {self.claimed}: {verdict}; empirical lower bound {self.unit} >= "
            f"{self.empirical_lower_bound:.4g} (claimed {self.claimed_value:g}; {self.n_samples} samples per "
            f"dataset, {1 - self.significance:.0%} confidence)"
        )


# ---------------------------------------------------------------------------------------------------------
# Tradeoff curves and binomial bounds


def gdp_tradeoff(alpha: npt.ArrayLike, mu: float) -> Array:
    """``G_mu(alpha) = Phi(Phi^{-1}(1 - alpha) - mu)``, the tradeoff curve of mu-GDP."""
    a = np.clip(np.asarray(alpha, dtype=np.float64), 0.0, 1.0)
    out: Array = special.ndtr(-special.ndtri(a) - mu)
    return out


def approx_dp_tradeoff(alpha: npt.ArrayLike, epsilon: float, delta: float) -> Array:
    """The (eps, delta)-DP curve ``max{0, 1 - delta - e^eps alpha, e^-eps (1 - delta - alpha)}``."""
    a = np.clip(np.asarray(alpha, dtype=np.float64), 0.0, 1.0)
    first = 1.0 - delta - math.exp(epsilon) * a
    second = math.exp(-epsilon) * (1.0 - delta - a)
    out: Array = np.maximum(0.0, np.maximum(first, second))
    return out


def _gdp_delta_curve(eps: Array, mu: Array | float) -> Array:
    """Tight delta(eps) of mu-GDP, vectorised over eps and mu (log space, as in ``accounting.gdp_delta``)."""
    first = special.log_ndtr(-eps / mu + mu / 2)
    second = eps + special.log_ndtr(-eps / mu - mu / 2)
    out: Array = np.where(second < first, -np.exp(first) * np.expm1(np.minimum(second - first, 0.0)), 0.0)
    return out


def _gdp_delta_envelope(alpha: Array, mu: npt.ArrayLike, delta: float) -> Array:
    """A lower bound on the tradeoff curve of (mu, delta)-GDP, vectorised over alpha (and mu, elementwise).

    (mu, delta)-GDP implies (eps, delta + delta_mu(eps))-DP for every eps >= 0 (``docs/algorithms.md``,
    section 1); the curve of each is a valid lower bound, so their maximum over a grid of eps in
    ``[0, 8 mu + 1]`` is one too (and tends to ``G_mu`` as delta -> 0).
    """
    a = np.clip(np.asarray(alpha, dtype=np.float64), 0.0, 1.0)
    mus = np.broadcast_to(np.asarray(mu, dtype=np.float64), a.shape).reshape(-1)
    flat = a.reshape(-1)
    out = np.empty(flat.shape, dtype=np.float64)
    unit = np.linspace(0.0, 1.0, _EPS_GRID)
    for start in range(0, flat.size, _ENVELOPE_CHUNK):
        rows = slice(start, start + _ENVELOPE_CHUNK)
        m, x = mus[rows, np.newaxis], flat[rows, np.newaxis]
        eps = unit * np.minimum(8.0 * m + 1.0, 700.0)  # e^700 still fits a float64
        total_delta = np.minimum(delta + _gdp_delta_curve(eps, m), 1.0)
        first = 1.0 - total_delta - np.exp(eps) * x
        second = np.exp(-eps) * (1.0 - total_delta - x)
        out[rows] = np.maximum(0.0, np.maximum(first, second).max(axis=1))
    envelope: Array = out.reshape(a.shape)
    return envelope


def tradeoff_curve(claimed: Budget, alpha: npt.ArrayLike) -> Array:
    """The claimed lower bound ``f(alpha)`` on the type II error of any test at type I error alpha.

    ``GDP(mu)``: ``G_mu``. ``GDP(mu, delta=d)``: the envelope of the (eps, d + delta_mu(eps))-DP curves.
    ``ApproxDP(eps, d)`` and ``PureDP(eps)``: the (eps, d)-DP curve.
    """
    a = np.asarray(alpha, dtype=np.float64)
    if isinstance(claimed, GDP):
        if claimed.delta == 0:
            return gdp_tradeoff(a, claimed.mu)
        return _gdp_delta_envelope(a, claimed.mu, claimed.delta)
    if isinstance(claimed, ApproxDP):
        return approx_dp_tradeoff(a, claimed.epsilon, claimed.delta)
    return approx_dp_tradeoff(a, claimed.epsilon, 0.0)


def clopper_pearson(successes: npt.ArrayLike, trials: int, level: float) -> tuple[Array, Array]:
    """Exact two-sided binomial confidence bounds at confidence ``level`` (vectorised over successes)."""
    k = np.asarray(successes, dtype=np.float64)
    tail = (1.0 - level) / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(k > 0, stats.beta.ppf(tail, k, trials - k + 1), 0.0)
        high = np.where(k < trials, stats.beta.ppf(1.0 - tail, k + 1, trials - k), 1.0)
    return np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)


# ---------------------------------------------------------------------------------------------------------
# The bound each point proves


def _point_bounds(claimed: Budget, alpha_high: Array, beta_high: Array) -> Array:
    """Per point, the largest parameter (mu or epsilon, the claim's delta fixed) whose curve it violates."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if isinstance(claimed, GDP) and claimed.delta == 0:
            # beta < G_mu(alpha)  <=>  mu > Phi^{-1}(1 - alpha) - Phi^{-1}(beta)
            mus: Array = -special.ndtri(alpha_high) - special.ndtri(beta_high)
            return np.where(np.isnan(mus), -np.inf, mus)
        if isinstance(claimed, GDP):
            return _bisect_mu(alpha_high, beta_high, claimed.delta)
        delta = claimed.delta if isinstance(claimed, ApproxDP) else 0.0
        # e^eps alpha + beta >= 1 - delta and alpha + e^eps beta >= 1 - delta must both hold
        first = np.log(np.maximum(1.0 - delta - beta_high, 0.0) / alpha_high)
        second = np.log(np.maximum(1.0 - delta - alpha_high, 0.0) / beta_high)
        eps: Array = np.maximum(first, second)
        return np.where(np.isnan(eps), -np.inf, eps)


def _bisect_mu(alpha: Array, beta: Array, delta: float) -> Array:
    """Largest mu with ``beta < envelope_{mu, delta}(alpha)`` per point (-inf if none), by bisection.

    Violation is monotone (a point below the curve of mu is below the curve of every smaller mu). The
    search runs over ``[1e-6, 100]`` on a log scale, 30 halvings: relative precision ~2e-8, rounded down.
    """
    out = np.full(alpha.shape, -np.inf)
    proves = beta < _gdp_delta_envelope(alpha, _MU_MIN, delta)
    if not proves.any():
        return out
    a, b = alpha[proves], beta[proves]
    low, high = np.full(a.shape, _MU_MIN), np.full(a.shape, _MU_MAX)
    capped = b < _gdp_delta_envelope(a, _MU_MAX, delta)
    for _ in range(30):
        mid = np.sqrt(low * high)
        hit = b < _gdp_delta_envelope(a, mid, delta)
        low = np.where(hit, mid, low)
        high = np.where(hit, high, mid)
    out[proves] = np.where(capped, _MU_MAX, low)
    return out


# ---------------------------------------------------------------------------------------------------------
# Validation and sampling


def _check_int(value: object, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ConfigError(f"must be an integer >= {low}", path=name)
    return int(value)


def _check_claimed(claimed: object) -> Budget:
    if not isinstance(claimed, (GDP, ApproxDP, PureDP)):
        raise BudgetError("expected pf.GDP, pf.ApproxDP or pf.PureDP", path="claimed")
    return claimed


def _draw(release: Release, data: Any, count: int, rng: np.random.Generator, batch: int | None) -> Array:
    """``count`` releases on ``data`` as a ``(count, d)`` array."""
    if batch is None:
        rows = [np.asarray(release(data, rng), dtype=np.float64).reshape(-1) for _ in range(count)]
        if len({row.shape for row in rows}) != 1:
            raise ConfigError("returned outputs of different shapes", path="release")
        out = np.stack(rows)
    else:
        parts = []
        for start in range(0, count, batch):
            size = min(batch, count - start)
            part = np.asarray(release(data, rng, batch=size), dtype=np.float64)
            if part.ndim == 0 or part.shape[0] != size:
                raise ConfigError(f"with batch={size} it must return {size} releases along axis 0", path="release")
            parts.append(part.reshape(size, -1))
        if len({p.shape[1] for p in parts}) != 1:
            raise ConfigError("returned outputs of different shapes", path="release")
        out = np.concatenate(parts, axis=0)
    if out.shape[1] == 0:
        raise ConfigError("returned an empty output", path="release")
    if not np.all(np.isfinite(out)):
        raise ConfigError("returned a non-finite value", path="release")
    return out


def _project(outputs: Array, direction: Array | None) -> Array:
    if direction is None:
        return outputs
    projected: Array = outputs @ direction
    return projected


def _direction(cal0: Array, cal1: Array, projection: Projection) -> Array | None:
    """The unit column vector to project on, or None to test each coordinate (and scalar outputs)."""
    d = cal0.shape[1]
    if d == 1 or projection == "coordinates":
        return None
    direction = cal1.mean(axis=0) - cal0.mean(axis=0)
    norm = float(np.linalg.norm(direction))
    if not (math.isfinite(norm) and norm > 0):
        direction, norm = np.ones(d), math.sqrt(d)
    unit: Array = (direction / norm)[:, np.newaxis]
    return unit


def _thresholds(pooled: Array, count: int, n_samples: int) -> Array:
    """Thresholds at pooled calibration quantiles, logit-spaced so both tails are explored."""
    q_min = min(0.25, max(10.0 / n_samples, 1e-6))
    levels = special.expit(np.linspace(special.logit(q_min), special.logit(1.0 - q_min), count))
    values: Array = np.unique(np.quantile(pooled, levels, method="inverted_cdf"))
    return values


def _column_points(
    claimed: Budget, score0: Array, score1: Array, values: Array, level: float, coordinate: int | None
) -> list[AuditPoint]:
    """Both tails of every threshold test on one score column."""
    n = score0.shape[0]
    below0 = np.searchsorted(np.sort(score0), values, side="right")  # d0 scores <= t
    below1 = np.searchsorted(np.sort(score1), values, side="right")  # d1 scores <= t
    a_low, a_high = clopper_pearson(n - below0, n, level)  # "upper" tail: alpha = P0(score > t)
    b_low, b_high = clopper_pearson(below1, n, level)  # "upper" tail: beta = P1(score <= t)
    alpha, beta = (n - below0) / n, below1 / n
    tails: tuple[tuple[Tail, Array, Array, Array, Array, Array, Array], ...] = (
        ("upper", alpha, beta, a_low, a_high, b_low, b_high),
        ("lower", 1 - alpha, 1 - beta, 1 - a_high, 1 - a_low, 1 - b_high, 1 - b_low),
    )
    points: list[AuditPoint] = []
    for tail, al, be, al_lo, al_hi, be_lo, be_hi in tails:
        bounds = _point_bounds(claimed, al_hi, be_hi)
        violates = be_hi < tradeoff_curve(claimed, al_hi)
        points.extend(
            AuditPoint(
                threshold=float(values[i]),
                tail=tail,
                coordinate=coordinate,
                alpha=float(al[i]),
                beta=float(be[i]),
                alpha_low=float(al_lo[i]),
                alpha_high=float(al_hi[i]),
                beta_low=float(be_lo[i]),
                beta_high=float(be_hi[i]),
                bound=float(bounds[i]),
                violates=bool(violates[i]),
            )
            for i in range(values.size)
        )
    return points


def detectable_limit(claimed: Budget, n_samples: int, level: float) -> float:
    """The largest parameter a perfect distinguisher could prove with ``n_samples`` per dataset.

    A release that separates the datasets every time gives, at the best threshold, no false positive and
    no false negative: both Clopper-Pearson upper bounds are ``1 - ((1 - level) / 2)^(1 / n)``. The bound
    that point proves is the most any release can prove at this sample size and confidence.
    """
    zero = clopper_pearson(np.zeros(1), n_samples, level)[1]
    return float(_point_bounds(claimed, zero, zero)[0])


def samples_needed(claimed: Budget, level: float, limit: int = 10**12) -> int | None:
    """The smallest sample size per dataset whose :func:`detectable_limit` exceeds the claim (None beyond
    ``limit``); by doubling, then bisection."""
    value = claimed.mu if isinstance(claimed, GDP) else claimed.epsilon
    high = 128
    while detectable_limit(claimed, high, level) <= value:
        high *= 2
        if high > limit:
            return None
    low = high // 2
    while high - low > max(1, low // 1000):
        middle = (low + high) // 2
        if detectable_limit(claimed, middle, level) > value:
            high = middle
        else:
            low = middle
    return high


# ---------------------------------------------------------------------------------------------------------
# The auditor


def audit_mechanism(
    release: Release,
    d0: Any,
    d1: Any,
    claimed: Budget,
    n_samples: int = 100_000,
    rng: RngLike = None,
    *,
    batch: int | None = None,
    thresholds: int = 64,
    significance: float = 0.05,
    projection: Projection = "mean-difference",
    calibration: int | None = None,
) -> AuditResult:
    """Audit ``release`` on the neighbouring datasets ``d0`` and ``d1`` against the ``claimed`` guarantee.

    Parameters
    ----------
    release : callable
        ``release(data, rng)`` returns one release (a number or an array) drawn with the numpy
        ``Generator`` ``rng``. With ``batch`` set, it is called as ``release(data, rng, batch=k)`` and
        must return ``k`` independent releases stacked along axis 0 (vectorise it: an audit needs many).
    d0, d1 : object
        Two neighbouring datasets (anything ``release`` accepts); ideally a worst-case pair.
    claimed : GDP, ApproxDP or PureDP
        The guarantee to audit: ``G_mu`` for ``GDP(mu)``, the envelope of the implied (eps, delta)-DP
        curves for ``GDP(mu, delta=d)``, the (eps, delta)-DP curve otherwise.
    n_samples : int, default 100000
        Releases per dataset that are counted.
    rng : None, int, SeedSequence or Generator
        Randomness for the releases (four spawned streams: calibration and counted draws per dataset).
    batch : int, optional
        Releases per call of a vectorised ``release``; None calls ``release`` once per release.
    thresholds : int, default 64
        Thresholds per score, at logit-spaced quantiles of the pooled calibration outputs; every
        threshold is tested in both directions.
    significance : float, default 0.05
        Family-wise error level: all Clopper-Pearson intervals hold together with probability
        ``>= 1 - significance`` (each at ``1 - significance / (2 K)``, K the thresholds tested).
    projection : {"mean-difference", "coordinates"}, default "mean-difference"
        How array outputs become scores. "mean-difference" projects each output onto the direction of
        ``mean(output | d1) - mean(output | d0)`` estimated on the calibration sample (the optimal test
        for a shift under isotropic Gaussian noise); "coordinates" tests each coordinate separately
        (the Bonferroni correction then covers every coordinate's thresholds). Scalar outputs are tested
        directly.
    calibration : int, optional
        Releases per dataset used only to place the thresholds (and the projection); default
        ``max(100, n_samples // 10)``.

    Returns
    -------
    AuditResult
        ``passed`` is False when some point lies below the claimed curve even at its upper confidence
        bounds; ``empirical_lower_bound`` is the largest mu (GDP claims) or epsilon (other claims) that
        the points prove.
    """
    claimed = _check_claimed(claimed)
    n_samples = _check_int(n_samples, "n_samples", _MIN_SAMPLES)
    thresholds = _check_int(thresholds, "thresholds", 1)
    batch = None if batch is None else _check_int(batch, "batch", 1)
    if calibration is None:
        n_calibration = max(_MIN_SAMPLES, n_samples // 10)
    else:
        n_calibration = _check_int(calibration, "calibration", 10)
    if isinstance(significance, bool) or not isinstance(significance, (int, float)) or not 0 < significance < 1:
        raise ConfigError("must be a number in (0, 1)", path="significance")
    if projection not in _PROJECTIONS:
        raise ConfigError(f"must be one of {', '.join(repr(p) for p in _PROJECTIONS)}", path="projection")
    if not callable(release):
        raise ConfigError("must be callable", path="release")

    cal0_rng, cal1_rng, rng0, rng1 = spawn_generators(as_seed_sequence(rng), 4)
    cal0 = _draw(release, d0, n_calibration, cal0_rng, batch)
    cal1 = _draw(release, d1, n_calibration, cal1_rng, batch)
    if cal0.shape[1] != cal1.shape[1]:
        raise ConfigError("returned outputs of different shapes on d0 and d1", path="release")
    direction = _direction(cal0, cal1, projection)
    out0 = _project(_draw(release, d0, n_samples, rng0, batch), direction)
    out1 = _project(_draw(release, d1, n_samples, rng1, batch), direction)
    cal0, cal1 = _project(cal0, direction), _project(cal1, direction)
    if out0.shape[1] != cal0.shape[1] or out1.shape[1] != cal0.shape[1]:
        raise ConfigError("returned outputs of different shapes", path="release")

    columns = [
        _thresholds(np.concatenate([cal0[:, j], cal1[:, j]]), thresholds, n_samples) for j in range(out0.shape[1])
    ]
    level = 1.0 - significance / (2 * sum(values.size for values in columns))
    points: list[AuditPoint] = []
    for j, values in enumerate(columns):
        coordinate = None if out0.shape[1] == 1 else j
        points.extend(_column_points(claimed, out0[:, j], out1[:, j], values, level, coordinate))
    lower = max([0.0, *(p.bound for p in points if math.isfinite(p.bound))])
    limit = detectable_limit(claimed, n_samples, level)
    value = claimed.mu if isinstance(claimed, GDP) else claimed.epsilon
    violated = any(p.violates for p in points)
    return AuditResult(
        passed=not violated and value < limit,
        claimed=claimed,
        empirical_lower_bound=lower,
        unit="mu" if isinstance(claimed, GDP) else "epsilon",
        n_samples=n_samples,
        significance=float(significance),
        points=tuple(points),
        detectable_limit=limit,
        samples_needed=None if violated or value < limit else samples_needed(claimed, level),
    )


# ---------------------------------------------------------------------------------------------------------
# Worst-case pairs and registered mechanisms


def worst_case_pair(n: int, bounds: Bounds | L2Ball | tuple[float, float]) -> tuple[Array, Array]:
    """Neighbouring datasets at the public bounds with one record flipped (replace-one).

    Scalar bounds ``(low, high)``: ``d0`` is n copies of ``low`` and ``d1`` replaces the first record by
    ``high``. ``L2Ball(R)``: rows ``R e_1`` in ``d0``, and ``d1`` replaces the first by ``-R e_1``
    (two dimensions). For the mean these pairs attain the global sensitivity.
    """
    n = _check_int(n, "n", 1)
    if isinstance(bounds, tuple):
        bounds = Bounds(*bounds)
    if isinstance(bounds, Bounds):
        d0 = np.full(n, bounds.low)
        d1 = d0.copy()
        d1[0] = bounds.high
        return d0, d1
    if isinstance(bounds, L2Ball):
        v0 = np.zeros((n, 2))
        v0[:, 0] = bounds.radius
        v1 = v0.copy()
        v1[0, 0] = -bounds.radius
        return v0, v1
    raise ConfigError("expected (low, high), pf.Bounds or pf.L2Ball", path="bounds")


def additive_release(
    mechanism: Mechanism, budget: Budget, sensitivity: float = 1.0, dimension: int = 1
) -> tuple[Release, Budget]:
    """A batched release of ``mechanism`` for a value of the given L2 sensitivity, and the guarantee it claims.

    The mechanism plans one release (``plan(sensitivity, budget, label="audit", dimension=dimension)``); the
    returned function is ``release(value, rng, batch)``: ``batch`` independent releases of the vector
    ``value * e_1`` (a scalar when ``dimension`` is 1), for mechanisms that add noise element-wise
    (Gaussian, Laplace). The claimed guarantee is the planned event's budget: what the ledger would record.
    """
    dimension = _check_int(dimension, "dimension", 1)
    event = mechanism.plan(sensitivity, budget, label="audit", dimension=dimension)

    def release(value: float, rng: np.random.Generator, batch: int = 1) -> Array:
        if dimension == 1:
            scalar: Array = mechanism.apply(np.full(batch, float(value)), event, rng)
            return scalar
        values = np.zeros((batch, dimension))
        values[:, 0] = float(value)
        out: Array = mechanism.apply(values, event, rng)
        return out

    return release, event.budget


def audit_additive_mechanism(
    mechanism: Mechanism,
    budget: Budget,
    *,
    sensitivity: float = 1.0,
    dimension: int = 1,
    n_samples: int = 100_000,
    rng: RngLike = None,
    batch: int = 50_000,
    **options: Any,
) -> AuditResult:
    """Audit an additive mechanism on its worst-case pair: values ``0`` and ``sensitivity * e_1``.

    Used by ``privframe audit``. ``options`` go to :func:`audit_mechanism`.
    """
    release, claimed = additive_release(mechanism, budget, sensitivity, dimension)
    return audit_mechanism(release, 0.0, float(sensitivity), claimed, n_samples, rng, batch=batch, **options)


def smooth_release(
    mechanism: SmoothMechanism,
    budget: Budget,
    gamma: float,
    sensitivity: float = 1.0,
    proposal: float | None = None,
) -> tuple[Release, tuple[tuple[float, float], tuple[float, float]], Budget]:
    """A release of a propose-test-release mechanism, its worst-case pair, and the guarantee it claims.

    The datasets are ``(value, bound)`` pairs: ``d0 = (0, s)`` and ``d1 = (s, s e^gamma)`` with ``s`` the
    sensitivity, so the value moves by the full bound and the bound by the full log-smoothness gamma. Each
    release is the vector ``(passed, ln(bound used), value)`` (the test outcome and the bound are public
    too; a failed test, ``PTRFailed``, releases ``(0, 0, 0)``). ``proposal`` is the public proposal b_0 a
    classic propose-test-release needs. The release is batched, ``release(data, rng, batch=k)``, through
    ``release_smooth_batch`` when the mechanism has it (:class:`~privframe.plugin.BatchSmoothMechanism`),
    else one ``release_smooth`` call per release.
    """
    event = mechanism.plan_smooth(gamma, budget, label="audit", dimension=1)

    def one(value: float, log_bound: float, rng: np.random.Generator) -> Array:
        try:
            out = mechanism.release_smooth(np.array([value]), log_bound, event, rng, proposal=proposal)
        except PTRFailed:
            return np.zeros(3)
        return np.array([1.0 if out.passed else 0.0, math.log(out.bound), float(out.value[0])])

    def release(data: tuple[float, float], rng: np.random.Generator, batch: int = 1) -> Array:
        value, bound = data
        if not isinstance(mechanism, BatchSmoothMechanism):
            return np.array([one(value, math.log(bound), rng) for _ in range(batch)])
        out = mechanism.release_smooth_batch(
            np.full((batch, 1), value), np.full(batch, math.log(bound)), event, rng, proposal=proposal
        )
        with np.errstate(divide="ignore"):
            rows = np.column_stack([out.passed.astype(np.float64), np.log(out.bound), out.value[:, 0]])
        rows[~out.released] = 0.0
        return rows

    s = float(sensitivity)
    return release, ((0.0, s), (s, s * math.exp(gamma))), event.budget


def audit_smooth_mechanism(
    mechanism: SmoothMechanism,
    budget: Budget,
    *,
    gamma: float = 0.1,
    sensitivity: float = 1.0,
    proposal: float | None = None,
    n_samples: int = 100_000,
    rng: RngLike = None,
    **options: Any,
) -> AuditResult:
    """Audit a propose-test-release mechanism on its worst-case pair (see :func:`smooth_release`).

    Each coordinate of the release (test outcome, bound, value) is tested separately
    (``projection="coordinates"``); ``options`` go to :func:`audit_mechanism`.
    """
    release, (d0, d1), claimed = smooth_release(mechanism, budget, gamma, sensitivity, proposal)
    options.setdefault("projection", "coordinates")
    options.setdefault("batch", 10_000)
    return audit_mechanism(release, d0, d1, claimed, n_samples, rng, **options)


SELECTION_PAIR = ((0.0, 0.0, 0.8, 0.8), (0.0, 0.8, 0.8, 1.0))
"""The built-in pair for selection mechanisms, on the bounds [0, 1]: four records, one moved from 0 to 1.

Found by exhaustive search over grids of up to five records for the median's rank utility; the exponential
mechanism's largest pointwise privacy loss on it is 0.86 eps."""


def selection_release(
    mechanism: SelectionMechanism, statistic: Statistic, budget: Budget, bounds: Bounds | None = None
) -> tuple[Release, Budget]:
    """A batched release of a selection mechanism (one call on all records per release), and its claim.

    ``release(data, rng, batch)`` runs ``select_batch`` on ``batch`` identical rows ``0..k-1`` of ``data``, i.e.
    ``batch`` independent releases of the statistic of the whole dataset. ``bounds`` default ``[0, 1]``.
    """
    event = mechanism.plan_selection(statistic, budget, label="audit")
    public = bounds if bounds is not None else Bounds(0.0, 1.0)

    def release(data: npt.ArrayLike, rng: np.random.Generator, batch: int = 1) -> Array:
        x = np.asarray(data, dtype=np.float64)
        index = np.tile(np.arange(x.shape[0], dtype=np.intp), (batch, 1))
        out: Array = mechanism.select_batch(statistic, x, index, public, event, rng)
        return out

    return release, event.budget


def audit_selection_mechanism(
    mechanism: SelectionMechanism,
    statistic: Statistic,
    budget: Budget,
    *,
    n_samples: int = 100_000,
    rng: RngLike = None,
    batch: int = 50_000,
    **options: Any,
) -> AuditResult:
    """Audit a selection mechanism releasing ``statistic`` on :data:`SELECTION_PAIR` (bounds [0, 1])."""
    release, claimed = selection_release(mechanism, statistic, budget)
    d0, d1 = (np.array(d) for d in SELECTION_PAIR)
    return audit_mechanism(release, d0, d1, claimed, n_samples, rng, batch=batch, **options)


def audit_registered_mechanism(
    mechanism: object,
    budget: Budget,
    *,
    n_samples: int = 100_000,
    rng: RngLike = None,
    gamma: float | None = None,
    statistic: Statistic | None = None,
    sensitivity: float = 1.0,
    dimension: int = 1,
) -> AuditResult:
    """Audit a mechanism part on its built-in worst-case pair (what ``privframe audit`` runs).

    A :class:`~privframe.plugin.Mechanism` is audited as an additive mechanism with the given
    ``sensitivity`` and ``dimension`` (:func:`audit_additive_mechanism`); a
    :class:`~privframe.plugin.SmoothMechanism` with bound ``sensitivity`` and log-smoothness ``gamma``
    (default 0.1; :func:`audit_smooth_mechanism`); a :class:`~privframe.plugin.SelectionMechanism`
    releasing ``statistic`` on :data:`SELECTION_PAIR` (:func:`audit_selection_mechanism`). A setting the
    mechanism's kind does not use is a ``ConfigError``, never silently ignored.
    """
    if gamma is not None and not isinstance(mechanism, SmoothMechanism):
        raise ConfigError("only smooth-bound (propose-test-release) mechanisms take a log-smoothness", path="gamma")
    if (sensitivity != 1.0 or dimension != 1) and isinstance(mechanism, SelectionMechanism):
        raise ConfigError("a selection mechanism is audited on its statistic's fixed pair", path="sensitivity")
    if dimension != 1 and not isinstance(mechanism, Mechanism):
        raise ConfigError("only additive mechanisms are audited in several dimensions", path="dimension")
    if isinstance(mechanism, Mechanism):
        return audit_additive_mechanism(
            mechanism, budget, sensitivity=sensitivity, dimension=dimension, n_samples=n_samples, rng=rng
        )
    if isinstance(mechanism, SmoothMechanism):
        return audit_smooth_mechanism(
            mechanism,
            budget,
            gamma=0.1 if gamma is None else gamma,
            sensitivity=sensitivity,
            n_samples=n_samples,
            rng=rng,
        )
    if isinstance(mechanism, SelectionMechanism):
        if statistic is None:
            raise ConfigError("a selection mechanism is audited on a statistic it releases", path="statistic")
        return audit_selection_mechanism(mechanism, statistic, budget, n_samples=n_samples, rng=rng)
    raise ConfigError("has no built-in worst-case pair (audit it with pf.audit.audit_mechanism)", path="mechanism")
