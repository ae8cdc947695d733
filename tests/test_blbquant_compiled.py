"""BLBQuant's compiled mean replicates: the weights' multinomial law, the exact Laplace noise, the lattice
release, and agreement in law with the generic path (weight matrix, then the mechanism)."""

from __future__ import annotations

import math

import attrs
import numpy as np
import pytest
from scipy import stats

import privframe as pf
from privframe_std.methods.blbquant import _jit
from privframe_std.methods.blbquant.roots import block_roots, mean_tables, weighted_estimator
from privframe_std.samplers._kernels import fast_stream


def _replicates(values: np.ndarray, total: int, rows: int, seed: int, grid: float = 1.0, t: int = 0) -> np.ndarray:
    tables = mean_tables(values.size, total)
    out = np.empty(rows)
    _jit.mean_replicates(
        fast_stream(np.random.default_rng(seed)),
        tables.table,
        tables.starts,
        tables.cdf,
        tables.cells,
        np.asarray(values, dtype=np.float64),
        total,
        tables.poisson,
        tables.bits,
        tables.threshold,
        1.0,
        grid,
        t,
        out,
    )
    return out


def _chi_square_p(observed: np.ndarray, probabilities: np.ndarray) -> float:
    """Chi-square goodness of fit, cells with expected count below 5 pooled into their neighbours' tail."""
    expected = probabilities / probabilities.sum() * observed.sum()
    keep = expected >= 5
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    return float(stats.chisquare(obs, exp).pvalue)


@pytest.mark.parametrize(
    ("total", "k"),
    [(2000, 20), (30, 50), (20_000, 5000)],
    ids=["poisson-stage", "fill-only", "32-bit-fill"],
)
def test_weights_are_multinomial(total: int, k: int) -> None:
    """With values one-hot on cell 0 (and on cells 0 and 1) the replicate times n is one count (two counts
    summed): Binomial(n, 1/k) (Binomial(n, 2/k), which needs the counts' negative correlation). A wrong
    rejection of over-full rows, a fill that skips a cell, or an off-by-one in the table would fail it."""
    rows = 40_000
    for cells in (1, 2):
        values = np.zeros(k)
        values[:cells] = 1.0
        counts = np.rint(_replicates(values, total, rows, seed=cells) * total).astype(np.int64)
        support = np.arange(total + 1)
        observed = np.bincount(counts, minlength=total + 1).astype(np.float64)
        p = _chi_square_p(observed, stats.binom.pmf(support, total, cells / k))
        assert p > 1e-4, (total, k, cells, p)


def test_every_replicate_sums_n_counts() -> None:
    """Constant records give the mean exactly: every row holds exactly n counts (0.75 is dyadic, so the sums are
    exact)."""
    for total, k in ((2000, 20), (30, 50), (50_000, 230)):
        out = _replicates(np.full(k, 0.75), total, 2000, seed=3)
        np.testing.assert_array_equal(out, 0.75)


def test_weighted_means_have_the_bootstrap_moments() -> None:
    """E = block mean, Var = var_pop(block) / n for the mean of n draws with replacement (5 SE)."""
    values = np.random.default_rng(5).lognormal(0, 1, 230)
    total, rows = 50_000, 20_000
    out = _replicates(values, total, rows, seed=6)
    variance = values.var() / total
    assert out.mean() == pytest.approx(values.mean(), abs=5 * math.sqrt(variance / rows))
    assert out.var() == pytest.approx(variance, rel=5 * math.sqrt(2 / rows))


@pytest.mark.parametrize("t", [1, 3, 40])
def test_compiled_discrete_laplace_has_its_pmf(t: int) -> None:
    """P(y) = (1 - r) / (1 + r) r^|y|, r = exp(-1/t). 200 000 draws; t + 1 in place of t fails at t = 3."""
    draws = np.empty(200_000, dtype=np.int64)
    _jit.laplace_draws(fast_stream(np.random.default_rng(t)), t, draws)
    r = math.exp(-1.0 / t)
    span = int(30 * t)
    support = np.arange(-span, span + 1)
    pmf = (1 - r) / (1 + r) * r ** np.abs(support)
    inside = np.abs(draws) <= span
    observed = np.bincount(draws[inside] + span, minlength=support.size).astype(np.float64)
    assert _chi_square_p(np.append(observed, (~inside).sum()), np.append(pmf, 1 - pmf.sum())) > 1e-4
    r_wrong = math.exp(-1.0 / (t + 1))
    wrong = (1 - r_wrong) / (1 + r_wrong) * r_wrong ** np.abs(support)
    if t == 3:
        assert _chi_square_p(observed, wrong) < 1e-6


