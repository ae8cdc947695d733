"""OpenDP as an independent oracle for privframe's exact samplers and their privacy accounting.

privframe draws its discrete Gaussian and discrete Laplace noise with its own implementation of the
Canonne-Kamath-Steinke samplers (:mod:`privframe.privacy.noise`); ``tests/test_noise.py`` checks them
against closed-form pmfs written by the same hands. This module checks them against OpenDP's samplers
(a separate implementation, in Rust, drawing from the operating system's randomness), and checks the
accounting of a lattice release against OpenDP's privacy maps for the same mechanism:

1. **The oracle itself.** OpenDP's integer draws (``make_gaussian`` / ``make_laplace`` on ``i64``) follow
   the exact pmfs ``P(y) ~ exp(-y^2 / (2 s^2))`` and ``P(y) ~ exp(-|y| / t)``, so its ``scale`` means what
   privframe's ``sqrt(t q)`` and ``t`` mean.
2. **The integer laws.** privframe's draws match OpenDP's (a two-sample chi-square on the integer cells and
   a two-sample comparison of ``E|Y|``), and the exact pmf (a chi-square goodness of fit), at small scales
   (s^2 = t q in {1, 2, 9} grid steps, t in {1, 3}) where a rounded continuous Gaussian and a discrete one
   differ (at s = 1 the rounded continuous law puts 0.3829 on 0, the discrete one 0.3989). Both the
   vectorised path and the one-draw path (``size <= 8``, which a single release takes) are checked, and
   the parametrisations ``(t, q) = (2, 1)`` and ``(1, 2)`` must give the same law.
3. **The releases.** ``noise.release`` and ``noise.release_rows`` on a plan from ``plan_gaussian`` /
   ``plan_laplace`` against OpenDP's float measurement with the same scale and granularity ``k =
   log2(grid)``: both land on the same grid, around the same rounded centre, with the same law and scale.
4. **The accounting.** For a plan, OpenDP's map of the same noise on the same grid gives rho (zCDP) and
   epsilon; privframe's claimed mu-GDP (``mu^2 / 2`` zCDP) and epsilon must be at least those, and agree
   to 1e-9 (both charge the rounding to the grid as ``sqrt(d)`` or ``d`` grid steps; forgetting it moves
   the claim 1e-7 to 2e-4 below OpenDP's).

Thresholds. OpenDP cannot be seeded, so its half of each comparison is fresh on every run; privframe's half
is seeded. Every consistency check passes at p > 1e-6 (or |z| < 4.89, the same two-sided level); the file
makes 37 such checks, so a correct pair of samplers fails it with probability below 4e-5 per run.
Cells are chosen from the exact pmf before any draw, each with an expected count of at least 20 in the
smaller sample, so the chi-square approximation holds. Sample sizes are set so that the checks have power:
the tests at the end assert that the same comparisons reject a rounded continuous Gaussian at s = 1 and a
5% wrong scale at p < 1e-6, and that the chance of missing them (computed from the exact pmfs and the
noncentral chi-square or normal law of the statistic) is below 1e-6. The numbers one run measured
(``python -m pytest tests/test_opendp_oracle.py``, OpenDP 0.16.0) are in the docstrings; the OpenDP half
changes from run to run.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import numpy.typing as npt
import pytest
from scipy import stats

from privframe.privacy import noise

dp = pytest.importorskip(
    "opendp.prelude", reason="opendp is not installed (it is in the test extra: pip install -e '.[test]')"
)
dp.enable_features("contrib")  # make_gaussian / make_laplace are "contrib" in OpenDP 0.16

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

P_MIN = 1e-6
"""Every consistency p-value must exceed this (37 checks: a false failure below 4e-5 per run)."""

Z_MAX = float(stats.norm.isf(P_MIN / 2))
"""|z| below 4.89: the two-sided normal test at the level of :data:`P_MIN`."""

MIN_EXPECTED = 20
"""The least expected count of a chi-square cell in the smaller sample."""

N_PRIVFRAME = 200_000
"""privframe draws per law (0.05-0.5 s each)."""

N_OPENDP = {"gaussian": 40_000, "laplace": 40_000}
"""OpenDP draws per integer law (60 000 at s = 1, where the rounded-Gaussian test needs them): about 18 us
(Gaussian) and 7 us (Laplace) a draw."""


# ---------------------------------------------------------------------------------------------------------
# the exact laws, and the draws


def _support(kind: str, scale2: float) -> IntArray:
    """Integers carrying all but 1e-300 of the mass: 40 standard deviations (Gaussian), 700 scales (Laplace)."""
    radius = math.ceil(40.0 * math.sqrt(scale2)) + 1 if kind == "gaussian" else math.ceil(700.0 * scale2) + 1
    return np.arange(-radius, radius + 1, dtype=np.int64)


def _pmf(kind: str, scale2: float) -> tuple[IntArray, FloatArray]:
    """``(y, P(y))``: the discrete Gaussian of variance parameter ``scale2`` or the discrete Laplace of scale
    ``scale2``, normalised by an explicit sum over :func:`_support`."""
    y = _support(kind, scale2)
    log_weight = -(y.astype(np.float64) ** 2) / (2.0 * scale2) if kind == "gaussian" else -np.abs(y) / scale2
    weight = np.exp(log_weight - log_weight.max())
    return y, weight / weight.sum()


def _cut(kind: str, scale2: float, smallest: int) -> int:
    """c: the largest integer whose pmf gives an expected count of at least :data:`MIN_EXPECTED` in a sample
    of ``smallest`` draws (so every cell of :func:`_cells` has at least that)."""
    y, p = _pmf(kind, scale2)
    return int(np.max(y[p * smallest >= MIN_EXPECTED]))


def _cells(kind: str, scale2: float, c: int) -> FloatArray:
    """The exact probabilities of the cells ``y <= -c, -c + 1, ..., c - 1, y >= c``."""
    y, p = _pmf(kind, scale2)
    tail = float(p[y >= c].sum())
    return np.concatenate([[tail], p[(y > -c) & (y < c)], [tail]])


def _counts(draws: IntArray, c: int) -> FloatArray:
    return np.bincount(np.clip(draws, -c, c) + c, minlength=2 * c + 1).astype(np.float64)


def _fits(draws: IntArray, kind: str, scale2: float) -> float:
    """p-value of a chi-square goodness of fit of ``draws`` to the exact pmf."""
    c = _cut(kind, scale2, draws.size)
    probabilities = _cells(kind, scale2, c)
    observed = _counts(draws, c)
    return float(stats.chisquare(observed, probabilities / probabilities.sum() * draws.size).pvalue)


def _same_law(a: IntArray, b: IntArray, kind: str, scale2: float) -> float:
    """p-value of a two-sample chi-square (homogeneity) on cells fixed by the exact pmf at ``scale2``."""
    c = _cut(kind, scale2, min(a.size, b.size))
    return float(stats.chi2_contingency(np.vstack([_counts(a, c), _counts(b, c)]))[1])


def _same_scale(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """z of ``log E|A| - log E|B|``, by the delta method: under one law it is standard normal."""
    parts = []
    for draws in (a, b):
        magnitude = np.abs(np.asarray(draws, dtype=np.float64))
        mean = float(magnitude.mean())
        parts.append((math.log(mean), float(magnitude.var()) / (magnitude.size * mean * mean)))
    (log_a, var_a), (log_b, var_b) = parts
    return (log_a - log_b) / math.sqrt(var_a + var_b)


def _privframe(kind: str, parameters: tuple[int, ...], size: int, seed: int) -> IntArray:
    rng = np.random.default_rng(seed)
    if kind == "gaussian":
        t, q = parameters
        return noise.discrete_gaussian(rng, t, q, size)
    return noise.discrete_laplace(rng, parameters[0], size)


def _privframe_one_at_a_time(kind: str, parameters: tuple[int, ...], size: int, seed: int) -> IntArray:
    """``size`` draws of one each: the scalar path a single release takes (``size <= 8``)."""
    rng = np.random.default_rng(seed)
    return np.concatenate([_privframe_draw(kind, parameters, rng) for _ in range(size)])


def _privframe_draw(kind: str, parameters: tuple[int, ...], rng: np.random.Generator) -> IntArray:
    if kind == "gaussian":
        return noise.discrete_gaussian(rng, parameters[0], parameters[1], 1)
    return noise.discrete_laplace(rng, parameters[0], 1)


@functools.cache
def _opendp(kind: str, scale: float, size: int) -> IntArray:
    """``size`` of OpenDP's integer draws of ``scale`` (Gaussian: standard deviation; Laplace: P ~ e^-|y|/scale),
    from its vector measurement on i64 at input 0. Cached: the module draws each law once."""
    if kind == "gaussian":
        space = dp.vector_domain(dp.atom_domain(T=dp.i64)), dp.l2_distance(T=dp.i64)
        measurement = dp.m.make_gaussian(*space, scale=scale)
    else:
        space = dp.vector_domain(dp.atom_domain(T=dp.i64)), dp.l1_distance(T=dp.i64)
        measurement = dp.m.make_laplace(*space, scale=scale)
    draws = np.asarray(measurement([0] * size), dtype=np.int64)
    draws.flags.writeable = False
    return draws


# law id: (kind, privframe parameters, variance parameter t q or Laplace scale t, OpenDP's scale)
LAWS = {
    "gaussian-1": ("gaussian", (1, 1), 1.0, 1.0),
    "gaussian-2-t2q1": ("gaussian", (2, 1), 2.0, math.sqrt(2.0)),
    "gaussian-2-t1q2": ("gaussian", (1, 2), 2.0, math.sqrt(2.0)),
    "gaussian-9": ("gaussian", (3, 3), 9.0, 3.0),
    "laplace-1": ("laplace", (1,), 1.0, 1.0),
    "laplace-3": ("laplace", (3,), 3.0, 3.0),
}


def _oracle(law: str) -> IntArray:
    kind, _, _, scale = LAWS[law]
    return _opendp(kind, scale, 60_000 if law == "gaussian-1" else N_OPENDP[kind])


# ---------------------------------------------------------------------------------------------------------
# 1-2. the integer laws


@pytest.mark.parametrize("law", ["gaussian-1", "gaussian-2-t2q1", "gaussian-9", "laplace-1", "laplace-3"])
def test_opendp_draws_follow_the_exact_pmf(law: str) -> None:
    """The oracle's own law is the pmf privframe's parameters stand for (OpenDP's ``scale`` is s, or t).

    Measured once: p = 0.80, 0.44, 0.42, 0.31, 0.76 (law by law, as parametrised)."""
    kind, _, scale2, _ = LAWS[law]
    assert _fits(_oracle(law), kind, scale2) > P_MIN


@pytest.mark.parametrize("law", list(LAWS))
def test_privframe_matches_opendp_and_the_exact_pmf(law: str) -> None:
    """privframe's vectorised draws against OpenDP's (cells and scale) and against the exact pmf.

    Measured once (law by law, as listed in LAWS): two-sample p = 0.80, 0.39, 0.38, 0.55, 0.14, 0.72;
    scale z = 1.32, -0.85, 0.74, -0.80, 1.37, -0.66; fit p = 0.89, 0.50, 0.060, 0.43, 0.53, 0.57."""
    kind, parameters, scale2, _ = LAWS[law]
    ours = _privframe(kind, parameters, N_PRIVFRAME, seed=list(LAWS).index(law))
    theirs = _oracle(law)
    assert _same_law(ours, theirs, kind, scale2) > P_MIN
    assert abs(_same_scale(ours, theirs)) < Z_MAX
    assert _fits(ours, kind, scale2) > P_MIN


@pytest.mark.parametrize("law", ["gaussian-1", "laplace-1"])
def test_the_one_draw_path_matches_opendp(law: str) -> None:
    """The scalar path (Python integers from the generator's raw words) against the same oracle.

    Measured once: two-sample p = 0.042 (Gaussian), 0.048 (Laplace); scale z = 1.72, 2.58; fit p = 0.074,
    0.043 (privframe's half is seeded; 300 000 more one-draw draws of each gave fit p = 0.94 and 0.15)."""
    kind, parameters, scale2, _ = LAWS[law]
    ours = _privframe_one_at_a_time(kind, parameters, 10_000, seed=17)
    assert _same_law(ours, _oracle(law), kind, scale2) > P_MIN
    assert abs(_same_scale(ours, _oracle(law))) < Z_MAX
    assert _fits(ours, kind, scale2) > P_MIN


# ---------------------------------------------------------------------------------------------------------
# 3. releases on the grid

VALUE = 0.3
"""The released value: not a grid point (0.3 / 2^-27 = 40265318.4, far from a tie), so both libraries round it."""

RELEASE_PLANS = {"gaussian": noise.plan_gaussian(0.01, 1.0), "laplace": noise.plan_laplace(0.01, 1.0)}
"""Plans of about 2^20 grid steps of noise (grid 2^-27), as every privframe release has."""

N_RELEASE_OPENDP = {"gaussian": 30_000, "laplace": 60_000}
"""OpenDP releases per plan (about 13 us and 7 us each); the Laplace needs more for the scale test's power."""


@functools.cache
def _opendp_release(kind: str) -> FloatArray:
    """OpenDP's float measurement of the plan's scale at granularity ``k = log2(grid)``, applied to copies of
    :data:`VALUE`: it rounds the value to the 2^k grid and adds discrete noise of scale ``scale / 2^k``."""
    plan, size = RELEASE_PLANS[kind], N_RELEASE_OPENDP[kind]
    k = int(math.log2(plan.grid))
    assert math.ldexp(1.0, k) == plan.grid
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=size)
    if kind == "gaussian":
        measurement = dp.m.make_gaussian(domain, dp.l2_distance(T=float), scale=plan.scale, k=k)
    else:
        measurement = dp.m.make_laplace(domain, dp.l1_distance(T=float), scale=plan.scale, k=k)
    released = np.asarray(measurement([VALUE] * size), dtype=np.float64)
    released.flags.writeable = False
    return released


def _steps(released: FloatArray, grid: float) -> FloatArray:
    """Whole grid steps from the rounded value (every release must be a multiple of the grid)."""
    steps = released / grid
    assert np.all(steps == np.rint(steps)), "a release off the grid"
    return steps - float(np.rint(VALUE / grid))


def _privframe_releases(plan: noise.LatticePlan, size: int, seed: int) -> FloatArray:
    """Half through ``release``, half through ``release_rows`` (one plan per row), as grid steps."""
    rng = np.random.default_rng(seed)
    half = size // 2
    single = noise.release(np.full(half, VALUE), plan, rng)
    rows = noise.release_rows(np.full((half, 1), VALUE), [plan] * half, rng)[:, 0]
    return _steps(np.concatenate([single, rows]), plan.grid)


@pytest.mark.parametrize("kind", ["gaussian", "laplace"])
def test_releases_match_opendp_measurements(kind: str) -> None:
    """``release`` and ``release_rows`` against OpenDP's measurement with the same scale and grid: both on
    the grid, centred on the same rounded value, with the same law (16 cells equiprobable under the plan's
    law, fixed before any draw) and the same scale.

    The noise spans about 2^20 steps, so here the discrete laws are the continuous ones to within 2^-40
    (the small scales are checked above). Measured once: two-sample p = 0.99 (Gaussian), 0.32 (Laplace);
    scale z = -0.43, -0.45; centre z = 1.96, 1.30 (privframe), 1.01, -2.05 (OpenDP).
    """
    plan = RELEASE_PLANS[kind]
    ours = _privframe_releases(plan, N_PRIVFRAME // 3, seed=5)
    theirs = _steps(_opendp_release(kind), plan.grid)
    law = stats.norm(scale=math.sqrt(plan.t * plan.q)) if kind == "gaussian" else stats.laplace(scale=plan.t)
    edges = law.ppf(np.linspace(0.0, 1.0, 17)[1:-1])
    table = np.vstack([np.bincount(np.searchsorted(edges, s), minlength=16) for s in (ours, theirs)])
    assert stats.chi2_contingency(table)[1] > P_MIN
    assert abs(_same_scale(ours, theirs)) < Z_MAX
    for steps in (ours, theirs):  # centred on round(value / grid): the mean within 4.89 standard errors of 0
        assert abs(float(steps.mean())) < Z_MAX * float(steps.std()) / math.sqrt(steps.size)


# ---------------------------------------------------------------------------------------------------------
# 4. the accounting of a plan against OpenDP's privacy maps


def _plans() -> list[tuple[float, float, int]]:
    """(sensitivity, budget parameter, dimension), seeded: sensitivities from 1e-6 to 1e3, budgets from
    0.05 to 20, dimensions from 1 to 16."""
    rng = np.random.default_rng(27)
    cases = [(0.01, 1.0, 1), (2.0, 0.7, 1), (0.5, 0.3, 3)]
    for _ in range(12):
        cases.append((float(10 ** rng.uniform(-6, 3)), float(10 ** rng.uniform(-1.3, 1.3)), int(rng.integers(1, 17))))
    return cases


def _opendp_map(plan: noise.LatticePlan, sensitivity: float, dimension: int) -> float:
    """OpenDP's privacy map at ``sensitivity`` of its measurement with ``plan``'s scale and grid: rho (zCDP)
    for the Gaussian, epsilon for the Laplace. On a vector it charges the rounding as sqrt(d) (L2) or d (L1)
    grid steps, as privframe does."""
    k = int(math.log2(plan.grid))
    gaussian = plan.kind == "gaussian"
    if dimension == 1:
        space = dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float)
    else:
        metric = dp.l2_distance(T=float) if gaussian else dp.l1_distance(T=float)
        space = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=dimension), metric
    make = dp.m.make_gaussian if gaussian else dp.m.make_laplace
    return float(make(*space, scale=plan.scale, k=k).map(sensitivity))


@pytest.mark.parametrize(("sensitivity", "parameter", "dimension"), _plans(), ids=lambda v: f"{v:.3g}")
def test_claims_cover_opendp_privacy_maps(sensitivity: float, parameter: float, dimension: int) -> None:
    """privframe's claim for a plan is at least OpenDP's for the same noise, and within 1e-9 of it.

    mu-GDP implies (mu^2 / 2)-zCDP, and the discrete Gaussian's zCDP bound ``K^2 / (2 t q)`` is tight; privframe
    charges the discrete Gaussian at variance ``t q - 1/4`` (a relative 1 / (8 t q) < 1e-12 above). Measured:
    mu / sqrt(2 rho) - 1 from 3.3e-14 to 1.2e-13, epsilon ratio - 1 from 8.9e-16 to 1.1e-15 (privframe's
    margin ``1 + 2^-50``); OpenDP's maps are deterministic. Power, tried once on these 15 cases: a plan that
    forgot the rounding to the grid (K = Delta / g, not Delta / g + sqrt(d) or + d) claims between 1e-7 and
    2e-4 (relative) below OpenDP's, so every case fails the lower bound.
    """
    gaussian = noise.plan_gaussian(sensitivity, parameter, dimension)
    mu_opendp = math.sqrt(2.0 * _opendp_map(gaussian, sensitivity, dimension))
    assert 0.0 <= gaussian.mu / mu_opendp - 1.0 < 1e-9
    laplace = noise.plan_laplace(sensitivity, parameter, dimension)
    epsilon_opendp = _opendp_map(laplace, sensitivity, dimension)
    assert 0.0 <= laplace.epsilon / epsilon_opendp - 1.0 < 1e-9


# ---------------------------------------------------------------------------------------------------------
# power: the same comparisons reject a wrong law


def _noncentrality(p: FloatArray, q: FloatArray, n_a: int, n_b: int) -> float:
    """The two-sample chi-square's noncentrality when sample a has cell probabilities p and b has q."""
    pooled = (n_a * p + n_b * q) / (n_a + n_b)
    return float(n_a * n_b / (n_a + n_b) * np.sum((p - q) ** 2 / pooled))


def _miss(p: FloatArray, q: FloatArray, n_a: int, n_b: int) -> float:
    """The probability that the two-sample chi-square does *not* reject at P_MIN when a has cell probabilities
    p and b has q (the noncentral chi-square law of the statistic)."""
    df = p.size - 1
    critical = float(stats.chi2.isf(P_MIN, df))
    return float(stats.ncx2.cdf(critical, df, _noncentrality(p, q, n_a, n_b)))


def _rounded_gaussian_cells(c: int, sd: float) -> FloatArray:
    inner = np.diff(stats.norm.cdf(np.arange(-c + 0.5, c, 1.0), scale=sd))
    tail = float(stats.norm.sf(c - 0.5, scale=sd))
    return np.concatenate([[tail], inner, [tail]])


def test_the_comparisons_reject_a_rounded_continuous_gaussian() -> None:
    """At s = 1 a sampler that rounds a continuous Gaussian fails both the pmf fit and the OpenDP comparison.

    Noncentralities from the exact pmfs: 696 for the fit (200 000 draws) and 142 for the two-sample test
    (60 000 OpenDP draws), whose chance of a miss at 1e-6 is 1e-9 (checked below). Measured once: fit
    p = 5e-139, two-sample p = 1e-33.
    """
    rounded = np.rint(np.random.default_rng(3).normal(0.0, 1.0, N_PRIVFRAME)).astype(np.int64)
    oracle = _oracle("gaussian-1")
    c = _cut("gaussian", 1.0, oracle.size)
    exact = _cells("gaussian", 1.0, c)
    assert _miss(_rounded_gaussian_cells(c, 1.0), exact, N_PRIVFRAME, oracle.size) < 1e-6
    assert _fits(rounded, "gaussian", 1.0) < P_MIN
    assert _same_law(rounded, oracle, "gaussian", 1.0) < P_MIN


def _scale_miss(cv2: float, n_a: int, n_b: int, ratio: float) -> float:
    """The probability that :func:`_same_scale` misses a scale ``ratio`` (|z| < Z_MAX), for ``|Y|`` of squared
    coefficient of variation ``cv2`` (1 for the Laplace, ``pi / 2 - 1`` for the Gaussian)."""
    expected = math.log(ratio) / math.sqrt(cv2 * (1.0 / n_a + 1.0 / n_b))
    return float(stats.norm.cdf(Z_MAX - expected))


def test_the_comparisons_reject_a_five_percent_scale_error() -> None:
    """A sampler 5.4% too wide (t q = 10 where OpenDP's s = 3 asks for 9) fails the integer comparison, and a
    release plan whose Laplace scale is 5% too large fails the release comparison.

    Misses computed from the exact laws: 1e-9 for the chi-square (noncentrality 172), 2e-15 and 1e-8 for the
    scale tests (expected z = 12.7 and 10.5 against 4.89). Measured once: two-sample p = 1e-20, scale
    z = 11.0 (integers); release scale z = 9.2.
    """
    oracle = _oracle("gaussian-9")
    wide = _privframe("gaussian", (5, 2), N_PRIVFRAME, seed=9)
    c = _cut("gaussian", 9.0, oracle.size)
    assert _miss(_cells("gaussian", 10.0, c), _cells("gaussian", 9.0, c), N_PRIVFRAME, oracle.size) < 1e-6
    assert _scale_miss(math.pi / 2 - 1, N_PRIVFRAME, oracle.size, math.sqrt(10 / 9)) < 1e-6
    assert _same_law(wide, oracle, "gaussian", 9.0) < P_MIN
    assert abs(_same_scale(wide, oracle)) > Z_MAX

    plan = RELEASE_PLANS["laplace"]
    wrong = noise.LatticePlan("laplace", plan.grid, round(1.05 * plan.t), 1, plan.sensitivity)
    theirs = _steps(_opendp_release("laplace"), plan.grid)
    assert _scale_miss(1.0, N_PRIVFRAME, theirs.size, 1.05) < 1e-6
    ours = _privframe_releases(wrong, N_PRIVFRAME, seed=6)
    assert abs(_same_scale(ours, theirs)) > Z_MAX
