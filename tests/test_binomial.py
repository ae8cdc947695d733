"""The binomial pmf, log-pmf, cdf and sf of the standard plugins (rank-quantile's calibration, Dette-Graw's and
PrivBoot's resampling laws): the doubles scipy.stats.binom gives, bit for bit, on random and edge arguments,
with and without scipy.special's private binomial ufuncs."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from privframe_std import _binomial as binomial
from privframe_std.methods.rank_quantile import core


def _cases() -> list[tuple[int, int, float]]:
    rng = np.random.default_rng(7)
    ns = np.concatenate([[1, 2, 3, 10, 99], rng.integers(1, 10**6, 300)])
    cases = []
    for n in ns:
        for p in (1e-9, 0.03, 0.5, float(rng.uniform(0.0, 1.0)), 1.0 - 1e-12, 0.0, 1.0):
            for k in {-2, -1, 0, 1, int(n) // 3, int(n) - 1, int(n), int(n) + 1}:
                cases.append((k, int(n), float(p)))
    return cases


CASES = _cases()


def _same(mine: float, theirs: float) -> bool:
    return mine == theirs or (np.isnan(mine) and np.isnan(theirs))


def test_pmf_cdf_and_sf_are_scipy_stats_bit_for_bit() -> None:
    for k, n, p in CASES:
        assert _same(float(binomial.binom_pmf(k, n, p)), float(stats.binom.pmf(k, n, p))), (k, n, p)
        assert _same(float(binomial.binom_logpmf(k, n, p)), float(stats.binom.logpmf(k, n, p))), (k, n, p)
        assert _same(binomial.binom_cdf(k, n, p), float(stats.binom.cdf(k, n, p))), (k, n, p)
        assert _same(binomial.binom_sf(k, n, p), float(stats.binom.sf(k, n, p))), (k, n, p)


def test_the_pmf_takes_arrays_and_non_integers() -> None:
    k = np.array([-1.0, 0.0, 2.5, 3.0, 7.0, 8.0, 9.0])
    assert np.array_equal(binomial.binom_pmf(k, 8, 0.3), stats.binom.pmf(k, 8, 0.3))
    assert np.array_equal(binomial.binom_logpmf(k, 8, 0.3), stats.binom.logpmf(k, 8, 0.3))
    wide = np.arange(0.0, 1200.0)  # Dette-Graw's and PrivBoot's multiplicities: K ~ Bin(m, 1/n)
    assert np.array_equal(binomial.binom_logpmf(wide, 10**6, 1e-6), stats.binom.logpmf(wide, 10**6, 1e-6))
    assert np.array_equal(binomial.binom_pmf(wide[1:121], 5000, 1 / 5000), stats.binom.pmf(wide[1:121], 5000, 1 / 5000))
    assert binomial.binom_cdf(3.5, 8, 0.3) == stats.binom.cdf(3.5, 8, 0.3)
    assert binomial.binom_sf(3.5, 8, 0.3) == stats.binom.sf(3.5, 8, 0.3)


def test_without_the_private_ufuncs_scipy_stats_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(binomial, "_ufunc", lambda name: None)
    for k, n, p in CASES[:200]:
        assert _same(float(binomial.binom_pmf(k, n, p)), float(stats.binom.pmf(k, n, p)))
        assert _same(binomial.binom_cdf(k, n, p), float(stats.binom.cdf(k, n, p)))
        assert _same(binomial.binom_sf(k, n, p), float(stats.binom.sf(k, n, p)))


def test_the_miss_bound_is_the_one_computed_with_scipy_stats(monkeypatch: pytest.MonkeyPatch) -> None:
    """``core.miss_bound`` on these functions against the same bound on ``scipy.stats.binom`` (its first
    version), at 300 random calibrations."""
    rng = np.random.default_rng(3)
    cases = []
    for _ in range(300):
        n = int(rng.integers(2, 200_000))
        depth = int(rng.integers(-1, n + 2))
        cases.append(
            (depth, n, float(rng.uniform(0.01, 0.99)), float(rng.uniform(0.01, 3.0)), float(rng.uniform(-2.0, 12.0)))
        )
    mine = [core.miss_bound(*case) for case in cases]
    monkeypatch.setattr(core, "binom_pmf", stats.binom.pmf)
    monkeypatch.setattr(core, "binom_cdf", lambda k, n, p: float(stats.binom.cdf(k, n, p)))
    monkeypatch.setattr(core, "binom_sf", lambda k, n, p: float(stats.binom.sf(k, n, p)))
    assert mine == [core.miss_bound(*case) for case in cases]
