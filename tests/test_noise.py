"""Exact noise (``privframe.noise``): the CKS samplers, the lattice plans and the releases on the grid.

Every statistical check draws from a fixed seed, so it is deterministic; the thresholds (4.5 standard errors,
chi-square and KS p-values above 1e-4) are ones a correct sampler fails with small probability over seeds,
and each check is sized so that a sampler with a 10% wrong scale, a missing sign, no "-0" rejection or a
wrong acceptance probability fails it by a wide margin (several checks assert that power explicitly).

The variance-margin claim of :data:`privframe.noise.DISCRETE_GAUSSIAN_VARIANCE_MARGIN` is checked by exact
summation of the discrete Gaussian's privacy profile over its integer support.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import numpy.typing as npt
import pytest
from scipy import special, stats

import privframe as pf
from privframe.privacy import noise
from privframe.privacy.accounting import gdp_delta

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

SE_BOUND = 4.5
P_MIN = 1e-4

# ---------------------------------------------------------------------------------------------------------
# helpers


def _laplace_pmf(t: float) -> Callable[[IntArray], FloatArray]:
    """The closed form P(y) = (1 - e^-1/t) / (1 + e^-1/t) e^-|y|/t (not renormalised)."""
    r = math.exp(-1.0 / t)

    def pmf(y: IntArray) -> FloatArray:
        return np.asarray((1.0 - r) / (1.0 + r) * np.exp(-np.abs(y) / t), dtype=np.float64)

    return pmf


def _laplace_variance(t: float) -> float:
    r = math.exp(-1.0 / t)
    return 2.0 * r / (1.0 - r) ** 2


def _gaussian_pmf(variance: float) -> Callable[[IntArray], FloatArray]:
    """P(y) proportional to exp(-y^2 / (2 variance)), normalised by an explicit sum over |y| <= 40 sd."""
    radius = math.ceil(40 * math.sqrt(variance)) + 1
    support = np.arange(-radius, radius + 1, dtype=np.float64)
    total = float(np.exp(-(support**2) / (2.0 * variance)).sum())

    def pmf(y: IntArray) -> FloatArray:
        return np.asarray(np.exp(-(y.astype(np.float64) ** 2) / (2.0 * variance)) / total, dtype=np.float64)

    return pmf


def _chisquare_pvalue(draws: IntArray, pmf: Callable[[IntArray], FloatArray], radius: int) -> float:
    """Chi-square goodness of fit of integer draws to ``pmf`` on [-radius, radius] (its mass outside is
    negligible), pooling each tail into one bin so that every expected count is at least 5."""
    assert int(draws.min()) >= -radius, "a draw outside the support"
    assert int(draws.max()) <= radius, "a draw outside the support"
    support = np.arange(-radius, radius + 1, dtype=np.int64)
    n = draws.size
    expected = pmf(support) * n
    observed = np.bincount(draws + radius, minlength=support.size).astype(np.float64)
    big = np.flatnonzero(expected >= 5)
    lo, hi = int(big[0]), int(big[-1])
    exp_bins = [float(expected[:lo].sum()), *expected[lo : hi + 1].tolist(), float(expected[hi + 1 :].sum())]
    obs_bins = [float(observed[:lo].sum()), *observed[lo : hi + 1].tolist(), float(observed[hi + 1 :].sum())]
    for index, neighbour in ((0, 1), (-1, -2)):  # a tail bin with expected < 5 joins its neighbour
        if exp_bins[index] < 5:
            exp_bins[neighbour] += exp_bins[index]
            obs_bins[neighbour] += obs_bins[index]
            exp_bins[index] = obs_bins[index] = math.nan
    keep = ~np.isnan(exp_bins)
    f_exp = np.asarray(exp_bins)[keep]
    f_obs = np.asarray(obs_bins)[keep]
    assert np.all(f_exp >= 5)
    return float(stats.chisquare(f_obs, f_exp).pvalue)


def _assert_variance(draws: npt.NDArray[np.int64] | FloatArray, variance: float) -> None:
    """Sample variance (about the true mean 0) within 4.5 standard errors of ``variance``."""
    x = draws.astype(np.float64)
    squares = x * x
    estimate = float(squares.mean())
    se = float(squares.std()) / math.sqrt(x.size)
    assert abs(estimate - variance) < SE_BOUND * se, (estimate, variance, se)
    # the check has power against a 10% wrong scale (21% wrong variance): two bands apart
    assert 0.21 * variance > 2 * SE_BOUND * se


def _assert_frequency(hits: int, n: int, p: float) -> None:
    se = math.sqrt(p * (1 - p) / n)
    assert abs(hits / n - p) < SE_BOUND * se, (hits / n, p, se)


def _scalar_draws(draw: Callable[[], IntArray], total: int) -> IntArray:
    return np.concatenate([draw() for _ in range(total // 8)])


# ---------------------------------------------------------------------------------------------------------
# 1. Bernoulli(exp(-gamma))

GAMMAS = [(1, 3), (1, 1), (5, 2), (7, 1), (3, 7), (2**40 + 1, 2**40)]


@pytest.mark.parametrize(("numerator", "denominator"), GAMMAS)
def test_bernoulli_exp_vectorised_frequency(numerator: int, denominator: int) -> None:
    n = 200_000
    rng = np.random.default_rng(1000 + numerator)
    draws = noise.bernoulli_exp(rng, np.full(n, numerator, dtype=np.int64), denominator)
    assert draws.dtype == np.bool_
    assert draws.shape == (n,)
    p = math.exp(-numerator / denominator)
    _assert_frequency(int(draws.sum()), n, p)
    # power: "K even" instead of "K odd" (1 - p), or the fraction's part alone, is far outside the band
    assert abs((1 - p) - p) > 10 * SE_BOUND * math.sqrt(p * (1 - p) / n)


@pytest.mark.parametrize(("numerator", "denominator"), GAMMAS)
def test_bernoulli_exp_scalar_frequency(numerator: int, denominator: int) -> None:
    n = 20_000
    bits = noise._Bits(np.random.default_rng(2000 + numerator))
    hits = sum(bits.bernoulli_exp(numerator, denominator) for _ in range(n))
    _assert_frequency(hits, n, math.exp(-numerator / denominator))


def test_bernoulli_exp_edges_and_shape() -> None:
    rng = np.random.default_rng(3)
    assert noise.bernoulli_exp(rng, np.zeros(1000, dtype=np.int64), 1).all()  # exp(0) = 1
    assert noise.bernoulli_exp(rng, np.zeros(5, dtype=np.int64), 7).all()
    assert all(noise._Bits(rng).bernoulli_exp(0, 3) for _ in range(100))
    assert not noise.bernoulli_exp(rng, np.full(1000, 60, dtype=np.int64), 1).any()  # exp(-60) ~ 1e-26
    # broadcasting keeps the shape, and each entry has its own gamma
    out = noise.bernoulli_exp(rng, np.array([[0, 60], [0, 60]]), np.array([1, 1]))
    assert out.shape == (2, 2)
    assert out[:, 0].all()
    assert not out[:, 1].any()
    # a mixed array: each entry its own probability
    n = 100_000
    numerators = np.where(np.arange(n) % 2 == 0, 1, 3)
    mixed = noise.bernoulli_exp(np.random.default_rng(4), numerators, 2)
    _assert_frequency(int(mixed[::2].sum()), n // 2, math.exp(-0.5))
    _assert_frequency(int(mixed[1::2].sum()), n // 2, math.exp(-1.5))


# ---------------------------------------------------------------------------------------------------------
# 2. discrete Laplace


@pytest.mark.parametrize("t", [1, 3, 50])
def test_discrete_laplace_vectorised_law(t: int) -> None:
    n = 200_000
    draws = noise.discrete_laplace(np.random.default_rng(10 + t), t, n)
    assert draws.dtype == np.int64
    assert draws.shape == (n,)
    radius = 40 * t
    assert _chisquare_pvalue(draws, _laplace_pmf(t), radius) > P_MIN
    _assert_variance(draws, _laplace_variance(t))
    # power: the same test rejects a 10% wrong scale
    assert _chisquare_pvalue(draws, _laplace_pmf(1.1 * t), radius) < 1e-8


def test_discrete_laplace_scalar_law() -> None:
    rng = np.random.default_rng(20)
    draws = _scalar_draws(lambda: noise.discrete_laplace(rng, 3, 8), 20_000)
    singles = np.array([noise.discrete_laplace(rng, 3, 1)[0] for _ in range(2_000)])
    assert _chisquare_pvalue(draws, _laplace_pmf(3), 120) > P_MIN
    assert _chisquare_pvalue(np.concatenate((draws, singles)), _laplace_pmf(3), 120) > P_MIN
    _assert_variance(draws, _laplace_variance(3))


def test_discrete_laplace_per_draw_scale() -> None:
    n = 200_000
    scale = np.where(np.arange(n) % 3 == 0, 2, 40).astype(np.int64)
    draws = noise.discrete_laplace(np.random.default_rng(21), scale, n)
    for t in (2, 40):
        group = draws[scale == t]
        assert _chisquare_pvalue(group, _laplace_pmf(t), 40 * t) > P_MIN
        _assert_variance(group, _laplace_variance(t))
    # the scalar path with a per-draw scale
    rng = np.random.default_rng(22)
    small = np.array([2, 40, 2, 40, 2, 40, 2, 40], dtype=np.int64)
    scalar = np.stack([noise.discrete_laplace(rng, small, 8) for _ in range(2_500)])
    assert _chisquare_pvalue(scalar[:, small == 2].reshape(-1), _laplace_pmf(2), 80) > P_MIN
    assert _chisquare_pvalue(scalar[:, small == 40].reshape(-1), _laplace_pmf(40), 1600) > P_MIN


def test_discrete_laplace_at_the_largest_scale() -> None:
    t = 2**40 - 1
    draws = noise.discrete_laplace(np.random.default_rng(23), t, 40_000).astype(np.float64) / t
    # at this scale the law is the continuous Laplace(1) to within 2^-40
    assert stats.kstest(draws, stats.laplace.cdf).pvalue > P_MIN
    scalar = noise.discrete_laplace(np.random.default_rng(24), t, 8)
    assert np.all(np.abs(scalar) < 60 * t)
    assert np.unique(scalar).size == 8


# ---------------------------------------------------------------------------------------------------------
# 3. discrete Gaussian


@pytest.mark.parametrize(("t", "q"), [(1, 1), (3, 4), (20, 30)])
def test_discrete_gaussian_vectorised_law(t: int, q: int) -> None:
    n = 200_000
    draws = noise.discrete_gaussian(np.random.default_rng(30 + t), t, q, n)
    assert draws.dtype == np.int64
    assert draws.shape == (n,)
    variance = t * q
    radius = math.ceil(40 * math.sqrt(variance)) + 1
    assert _chisquare_pvalue(draws, _gaussian_pmf(variance), radius) > P_MIN
    # the discrete Gaussian's variance is t q to within a relative e^-(2 pi^2 t q) (e^-20 at t q = 1)
    _assert_variance(draws, variance)
    assert _chisquare_pvalue(draws, _gaussian_pmf(1.21 * variance), radius) < 1e-8


@pytest.mark.parametrize(("t", "q"), [(1, 1), (3, 4)])
def test_discrete_gaussian_scalar_law(t: int, q: int) -> None:
    rng = np.random.default_rng(40 + t)
    draws = _scalar_draws(lambda: noise.discrete_gaussian(rng, t, q, 8), 20_000)
    radius = math.ceil(40 * math.sqrt(t * q)) + 1
    assert _chisquare_pvalue(draws, _gaussian_pmf(t * q), radius) > P_MIN
    _assert_variance(draws, t * q)


def test_discrete_gaussian_per_draw_parameters() -> None:
    """The law depends on t q alone (t only sets the proposal): five factorisations of 12, and (20, 30).

    (The acceptance rate is about sqrt(pi x / 2) e^(-x / 2) with x = q / t, so q / t is kept small: at t = 1,
    q = 12 it is 1%.)"""
    n = 200_000
    pairs = np.array([(2, 6), (3, 4), (4, 3), (6, 2), (12, 1), (20, 30)], dtype=np.int64)
    which = np.arange(n) % len(pairs)
    t, q = pairs[which, 0], pairs[which, 1]
    draws = noise.discrete_gaussian(np.random.default_rng(50), t, q, n)
    for index, (ti, qi) in enumerate(pairs.tolist()):
        group = draws[which == index]
        radius = math.ceil(40 * math.sqrt(ti * qi)) + 1
        assert _chisquare_pvalue(group, _gaussian_pmf(ti * qi), radius) > P_MIN, (ti, qi)
        _assert_variance(group, ti * qi)
    twelve = draws[which < 5]
    assert _chisquare_pvalue(twelve, _gaussian_pmf(12), 140) > P_MIN
    # the scalar path with per-draw parameters
    rng = np.random.default_rng(51)
    ts, qs = np.array([2, 12, 3, 4, 6, 12, 3, 4]), np.array([6, 1, 4, 3, 2, 1, 4, 3])
    scalar = _scalar_draws(lambda: noise.discrete_gaussian(rng, ts, qs, 8), 16_000)
    assert _chisquare_pvalue(scalar, _gaussian_pmf(12), 140) > P_MIN


def test_discrete_gaussian_at_the_largest_parameters() -> None:
    t = q = 2**24 - 1
    sd = float(t)
    draws = noise.discrete_gaussian(np.random.default_rng(52), t, q, 20_000).astype(np.float64) / sd
    assert stats.kstest(draws, stats.norm.cdf).pvalue > P_MIN
    _assert_variance(draws, 1.0)
    scalar = noise.discrete_gaussian(np.random.default_rng(53), t, q, 8)
    assert np.all(np.abs(scalar) < 10 * sd)


# ---------------------------------------------------------------------------------------------------------
# 4. symmetry and the "-0" rejection


@pytest.mark.parametrize("t", [1, 3, 50])
def test_laplace_symmetry_and_zero(t: int) -> None:
    n = 200_000
    draws = noise.discrete_laplace(np.random.default_rng(60 + t), t, n)
    _check_symmetry(draws)
    r = math.exp(-1.0 / t)
    p0 = (1 - r) / (1 + r)
    zeros = int(np.count_nonzero(draws == 0))
    _assert_frequency(zeros, n, p0)
    # without the "-0" rejection the mass at 0 would be 1 - r = p0 (1 + r), far outside the band
    assert abs((1 - r) - p0) > 5 * SE_BOUND * math.sqrt(p0 * (1 - p0) / n)


def test_laplace_scalar_symmetry_and_zero() -> None:
    rng = np.random.default_rng(64)
    bits = noise._Bits(rng)
    draws = np.array([bits.laplace(3) for _ in range(20_000)])
    _check_symmetry(draws)
    r = math.exp(-1.0 / 3)
    p0 = (1 - r) / (1 + r)
    _assert_frequency(int(np.count_nonzero(draws == 0)), draws.size, p0)
    assert abs((1 - r) - p0) > 5 * SE_BOUND * math.sqrt(p0 * (1 - p0) / draws.size)


@pytest.mark.parametrize(("t", "q"), [(1, 1), (3, 4)])
def test_gaussian_symmetry_and_zero(t: int, q: int) -> None:
    n = 200_000
    draws = noise.discrete_gaussian(np.random.default_rng(70 + t), t, q, n)
    _check_symmetry(draws)
    p0 = float(_gaussian_pmf(t * q)(np.zeros(1, dtype=np.int64))[0])
    _assert_frequency(int(np.count_nonzero(draws == 0)), n, p0)


def _check_symmetry(draws: IntArray) -> None:
    """P(Y = y) = P(Y = -y): for each y > 0, #(y) given #(y) + #(-y) is Binomial(., 1/2); the sum of the
    squared standardised differences is chi-square; and the signs balance overall."""
    positive = int(np.count_nonzero(draws > 0))
    negative = int(np.count_nonzero(draws < 0))
    total = positive + negative
    assert abs(positive - negative) < SE_BOUND * math.sqrt(total)
    top = int(np.abs(draws).max())
    plus = np.bincount(draws[draws > 0], minlength=top + 1)[1:].astype(np.float64)
    minus = np.bincount(-draws[draws < 0], minlength=top + 1)[1:].astype(np.float64)
    pooled = plus + minus
    use = pooled >= 10  # pool the rare magnitudes into one binomial
    rest_plus, rest_total = float(plus[~use].sum()), float(pooled[~use].sum())
    z2 = (plus[use] - minus[use]) ** 2 / pooled[use]
    statistic = float(z2.sum())
    df = int(use.sum())
    if rest_total > 0:
        statistic += (2 * rest_plus - rest_total) ** 2 / rest_total
        df += 1
    assert stats.chi2.sf(statistic, df) > P_MIN


# ---------------------------------------------------------------------------------------------------------
# 5. seeded reproducibility, and only the passed generator


@pytest.mark.parametrize("size", [1, 5, 8, 9, 1000])
def test_samplers_are_reproducible(size: int) -> None:
    def draws(seed: int) -> tuple[IntArray, IntArray, npt.NDArray[np.bool_]]:
        rng = np.random.default_rng(seed)
        return (
            noise.discrete_laplace(rng, 7, size),
            noise.discrete_gaussian(rng, 3, 4, size),
            noise.bernoulli_exp(rng, np.full(size, 3, dtype=np.int64), 2),
        )

    first, second = draws(123), draws(123)
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)
    other = draws(124)
    if size >= 5:
        assert any(not np.array_equal(a, b) for a, b in zip(first[:2], other[:2], strict=True))


def test_samplers_use_only_the_given_generator() -> None:
    np.random.seed(5)
    global_state = np.random.get_state()
    for size in (3, 500):
        a, b = np.random.default_rng(9), np.random.default_rng(9)
        np.random.default_rng(1).integers(0, 10, 100)  # other generators do not matter
        out_a = noise.discrete_gaussian(a, 5, 5, size)
        np.random.random(17)  # neither does the global state
        out_b = noise.discrete_gaussian(b, 5, 5, size)
        np.testing.assert_array_equal(out_a, out_b)
        # both generators were advanced, by the same amount
        after_a, after_b = a.integers(0, 2**62, 4), b.integers(0, 2**62, 4)
        np.testing.assert_array_equal(after_a, after_b)
        assert not np.array_equal(after_a, np.random.default_rng(9).integers(0, 2**62, 4))
    np.random.set_state(global_state)
    plan = noise.plan_gaussian(1.0, 1.0)
    before = np.random.get_state()[1].copy()
    r1 = noise.release(np.arange(20.0), plan, np.random.default_rng(77))
    r2 = noise.release(np.arange(20.0), plan, np.random.default_rng(77))
    np.testing.assert_array_equal(r1, r2)
    np.testing.assert_array_equal(np.random.get_state()[1], before)  # global numpy state untouched
    assert not np.array_equal(r1, noise.release(np.arange(20.0), plan, np.random.default_rng(78)))


# ---------------------------------------------------------------------------------------------------------
# 6. validation


@pytest.mark.parametrize("size", [3, 100])
@pytest.mark.parametrize("bad", [1.5, 3.0, True, np.True_, 0, -2, 2**40, 2**70, np.float64(2.0), "3", None])
def test_laplace_rejects_bad_scale(bad: object, size: int) -> None:
    with pytest.raises(pf.BudgetError) as info:
        noise.discrete_laplace(np.random.default_rng(0), bad, size)  # type: ignore[arg-type]
    assert info.value.path == "scale"


@pytest.mark.parametrize("size", [3, 100])
def test_laplace_rejects_bad_scale_arrays(size: int) -> None:
    rng = np.random.default_rng(0)
    bad_arrays = [
        np.full(size + 1, 3),  # wrong length
        np.full(size - 1, 3),
        np.full((size, 1), 3),
        np.full(size, 3.0),  # float
        np.full(size, True),
        np.concatenate((np.full(size - 1, 3), [0])),  # a zero
        np.concatenate((np.full(size - 1, 3), [-1])),
        np.concatenate((np.full(size - 1, 3), [2**40])),
        np.concatenate((np.full(size - 1, 3, dtype=np.uint64), np.array([2**64 - 1], dtype=np.uint64))),
    ]
    for bad in bad_arrays:
        with pytest.raises(pf.BudgetError) as info:
            noise.discrete_laplace(rng, bad, size)
        assert info.value.path == "scale", bad
    # the limits themselves are accepted
    assert noise.discrete_laplace(rng, 2**40 - 1, size).shape == (size,)
    assert noise.discrete_laplace(rng, np.int32(1), size).shape == (size,)
    assert noise.discrete_laplace(rng, [1] * size, size).shape == (size,)


@pytest.mark.parametrize("size", [3, 100])
def test_gaussian_rejects_bad_parameters(size: int) -> None:
    rng = np.random.default_rng(0)
    for bad in (0, -1, 2**24, 1.0, 2.5, True, np.False_, np.full(size + 1, 2), np.full(size, 2.0)):
        for name in ("t", "q"):
            arguments = {"t": 2, "q": 3, name: bad}
            with pytest.raises(pf.BudgetError) as info:
                noise.discrete_gaussian(rng, arguments["t"], arguments["q"], size)  # type: ignore[arg-type]
            assert info.value.path == name, (name, bad)
    assert noise.discrete_gaussian(rng, 2**24 - 1, 2**24 - 1, size).shape == (size,)


def test_bernoulli_exp_rejects_bad_gamma() -> None:
    rng = np.random.default_rng(0)
    for numerator, denominator in ((-1, 1), (1, 0), (1, -3), (np.array([1, -1]), 1), (1, np.array([1, 0]))):
        with pytest.raises(pf.BudgetError) as info:
            noise.bernoulli_exp(rng, numerator, denominator)
        assert info.value.path == "gamma"


def test_plans_reject_bad_inputs() -> None:
    for bad in (0.0, -1.0, math.nan, math.inf, -math.inf):
        with pytest.raises(pf.BudgetError, match=r"^sensitivity:"):
            noise.plan_gaussian(bad, 1.0)
        with pytest.raises(pf.BudgetError, match=r"^mu:"):
            noise.plan_gaussian(1.0, bad)
        with pytest.raises(pf.BudgetError, match=r"^sensitivity:"):
            noise.plan_laplace(bad, 1.0)
        with pytest.raises(pf.BudgetError, match=r"^epsilon:"):
            noise.plan_laplace(1.0, bad)
        with pytest.raises(pf.BudgetError, match=r"^noise_scale:"):
            noise.grid_for(bad)


def test_release_rows_rejects_mismatched_plans() -> None:
    rng = np.random.default_rng(0)
    gaussian, laplace = noise.plan_gaussian(1.0, 1.0), noise.plan_laplace(1.0, 1.0)
    with pytest.raises(pf.BudgetError, match=r"^plans:"):
        noise.release_rows(np.zeros((3, 2)), [gaussian, gaussian], rng)
    with pytest.raises(pf.BudgetError, match=r"^plans:"):
        noise.release_rows(np.zeros(()), [gaussian], rng)
    with pytest.raises(pf.BudgetError, match=r"^plans:"):
        noise.release_rows(np.zeros((2, 2)), [gaussian, laplace], rng)
    assert noise.release_rows(np.zeros((0, 4)), [], rng).shape == (0, 4)


# ---------------------------------------------------------------------------------------------------------
# 7. the discrete Gaussian's variance margin, by exact summation


def _discrete_deltas(variance: int, shift: int, eps: FloatArray) -> FloatArray:
    """delta(eps) of the pair (N_Z(0, s^2), N_Z(k, s^2)) by exact summation over the integer support.

    The two laws share their normaliser (k is an integer), so the privacy loss is exactly
    L(y) = (k^2 - 2 k y) / (2 s^2), and delta(eps) = sum over L(y) > eps of P(y) (1 - e^(eps - L(y))), summed
    in log space. The pair is symmetric under y -> k - y, so one direction is the whole profile.
    """
    radius = math.ceil(40 * math.sqrt(variance)) + shift + 1
    y = np.arange(-radius, radius + 1, dtype=np.float64)
    log_p = -(y * y) / (2.0 * variance)
    log_p -= special.logsumexp(log_p)
    loss = (shift * shift - 2.0 * shift * y) / (2.0 * variance)
    out = np.zeros(eps.shape)
    for i, e in enumerate(eps.tolist()):
        above = loss > e
        if above.any():
            out[i] = math.exp(special.logsumexp(log_p[above] + np.log(-np.expm1(e - loss[above]))))
    return out


def _epsilons(variance: int, shift: int) -> FloatArray:
    """eps = 0, a grid around the loss's median mu^2/2 up to 5 sd above it (where delta is at least about
    Phi(-5) e^-eps and every float is accurate), and the loss atoms there, with the midpoints between them."""
    mu = shift / math.sqrt(variance)
    top = mu * mu / 2 + 5 * mu
    grid = mu * mu / 2 + mu * np.linspace(-1.0, 5.0, 25)
    # L(y) >= 0 iff y <= k / 2, and L(y) <= top iff y >= (k^2 - 2 s^2 top) / (2 k)
    lowest = math.ceil((shift * shift - 2.0 * variance * top) / (2.0 * shift))
    y = np.arange(lowest, shift // 2 + 1, dtype=np.float64)
    atoms = np.sort((shift * shift - 2.0 * shift * y) / (2.0 * variance))
    atoms = atoms[(atoms >= 0) & (atoms <= top)]
    if atoms.size > 40:
        atoms = atoms[np.linspace(0, atoms.size - 1, 40).astype(int)]
    midpoints = (atoms[1:] + atoms[:-1]) / 2
    eps = np.unique(np.concatenate(([0.0], grid, atoms, midpoints)))
    return np.asarray(eps[eps >= 0], dtype=np.float64)


def _shifts(variance: int) -> list[int]:
    s = math.sqrt(variance)
    if s <= 10:
        return list(range(1, math.ceil(3 * s) + 1))
    return sorted({1, 2, 3} | {int(k) for k in np.rint(s * np.geomspace(0.05, 3.0, 10))})


@pytest.mark.parametrize("variance", [4, 5, 9, 25, 100, 900, 10_000, 40_000])
def test_discrete_gaussian_margin_one_sixth_covers_every_shift(variance: int) -> None:
    """For s in [2, 200] and integer shifts k with k / s in (0, 3], the discrete pair's delta(eps) is at most
    the continuous Gaussian's at mu = k / sqrt(s^2 - 1/6), hence at mu = k / sqrt(s^2 - 1/4) (the margin the
    plans charge). The smallest margin that works is about 1/12 + 0.0021 / s^2, reached at k = 1, eps = 0."""
    margin = Fraction(1, 6)
    assert margin < noise.DISCRETE_GAUSSIAN_VARIANCE_MARGIN
    checked = 0
    for shift in _shifts(variance):
        eps = _epsilons(variance, shift)
        discrete = _discrete_deltas(variance, shift, eps)
        for e, d in zip(eps.tolist(), discrete.tolist(), strict=True):
            charged = gdp_delta(e, shift / math.sqrt(variance - float(margin)))
            charged_code = gdp_delta(e, shift / math.sqrt(variance - float(noise.DISCRETE_GAUSSIAN_VARIANCE_MARGIN)))
            assert d <= charged * (1 + 1e-12), (variance, shift, e, d, charged)
            assert charged <= charged_code
            checked += 1
    assert checked > 100


def test_discrete_gaussian_margin_is_needed() -> None:
    """At s = 2 and shift 1 the discrete total variation P(Y = 0) = 0.19947 exceeds the continuous Gaussian's
    at variance s^2 (0.19741, margin 0) and even at s^2 - 1/12 (0.19946): the margin must exceed 1/12."""
    variance, shift = 4, 1
    discrete = float(_discrete_deltas(variance, shift, np.zeros(1))[0])
    support = np.arange(-200, 201, dtype=np.float64)
    assert discrete == pytest.approx(1.0 / float(np.exp(-(support**2) / 8.0).sum()), rel=1e-12)
    assert discrete > gdp_delta(0.0, shift / math.sqrt(variance)) * 1.01
    assert discrete > gdp_delta(0.0, shift / math.sqrt(variance - 1 / 12))
    assert discrete < gdp_delta(0.0, shift / math.sqrt(variance - 0.0839))
    # the same holds for every s tried: at k = 1, eps = 0, margin 1/12 falls short, 1/12 + 0.003 / s^2 suffices
    for s in (3, 10, 30):
        tv = float(_discrete_deltas(s * s, 1, np.zeros(1))[0])
        low = gdp_delta(0.0, 1 / math.sqrt(s * s - 1 / 12))
        high = gdp_delta(0.0, 1 / math.sqrt(s * s - 1 / 12 - 0.003 / s**2))
        assert low < tv < high, (s, low, tv, high)


# ---------------------------------------------------------------------------------------------------------
# 8. plans


def _random_plan_inputs(seed: int, count: int) -> list[tuple[float, float, int]]:
    rng = np.random.default_rng(seed)
    sensitivities = 10.0 ** rng.uniform(-300, 300, count)
    parameters = 10.0 ** rng.uniform(-2, 2, count)
    dimensions = rng.choice([1, 2, 3, 10, 1000], count)
    fixed = [(1.0, 1.0, 1), (0.01, 1.0, 1), (1e-300, 100.0, 1), (1e300, 0.01, 1000), (3.0, 0.01, 7)]
    drawn = [(float(s), float(p), int(d)) for s, p, d in zip(sensitivities, parameters, dimensions, strict=True)]
    return fixed + drawn


def _is_power_of_two(value: float) -> bool:
    return value > 0 and math.frexp(value)[0] == 0.5


def test_plan_gaussian_guarantees() -> None:
    for sensitivity, mu, dimension in _random_plan_inputs(80, 300):
        plan = noise.plan_gaussian(sensitivity, mu, dimension)
        assert plan.kind == "gaussian"
        assert _is_power_of_two(plan.grid)
        sigma = sensitivity / mu
        assert 2.0**20 * plan.grid <= sigma * (1 + 1e-15)
        assert sigma < 2.0**21 * plan.grid * (1 + 1e-15)
        # exact arithmetic: the rounded sensitivity covers sensitivity / grid + sqrt(d)
        extra = Fraction(plan.sensitivity) - Fraction(sensitivity) / Fraction(plan.grid)
        assert extra >= 0
        assert extra * extra >= dimension
        # exact arithmetic: K / sqrt(t q - 1/4) <= plan.mu <= mu
        charged = Fraction(plan.t * plan.q) - noise.DISCRETE_GAUSSIAN_VARIANCE_MARGIN
        assert plan.mu <= mu
        assert Fraction(plan.sensitivity) ** 2 <= Fraction(plan.mu) ** 2 * charged
        assert plan.mu > mu * (1 - 1e-5)  # not needlessly loose
        # the noise is at least, and at most max_scale_ratio times, the continuous scale
        ratio = plan.scale / sigma
        assert 1.0 <= ratio <= noise.max_scale_ratio(mu, dimension), (sensitivity, mu, dimension, ratio)
        assert plan.sd == pytest.approx(plan.scale, rel=1e-15)
        # the sampler accepts the plan
        assert 1 <= plan.t < 2**24
        assert 1 <= plan.q < 2**24


def test_plan_laplace_guarantees() -> None:
    for sensitivity, epsilon, dimension in _random_plan_inputs(81, 300):
        plan = noise.plan_laplace(sensitivity, epsilon, dimension)
        assert plan.kind == "laplace"
        assert plan.q == 1
        assert _is_power_of_two(plan.grid)
        extra = Fraction(plan.sensitivity) - Fraction(sensitivity) / Fraction(plan.grid)
        assert extra >= dimension
        assert plan.epsilon <= epsilon
        assert Fraction(plan.sensitivity) <= Fraction(plan.epsilon) * plan.t
        assert plan.epsilon > epsilon * (1 - 1e-5)
        b = sensitivity / epsilon
        ratio = plan.scale / b
        assert 1.0 <= ratio <= noise.max_scale_ratio(epsilon, dimension), (sensitivity, epsilon, dimension, ratio)
        r = math.exp(-1.0 / plan.t)
        assert plan.sd == pytest.approx(plan.grid * math.sqrt(2 * r) / (1 - r), rel=1e-12)
        assert 1 <= plan.t < 2**40


def test_grid_for_is_a_power_of_two_below_the_scale() -> None:
    for scale in (1.0, 3.0, 1e-300, 1e300, 2.0**-1000, 5e-324, float(np.finfo(np.float64).max)):
        grid = noise.grid_for(scale)
        assert _is_power_of_two(grid)
        assert grid <= scale
    assert noise.grid_for(1.0) == 2.0**-20
    assert noise.grid_for(1.999) == 2.0**-20
    assert noise.grid_for(2.0) == 2.0**-19


# ---------------------------------------------------------------------------------------------------------
# 9. releases


def _residual(released: FloatArray, values: FloatArray, grid: float) -> FloatArray:
    units = released / grid
    assert np.all(units == np.rint(units)), "a release off the grid"
    return np.asarray(units - np.rint(values / grid), dtype=np.float64)


def test_release_gaussian_law() -> None:
    n = 50_000
    plan = noise.plan_gaussian(sensitivity=2.0, mu=0.7)
    values = np.random.default_rng(90).normal(0.0, 100.0, n)
    released = noise.release(values, plan, np.random.default_rng(91))
    assert released.shape == values.shape
    assert released.dtype == np.float64
    residual = _residual(released, values, plan.grid)
    sd = math.sqrt(plan.t * plan.q)
    assert stats.kstest(residual / sd, stats.norm.cdf).pvalue > P_MIN
    _assert_variance(residual / sd, 1.0)
    assert abs(float(residual.mean())) < SE_BOUND * sd / math.sqrt(n)
    assert float(np.std(released - values)) == pytest.approx(plan.sd, rel=0.03)


def test_release_laplace_law() -> None:
    n = 50_000
    plan = noise.plan_laplace(sensitivity=0.5, epsilon=2.0, dimension=3)
    values = np.random.default_rng(92).uniform(-1e6, 1e6, (n // 10, 10))
    released = noise.release(values, plan, np.random.default_rng(93))
    assert released.shape == values.shape
    residual = _residual(released, values, plan.grid).reshape(-1)
    assert stats.kstest(residual / plan.t, stats.laplace.cdf).pvalue > P_MIN
    _assert_variance(residual, _laplace_variance(plan.t))


def test_release_scalar_and_small() -> None:
    plan = noise.plan_gaussian(sensitivity=1.0, mu=1.0)
    out = noise.release(0.25, plan, np.random.default_rng(0))
    assert out.shape == ()
    assert float(out / plan.grid).is_integer()
    small = noise.release(np.array([1.0, 2.0, 3.0]), plan, np.random.default_rng(0))
    assert np.all(np.abs(small - np.array([1.0, 2.0, 3.0])) < 8 * plan.sd)


def test_release_extremes_are_deterministic() -> None:
    small_grid = noise.plan_gaussian(sensitivity=1.0, mu=1.0)  # grid 2^-20
    big_grid = noise.plan_laplace(sensitivity=2.0**40, epsilon=1.0)  # grid 2^20
    assert small_grid.grid == 2.0**-20
    assert big_grid.grid == 2.0**20
    values = np.array([1e308, -1e308, math.inf, -math.inf])
    top = float(np.finfo(np.float64).max)
    for seed in (0, 1):
        # value / grid is clamped to +-2^1020 grid units (1e308 is 2^1023.1 / 2^-20 = inf, clamped); the
        # noise vanishes in the rounding, and the release is never infinite
        out = noise.release(values, small_grid, np.random.default_rng(seed))
        np.testing.assert_array_equal(out, [2.0**1000, -(2.0**1000), 2.0**1000, -(2.0**1000)])
        # on a coarse grid nothing is clamped: +-inf becomes the largest double, and the noise (2^41) is
        # below half an ulp of 1e308
        out = noise.release(values, big_grid, np.random.default_rng(seed))
        np.testing.assert_array_equal(out, [1e308, -1e308, top, -top])
        # NaN is released as 0 would be
        nan_out = noise.release(np.array([math.nan, 1.0]), small_grid, np.random.default_rng(seed))
        zero_out = noise.release(np.array([0.0, 1.0]), small_grid, np.random.default_rng(seed))
        np.testing.assert_array_equal(nan_out, zero_out)
        rows = noise.release_rows(np.array([[math.nan, 1e308]]), [small_grid], np.random.default_rng(seed))
        assert rows[0, 1] == 2.0**1000
        assert abs(rows[0, 0]) < 10 * small_grid.sd


def test_release_rows_per_row_plans() -> None:
    width = 20_000
    plans = [noise.plan_gaussian(1.0, 0.5), noise.plan_gaussian(3.0, 2.0), noise.plan_gaussian(1e-3, 1.0, 4)]
    assert len({plan.grid for plan in plans}) == 3
    values = np.random.default_rng(94).normal(0.0, 10.0, (3, 100, width // 100))
    released = noise.release_rows(values, plans, np.random.default_rng(95))
    assert released.shape == values.shape
    separate = [noise.release(values[i], plan, np.random.default_rng(96 + i)) for i, plan in enumerate(plans)]
    for i, plan in enumerate(plans):
        sd = math.sqrt(plan.t * plan.q)
        together = _residual(released[i], values[i], plan.grid).reshape(-1) / sd
        alone = _residual(separate[i], values[i], plan.grid).reshape(-1) / sd
        assert stats.kstest(together, stats.norm.cdf).pvalue > P_MIN
        _assert_variance(together, 1.0)
        assert stats.ks_2samp(together, alone).pvalue > P_MIN
        # the same moments as a row-by-row release
        assert abs(float(together.var()) - float(alone.var())) < SE_BOUND * math.sqrt(2 * 2 / width)


def test_release_rows_laplace() -> None:
    width = 20_000
    plans = [noise.plan_laplace(1.0, 0.5), noise.plan_laplace(1.0, 3.0)]
    values = np.zeros((2, width))
    released = noise.release_rows(values, plans, np.random.default_rng(97))
    for i, plan in enumerate(plans):
        residual = _residual(released[i], values[i], plan.grid)
        assert stats.kstest(residual / plan.t, stats.laplace.cdf).pvalue > P_MIN
        _assert_variance(residual, _laplace_variance(plan.t))
        alone = _residual(noise.release(values[i], plan, np.random.default_rng(98 + i)), values[i], plan.grid)
        assert stats.ks_2samp(residual, alone).pvalue > P_MIN