def test_compiled_discrete_laplace_at_a_large_scale() -> None:
    """t near the 2^40 limit: no overflow in ``u + t v`` or ``t K``; the variance 2 r / (1 - r)^2 ~ 2 t^2."""
    t = 2**39 + 12345
    draws = np.empty(50_000, dtype=np.int64)
    _jit.laplace_draws(fast_stream(np.random.default_rng(9)), t, draws)
    scaled = draws / t
    assert abs(scaled.mean()) < 5 * math.sqrt(2 / draws.size)
    assert scaled.var() == pytest.approx(2.0, rel=5 * math.sqrt(5 / draws.size))


def test_the_release_is_on_the_grid_with_discrete_laplace_noise() -> None:
    """``grid (rint(mean / grid) + Y)``: constant records, so the steps minus the centre are the noise itself."""
    grid, t = 2.0**-10, 5
    out = _replicates(np.full(40, 0.75), 2000, 100_000, seed=10, grid=grid, t=t)
    steps = out / grid
    np.testing.assert_array_equal(steps, np.rint(steps))
    noise = (steps - 0.75 / grid).astype(np.int64)
    r = math.exp(-1.0 / t)
    support = np.arange(-150, 151)
    pmf = (1 - r) / (1 + r) * r ** np.abs(support)
    observed = np.bincount(np.clip(noise, -150, 150) + 150, minlength=support.size).astype(np.float64)
    assert _chi_square_p(observed, pmf) > 1e-4


def test_compiled_roots_have_the_law_of_the_generic_path() -> None:
    """The same block through both paths (the weight matrix and the mechanism's release, or the compiled
    loop): two-sample KS on 20 000 roots each, and the Laplace noise's scale is the mechanism's."""
    n, b = 5000, 60
    block = np.random.default_rng(11).lognormal(0, 1, b).clip(0, 20)[np.newaxis, :]
    mechanism = pf.registry.create("mechanism", "laplace")
    event = mechanism.plan(20 / n, pf.PureDP(0.5), label="replicate")
    fast = weighted_estimator(pf.registry.create("statistic", "mean"), mechanism, event, pf.Bounds(0.0, 20.0))
    assert fast.compiled_mean is not None
    generic = attrs.evolve(fast, compiled_mean=None)
    kwargs = {"n": n, "R": 20_000, "tau_n": math.sqrt(n), "shared_rng": None}
    a = block_roots(fast, block, block.mean(axis=1), block_rngs=[np.random.default_rng(12)], **kwargs)
    c = block_roots(generic, block, block.mean(axis=1), block_rngs=[np.random.default_rng(13)], **kwargs)
    assert stats.ks_2samp(a[0], c[0]).pvalue > 1e-3
    expected = block.var() + n * 2 * event.noise_scale**2
    assert a.var() == pytest.approx(expected, rel=5 * math.sqrt(2 / 20_000))


def test_float_noise_and_shared_weights_keep_the_generic_path() -> None:
    mean = pf.registry.create("statistic", "mean")
    simulated = pf.registry.create("mechanism", "laplace", exact=False)
    event = simulated.plan(0.01, pf.PureDP(1.0), label="replicate")
    assert weighted_estimator(mean, simulated, event, pf.Bounds(0.0, 1.0)).compiled_mean is None
    median = pf.registry.create("statistic", "median")
    exact = pf.registry.create("mechanism", "laplace")
    event = exact.plan(1.0, pf.PureDP(1.0), label="replicate")
    assert weighted_estimator(median, exact, event, pf.Bounds(0.0, 1.0)).compiled_mean is None


def test_the_interval_does_not_depend_on_the_thread_count() -> None:
    x = np.random.default_rng(14).lognormal(0, 1, 20_000).clip(0, 20)
    kwargs = {"method": "blbquant", "budget": pf.PureDP(2.0), "bounds": (0, 20), "rng": 3, "R": 300}
    one = pf.confidence_interval(x, "mean", **kwargs)
    two = pf.confidence_interval(x, "mean", workers=2, **kwargs)
    assert (one.low, one.high, one.center) == (two.low, two.high, two.center)


def test_huge_bounds_keep_the_sums_finite() -> None:
    """Records near 1e306 times n = 2000 overflow a plain sum: the compiled path scales by a power of two,
    so every root stays finite (and the interval too)."""
    n, b = 2000, 50
    block = np.random.default_rng(15).uniform(5e305, 1e306, b)[np.newaxis, :]
    mechanism = pf.registry.create("mechanism", "laplace")
    event = mechanism.plan(1e306 / n, pf.PureDP(1.0), label="replicate")
    fast = weighted_estimator(pf.registry.create("statistic", "mean"), mechanism, event, pf.Bounds(0.0, 1e306))
    roots = block_roots(
        fast,
        block,
        block.mean(axis=1),
        n=n,
        R=500,
        tau_n=1.0,
        block_rngs=[np.random.default_rng(16)],
        shared_rng=None,
        bound=1e306,
    )
    assert np.all(np.isfinite(roots))
    x = np.random.default_rng(17).uniform(0, 1e306, 2000)
    res = pf.confidence_interval(
        x, "mean", method="blbquant", budget=pf.PureDP(8.0), bounds=(0, 1e306), min_block=0, R=200, rng=4
    )
    assert math.isfinite(res.low)
    assert math.isfinite(res.high)


@pytest.mark.parametrize(("statistic", "options"), [("median", {}), ("mean", {"weights": "shared"})])
def test_the_weight_matrix_path_does_not_depend_on_the_thread_count(statistic: str, options: dict[str, str]) -> None:
    x = np.random.default_rng(18).lognormal(0, 1, 20_000).clip(0, 20)
    kwargs = {"method": "blbquant", "budget": pf.PureDP(2.0), "bounds": (0, 20), "rng": 5, "R": 300, **options}
    one = pf.confidence_interval(x, statistic, **kwargs)
    two = pf.confidence_interval(x, statistic, workers=2, **kwargs)
    assert (one.low, one.high, one.center) == (two.low, two.high, two.center)


@pytest.mark.parametrize(("k", "total"), [(816, 200_000), (20, 2000), (4096, 40_000)])
def test_the_tables_are_the_rules_they_replace(k: int, total: int) -> None:
    """Each fill piece's cell is Lemire's multiply-shift (k where it is rejected), and each prefix's start is
    the count of CDF values at or below it: a cell off by one, a wrong rejection or a shifted start fails."""
    tables = mean_tables(k, total)
    pieces = np.arange(1 << 16, dtype=np.uint64)
    products = pieces * np.uint64(k)
    rejected = (products & np.uint64(0xFFFF)) < np.uint64(tables.threshold)
    assert tables.bits == 16
    np.testing.assert_array_equal(tables.cells[rejected], k)
    np.testing.assert_array_equal(tables.cells[~rejected], (products >> np.uint64(16))[~rejected])
    assert np.bincount(tables.cells, minlength=k + 1)[:k].min() == np.bincount(tables.cells, minlength=k + 1)[:k].max()
    np.testing.assert_array_equal(tables.starts, np.searchsorted(tables.cdf, pieces / 2.0**16, side="right"))


def test_a_refined_prefix_is_the_inverse_cdf_of_its_uniform() -> None:
    """For every prefix the table leaves open, the refinement (a scan from its start) equals numpy's
    ``searchsorted`` of the same uniform, ``(prefix + v) / 2^16`` with v from the stream's next word."""
    from privframe_std.samplers._jit import sfc64_words

    tables = mean_tables(816, 200_000)
    open_prefixes = np.flatnonzero(np.isnan(tables.table))
    assert open_prefixes.size > 50
    rng = np.random.default_rng(19)
    for prefix in open_prefixes:
        for _ in range(20):
            state = fast_stream(rng)
            word = np.empty(1, dtype=np.uint64)
            sfc64_words(state.copy(), word)
            u = (float(prefix) + float(word[0] >> np.uint64(11)) * 2.0**-53) / 2.0**16
            expected = np.searchsorted(tables.cdf, u, side="right")
            assert _jit._refine(state, np.uint64(prefix), tables.starts, tables.cdf) == expected


@pytest.mark.parametrize("sets", ["symmetric", "upper", "lower"])
def test_compiled_histograms_and_coverages_are_numpys_bit_for_bit(sets: str) -> None:
    """The compiled loops against the numpy formulas they replace (floor, bincount, division; cumsum from 0
    and the differences), on roots partly outside the grid."""
    from privframe_std.methods.blbquant.search import block_histograms, nested_coverages

    rng = np.random.default_rng(20)
    roots = rng.normal(0.0, 3.0, (7, 3001))
    low, width, bins = -8.0, 16.0 / 256, 256
    position = np.floor((roots - low) / width)
    inside = (position >= 0) & (position < bins)
    cells = (np.arange(7)[:, np.newaxis] * bins + np.where(inside, position, 0).astype(np.int64))[inside]
    expected = np.bincount(cells, minlength=7 * bins).reshape(7, bins).astype(np.float64) / 3001
    histograms = block_histograms(roots, low, width, bins)
    np.testing.assert_array_equal(histograms, expected)
    cumulative = np.concatenate([np.zeros((7, 1)), np.cumsum(expected, axis=1)], axis=1)
    half = bins // 2
    upper, lower = cumulative[:, half + 1 :], cumulative[:, half - 1 :: -1]
    reference = {"symmetric": upper - lower, "upper": upper, "lower": cumulative[:, [bins]] - lower}[sets]
    np.testing.assert_array_equal(nested_coverages(histograms, sets), reference.T)
