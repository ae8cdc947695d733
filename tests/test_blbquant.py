"""BLBQuant (algorithms.md section 5): settings, the one-draw search, sensitivity 1, estimators, coverage."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from scipy import stats

import privframe as pf
import privframe.plugin as pp
from privframe.resampling.blocks import draw
from privframe_std.mechanisms import _jit as compiled_selection
from privframe_std.mechanisms._jit import NEGLIGIBLE
from privframe_std.mechanisms.exponential import quantile_log_weights, weighted_quantile_log_weights
from privframe_std.methods.blbquant import blb_blocks, blb_replicates
from privframe_std.methods.blbquant import method as blbquant_module
from privframe_std.methods.blbquant.roots import block_roots, weighted_estimator
from privframe_std.methods.blbquant.search import above_threshold, block_count, block_histograms, nested_coverages

TRUNC = stats.truncnorm(a=-3, b=2, scale=2)  # N(0, 2^2) truncated to [-6, 4]: the blbquant-grid population
TRUE_MEAN = float(TRUNC.mean())
BOUNDS = (-6.0, 4.0)


def _data(n: int, seed: int | np.random.SeedSequence) -> np.ndarray:
    return np.asarray(TRUNC.rvs(size=n, random_state=np.random.default_rng(seed)), dtype=np.float64)


def test_truth_matches_the_experiment_grid() -> None:
    assert abs(TRUE_MEAN - -0.1015660) < 1e-7


# ---------------------------------------------------------------------------------------------------------
# Settings and ledger


def test_default_settings_follow_the_paper() -> None:
    n, eps = 1000, 8.0
    res = pf.confidence_interval(
        _data(n, 0), "mean", method="blbquant", min_block=0, budget=pf.PureDP(eps), bounds=BOUNDS, rng=1
    )
    p = res.parameters
    s = math.ceil(10 * math.log(n) / (eps / 2))
    assert (p["s"], p["b"]) == (s, n // s) == (18, 55)
    assert p["R"] == min(10_000, max(100, math.ceil(math.sqrt(n) * (n // s) / math.log(n)))) == 252
    assert p["grid"] == (-25.0, 25.0)  # +-5 (high - low) / 2
    assert p["bins"] == 2048  # 50 sqrt(1000) = 1581 bins of width 1/sqrt(n), rounded up to a power of two
    assert res.diagnostics["bin_width"] == pytest.approx(50 / 2048)
    assert p["mechanism"] == "laplace"
    assert blb_blocks(n, eps / 2) == 18
    assert blb_replicates(50_000, 1785) == 10_000
    assert blb_replicates(100, 5) == 100


def test_ledger_is_pure_eps_and_noise_scales_are_exact() -> None:
    n, eps = 1000, 8.0
    res = pf.confidence_interval(
        _data(n, 2), "mean", method="blbquant", min_block=0, budget=pf.PureDP(eps), bounds=BOUNDS, rng=3
    )
    center, search = res.privacy.events
    assert center.budget == pf.PureDP(eps / 2)
    assert center.mechanism == "laplace"
    expected = 10 / n / (eps / 2)  # Delta_n = (b - a) / n; the lattice noise is at most max_scale_ratio above
    assert expected <= center.noise_scale <= expected * pp.noise.max_scale_ratio(eps / 2)
    assert search.budget == pf.PureDP(eps / 2)
    assert search.mechanism == "above-threshold"
    assert search.sensitivity == 1.0
    assert search.noise_scale == pytest.approx(2 / (eps / 2))
    assert search.details["query_noise"] == pytest.approx(4 / (eps / 2))
    assert res.privacy.total == pf.PureDP(eps)
    assert res.privacy.summary() == "8-DP"
    assert res.low < res.center < res.high


def test_budgets() -> None:
    x = _data(600, 4)
    res = pf.confidence_interval(
        x, "mean", method="blbquant", min_block=0, budget=pf.ApproxDP(8.0, 1e-6), bounds=BOUNDS, rng=1
    )
    assert res.privacy.total == pf.PureDP(8.0)  # pure eps-DP implies (eps, delta); no delta is spent
    with pytest.raises(pf.BudgetError, match=r"^budget: blbquant is pure epsilon-DP"):
        pf.confidence_interval(x, "mean", method="blbquant", min_block=0, budget=pf.GDP(1.0), bounds=BOUNDS)
    with pytest.raises(pf.BudgetError):
        pf.confidence_interval(x, "mean", method="blbquant", min_block=0, budget=None, bounds=BOUNDS)


def test_options_and_errors() -> None:
    x = _data(800, 5)
    kw: dict[str, Any] = {"method": "blbquant", "min_block": 0, "budget": pf.PureDP(8.0), "bounds": BOUNDS}
    res = pf.confidence_interval(x, "mean", s=10, R=150, grid=(-10, 10), bin_width=0.05, rng=1, **kw)
    assert (res.parameters["s"], res.parameters["R"], res.parameters["bins"]) == (10, 150, 512)
    again = pf.confidence_interval(x, "mean", s=10, R=150, grid=(-10, 10), bin_width=0.05, rng=1, **kw)
    assert (res.low, res.high) == (again.low, again.high)
    with pytest.raises(pf.ConfigError, match=r"grid"):
        pf.confidence_interval(x, "mean", grid=(1, -1), **kw)
    with pytest.raises(pf.ConfigError, match=r"sets"):
        pf.confidence_interval(x, "mean", sets="one-sided", **kw)
    with pytest.raises(pf.ConfigError, match=r"^statistic:"):
        pf.confidence_interval(x, "u-statistic", **kw)
    with pytest.raises(pf.ConfigError, match=r"^sampler\.s:"):
        pf.confidence_interval(x[:30], "mean", method="blbquant", min_block=0, budget=pf.PureDP(0.5), bounds=BOUNDS)


# ---------------------------------------------------------------------------------------------------------
# min_block: blocks too small for the statistic are refused by default


@pytest.mark.parametrize(
    ("statistic", "options", "n", "eps", "effective"),
    [
        ("mean", {}, 1000, 8.0, "55 records"),  # the paper's own setting: 18 blocks of 55
        ("mean", {}, 2000, 5.0, "64 records"),
        ("median", {}, 2000, 5.0, "64 records"),
        ("quantile", {"q": 0.9}, 10_000, 5.0, "54 records in the tail"),  # 2 x 270 x 0.1
    ],
)
def test_blocks_below_min_block_are_refused_before_anything_is_released(
    statistic: str, options: dict[str, Any], n: int, eps: float, effective: str
) -> None:
    x = _data(n, 30)
    with pytest.raises(pf.ConfigError, match=r"^min_block: ") as info:
        pf.confidence_interval(
            x, statistic, method="blbquant", budget=pf.PureDP(eps), bounds=BOUNDS, rng=1, **options
        )  # fmt: skip
    message = str(info.value)
    assert effective in message
    assert "cr-gs" in message
    assert "min_block=0" in message
    # the rule reads n, epsilon and q only: the same refusal for any data of that size
    with pytest.raises(pf.ConfigError, match=r"^min_block: "):
        pf.confidence_interval(
            np.full(n, 4.0), statistic, method="blbquant", budget=pf.PureDP(eps), bounds=BOUNDS, rng=1, **options
        )  # fmt: skip
    paper = pf.confidence_interval(
        x, statistic, method="blbquant", min_block=0, budget=pf.PureDP(eps), bounds=BOUNDS, rng=1, **options
    )  # fmt: skip
    assert paper.low < paper.high


def test_blocks_at_min_block_run_by_default() -> None:
    """n = 10 000 at eps = 5: 37 blocks of 270 records, enough for the mean and the median."""
    x = _data(10_000, 31)
    for statistic in ("mean", "median"):
        res = pf.confidence_interval(x, statistic, method="blbquant", budget=pf.PureDP(5.0), bounds=BOUNDS, rng=2)
        assert (res.parameters["s"], res.parameters["b"]) == (37, 270)
        assert res.low < res.high
    lower = pf.confidence_interval(
        x, "mean", method="blbquant", min_block=270, budget=pf.PureDP(5.0), bounds=BOUNDS, rng=2
    )
    assert lower.low < lower.high
    with pytest.raises(pf.ConfigError, match=r"^min_block: "):
        pf.confidence_interval(x, "mean", method="blbquant", min_block=271, budget=pf.PureDP(5.0), bounds=BOUNDS)


def test_a_pipeline_reports_the_refusal_at_n_without_data() -> None:
    pipe = pf.Pipeline.build("mean", method="blbquant", budget=pf.PureDP(5.0), bounds=BOUNDS)
    pipe.check(10_000)
    with pytest.raises(pf.ConfigError, match=r"^min_block: "):
        pipe.check(2000)


# ---------------------------------------------------------------------------------------------------------
# The search: one threshold draw, and the count query it stands for


class CountingNoise:
    """A Laplace source that records every call (scale and size) and returns fixed values."""

    def __init__(self, threshold: float = 0.0, queries: float = 0.0) -> None:
        self.calls: list[tuple[float, int | None]] = []
        self.threshold, self.queries = threshold, queries

    def laplace(self, loc: float = 0.0, scale: float = 1.0, size: int | None = None) -> object:
        self.calls.append((scale, size))
        return self.threshold if size is None else np.full(size, self.queries)


def test_search_draws_the_threshold_noise_once() -> None:
    coverages = np.sort(np.random.default_rng(0).uniform(size=(40, 9)), axis=0)  # nested: rising in k
    noise = CountingNoise()
    above_threshold(coverages, 0.9, 2.0, noise)
    scalar_calls = [c for c in noise.calls if c[1] is None]
    assert scalar_calls == [(2 / 2.0, None)]  # Lap(2 / eps), once
    assert [c for c in noise.calls if c[1] is not None] == [(4 / 2.0, 40)]  # Lap(4 / eps) per candidate


@pytest.mark.parametrize(("sets", "searches"), [("symmetric", 1), ("equal-tailed", 2)])
def test_method_draws_one_threshold_per_search(monkeypatch: pytest.MonkeyPatch, sets: str, searches: int) -> None:
    """Wrap the method's search stream and count Laplace draws: one threshold (scalar) draw per search."""
    calls: list[tuple[float, int | None]] = []
    original = above_threshold

    def counted(coverages: np.ndarray, threshold: float, epsilon: float, noise: Any) -> int | None:
        class Proxy:
            def laplace(self, loc: float = 0.0, scale: float = 1.0, size: int | None = None) -> object:
                calls.append((scale, size))
                return noise.laplace(loc, scale, size)

        return original(coverages, threshold, epsilon, Proxy())

    monkeypatch.setattr(blbquant_module, "above_threshold", counted)
    eps = 8.0
    res = pf.confidence_interval(
        _data(800, 6), "mean", method="blbquant", min_block=0, budget=pf.PureDP(eps), bounds=BOUNDS, sets=sets, rng=7
    )
    eps_search = eps / 2 / searches
    assert [c for c in calls if c[1] is None] == [(2 / eps_search, None)] * searches
    assert [c[0] for c in calls if c[1] is not None] == [4 / eps_search] * searches
    assert len(res.privacy.events) == 1 + searches


def test_noisy_median_rule_is_above_threshold_on_a_count() -> None:
    """``c_(floor(s/2 + Z_g + Z_l)) > t`` holds exactly when ``M + 1 - Z_l <= s/2 + Z_g``, M = #{c_j <= t}.

    Checked on random coverages and noise values, including indices below 1 and above s: the search (which
    counts) against the paper's rule on sorted coverages, and against the count inequality.
    """
    rng = np.random.default_rng(8)
    for _ in range(300):
        s = int(rng.integers(2, 30))
        cov = np.round(rng.uniform(size=(1, s)), 2)
        t = float(rng.choice([0.5, 0.9, cov[0, 0]]))
        z_g, z_l = rng.laplace(0, 3), rng.laplace(0, 6)
        chosen = above_threshold(cov, t, 1.0, CountingNoise(z_g, z_l))
        position = math.floor(min(max(s / 2 + z_g + z_l, -1.0), s + 1.0))
        median = 0.0 if position < 1 else 1.0 if position > s else float(np.sort(cov[0])[position - 1])
        assert (chosen == 0) == (median > t)
        m = int(block_count(cov, t)[0])
        assert (chosen == 0) == (m + 1 - z_l <= s / 2 + z_g)


def _coverages_for(x: np.ndarray, blocks_index: np.ndarray, kind: str, seed: int) -> np.ndarray:
    """Symmetric-set block coverages ``(K, s)`` of data x with the partition and all randomness held fixed."""
    n = x.shape[0]
    bounds = pf.Bounds(*BOUNDS)
    if kind == "mean":
        mechanism = pf.registry.create("mechanism", "laplace")
        statistic = pf.registry.create("statistic", "mean")
        event = mechanism.plan(bounds.width / n, pf.PureDP(2.0), label="replicate")
    else:
        mechanism = pf.registry.create("mechanism", "exponential")
        statistic = pf.registry.create("statistic", "median")
        event = mechanism.plan_selection(statistic, pf.PureDP(2.0), label="replicate")
    replicates = weighted_estimator(statistic, mechanism, event, pf.Bounds(-6.0, 4.0))
    block_values = statistic.evaluate_batch(x, blocks_index)[:, 0]
    rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(blocks_index.shape[0])]
    roots = block_roots(
        replicates, x[blocks_index], block_values, n=n, R=200, tau_n=math.sqrt(n), block_rngs=rngs, shared_rng=None
    )
    return nested_coverages(block_histograms(roots, -8.0, 16.0 / 256, 256), "symmetric")


@pytest.mark.parametrize("kind", ["mean", "quantile-selection"])
def test_block_count_query_has_sensitivity_one(kind: str) -> None:
    """Brute force over replace-one neighbours: with the partition and every random draw held fixed, a
    changed record moves the coverages of its own block only, so each count ``M_k`` moves by at most 1.

    Records are replaced by the bounds, the centre and a far value, at every position (including a
    left-over record that is in no block). A method that let one block's data influence another block's
    randomness or roots would fail the "one block" check.
    """
    n, s = 45, 4
    x = _data(n, 9)
    blocks_index = draw(pf.registry.create("sampler", "partition", {"s": s}), n, np.random.default_rng(1)).matrix()
    base = _coverages_for(x, blocks_index, kind, 2)
    moved = 0
    for i in range(n):
        for value in (-6.0, 4.0, 0.0, 3.3):
            y = x.copy()
            y[i] = value
            cov = _coverages_for(y, blocks_index, kind, 2)
            changed = np.flatnonzero(np.any(cov != base, axis=0))
            assert changed.size <= 1
            moved += changed.size
            for t in (0.5, 0.9, 0.95):
                assert np.max(np.abs(block_count(cov, t) - block_count(base, t))) <= 1
    assert moved > 100  # most replacements of a record in a block do change that block's coverages


# ---------------------------------------------------------------------------------------------------------
# Little bootstraps


def test_weighted_exponential_pieces_match_the_exponential_mechanism() -> None:
    """With unit weights the weighted pieces are exactly those of mechanisms/exponential.py; duplicated
    records (weight 2) equal the unweighted pieces of the expanded multiset (zero-length pieces dropped)."""
    v = np.sort(np.random.default_rng(10).uniform(-1, 1, 11))
    edges, logw = weighted_quantile_log_weights(v, np.cumsum(np.ones((1, 11)), axis=1), 0.5, 2.0, -2.0, 2.0)
    ref_edges, ref_logw = quantile_log_weights(v[np.newaxis, :], 0.5, 2.0, -2.0, 2.0)
    assert np.allclose(edges, ref_edges[0])
    assert np.allclose(logw, ref_logw)
    weights = np.array([[2, 0, 1, 1, 0, 3, 1, 0, 1, 2, 1]], dtype=float)
    cumulative = np.cumsum(weights, axis=1)
    _, logw = weighted_quantile_log_weights(v, cumulative, 0.5, 2.0, -2.0, 2.0)
    below = np.concatenate([[0.0], cumulative[0]])  # records below each weighted piece
    mass = {int(c): float(np.exp(logw[0][below == c]).sum()) for c in np.unique(below)}
    expanded = np.repeat(v, weights[0].astype(int))[np.newaxis, :]
    _, ref = quantile_log_weights(expanded, 0.5, 2.0, -2.0, 2.0)
    ref_mass = {j: float(np.exp(w)) for j, w in enumerate(ref[0]) if np.isfinite(w)}
    assert mass.keys() == ref_mass.keys()
    assert all(mass[j] == pytest.approx(ref_mass[j], rel=1e-12) for j in mass)


def _select_weighted_reference(
    v: np.ndarray, weights: np.ndarray, q: float, epsilon: float, rng: np.random.Generator, cut: float = -np.inf
) -> np.ndarray:
    """The weighted selection in plain numpy: pieces, exp(log-weight - max) (0 below ``cut``), inversion of
    the running sum."""
    edges, log_weight = weighted_quantile_log_weights(v, np.cumsum(weights, axis=1), q, epsilon, *BOUNDS)
    shifted = log_weight - log_weight.max(axis=1, keepdims=True)
    mass = np.cumsum(np.where(shifted >= cut, np.exp(shifted), 0.0), axis=1)
    pick = rng.random(weights.shape[0]) * mass[:, -1]
    piece = np.minimum(np.count_nonzero(mass <= pick[:, np.newaxis], axis=1), v.size)
    lengths = np.diff(edges)
    return edges[piece] + lengths[piece] * rng.random(weights.shape[0])


def test_compiled_selection_keeps_every_piece_above_the_cut() -> None:
    """Uniforms within e^-30 of 0 and 1 land in pieces of relative weight down to about e^-59: the compiled
    loop's window must hold every piece above the cut (a window cut at -20 instead of -60 fails here)."""
    rng = np.random.default_rng(12)
    v = np.sort(rng.normal(0.0, 1.0, 60))
    weights = rng.multinomial(600, np.full(v.size, 1 / v.size), size=400).astype(np.float64)
    tails = np.array([1e-30, 1e-25, 1e-20, 1e-15, 1e-10, 0.5, 1 - 1e-10, 1 - 1e-13, 1 - 2.0**-53])
    pick = np.resize(tails, 400)
    within = np.full(400, 0.5)
    epsilon, q = 1.0, 0.5
    edges = np.concatenate([[BOUNDS[0]], np.clip(v, *BOUNDS), [BOUNDS[1]]])
    got = np.empty(400)
    with np.errstate(divide="ignore"):
        log_lengths = np.log(np.diff(edges))
    compiled_selection.weighted_quantile_select(
        edges, log_lengths, weights, weights.sum(axis=1), q, epsilon / 2, pick, within, got
    )
    _, log_weight = weighted_quantile_log_weights(v, np.cumsum(weights, axis=1), q, epsilon, *BOUNDS)
    shifted = log_weight - log_weight.max(axis=1, keepdims=True)
    mass = np.cumsum(np.where(shifted >= NEGLIGIBLE, np.exp(shifted), 0.0), axis=1)
    piece = np.minimum(np.count_nonzero(mass <= (pick * mass[:, -1])[:, np.newaxis], axis=1), v.size)
    np.testing.assert_array_equal(got, edges[piece] + np.diff(edges)[piece] * within)
    assert np.min(shifted[np.arange(400), piece]) < -40  # the tails did reach far-away pieces


@pytest.mark.parametrize(
    ("q", "epsilon", "total"),
    [(0.5, 0.5, 20_000), (0.9, 4.0, 500), (0.5, 1e-3, 100), (0.02, 2.0, 5000), (0.999, 0.05, 300)],
)
def test_compiled_weighted_selection_matches_numpy_reference(q: float, epsilon: float, total: int) -> None:
    """The compiled selection against the numpy reference on the same uniforms: the same point in every
    resample, bit for bit (the same operations in the same order), both with the reference cutting the same
    negligible pieces and with every piece's exp (the cut pieces weigh under 2^-55 of the total, so no uniform
    here lands differently). Ties in values (zero-length pieces) and values outside the bounds are included."""
    rng = np.random.default_rng(11)
    v = np.sort(np.concatenate([rng.normal(0.0, 3.0, 95), [1.5, 1.5, 1.5, -9.0, 7.0]]))
    weights = rng.multinomial(total, np.full(v.size, 1 / v.size), size=3000).astype(np.float64)
    mechanism = pf.registry.create("mechanism", "exponential", {})
    statistic = pf.registry.create("statistic", "quantile", {"q": q})
    event = mechanism.plan_selection(statistic, pf.PureDP(epsilon), label="replicate")
    got = mechanism.select_weighted(statistic, v, weights, pf.Bounds(*BOUNDS), event, np.random.default_rng(5))
    cut = _select_weighted_reference(v, weights, q, epsilon, np.random.default_rng(5), cut=NEGLIGIBLE)
    np.testing.assert_array_equal(got, cut)
    full = _select_weighted_reference(v, weights, q, epsilon, np.random.default_rng(5))
    np.testing.assert_array_equal(got, full)
    assert np.all((got >= BOUNDS[0]) & (got <= BOUNDS[1]))


def test_mean_roots_have_the_little_bootstrap_spread() -> None:
    """Root of a weighted mean: ``-sum W_i (x_i - xbar) / sqrt(n) - sqrt(n) L``, W ~ Mult(n; 1/b).

    Var = var_pop(block) + n * 2 scale^2 (Laplace). 4000 replicates: the variance estimate has relative
    SE ~ sqrt(2 / 4000) ~ 2.2%; 5 SE = 11%. Shared and independent weights give the same law.
    """
    n, b = 2000, 40
    block = _data(b, 11)[np.newaxis, :]
    mechanism = pf.registry.create("mechanism", "laplace")
    event = mechanism.plan(10 / n, pf.PureDP(1.0), label="replicate")
    replicates = weighted_estimator(pf.registry.create("statistic", "mean"), mechanism, event, pf.Bounds(-6.0, 4.0))
    expected = block.var() + n * 2 * event.noise_scale**2
    for shared in (None, np.random.default_rng(12)):
        roots = block_roots(
            replicates,
            block,
            block.mean(axis=1),
            n=n,
            R=4000,
            tau_n=math.sqrt(n),
            block_rngs=[np.random.default_rng(13)],
            shared_rng=shared,
        )
        assert roots.shape == (1, 4000)
        assert roots.mean() == pytest.approx(0.0, abs=5 * math.sqrt(expected / 4000))
        assert roots.var() == pytest.approx(expected, rel=5 * math.sqrt(2 / 4000))


def test_median_with_an_additive_mechanism() -> None:
    """Laplace on the weighted order statistic: the median's global sensitivity is the whole width, so the
    noise is (high - low) / eps_param whatever n is (which is why the exponential mechanism is the default)."""
    n = 1000
    res = pf.confidence_interval(
        _data(n, 16),
        "median",
        method="blbquant",
        min_block=0,
        budget=pf.PureDP(8.0),
        bounds=BOUNDS,
        mechanism="laplace",
        rng=2,
    )
    assert res.parameters["mechanism"] == "laplace"
    assert res.privacy.events[0].noise_scale == pytest.approx(10 / 4.0)
    assert res.low < res.center < res.high


def test_weights_are_independent_unless_shared_is_asked_for() -> None:
    small = pf.confidence_interval(
        _data(1000, 14), "mean", method="blbquant", min_block=0, budget=pf.PureDP(8.0), bounds=BOUNDS
    )
    assert small.parameters["weights"] == "independent"
    large = pf.confidence_interval(  # R n = 5e7 > 2^25: "auto" used to share weights here
        _data(50_000, 14), "mean", method="blbquant", budget=pf.PureDP(8.0), bounds=BOUNDS, weights="auto", R=1000
    )
    assert large.parameters["weights"] == "independent"
    forced = pf.confidence_interval(
        _data(1000, 14), "mean", method="blbquant", min_block=0, budget=pf.PureDP(8.0), bounds=BOUNDS, weights="shared"
    )
    assert forced.parameters["weights"] == "shared"


# ---------------------------------------------------------------------------------------------------------
# Coverage on the blbquant-grid setting


def _coverage(statistic: str, n: int, trials: int, seed: int, truth: float, **options: Any) -> tuple[float, float]:
    hits, widths = 0, []
    for s in np.random.SeedSequence(seed).spawn(trials):
        data_seed, run_seed = s.spawn(2)
        res = pf.confidence_interval(
            _data(n, data_seed),
            statistic,
            method="blbquant",
            min_block=0,
            budget=pf.PureDP(8.0),
            bounds=BOUNDS,
            confidence=0.95,
            rng=run_seed,
            **options,
        )
        hits += res.contains(truth)
        widths.append(res.width)
    return hits / trials, float(np.mean(widths))


def test_coverage_blbquant_grid_mean() -> None:
    """Issue acceptance: mean, n = 1000, eps = 8, nominal 0.95, 300 trials: within 3 SE (SE = 0.0126)."""
    coverage, _ = _coverage("mean", 1000, 300, 15, TRUE_MEAN)
    assert abs(coverage - 0.95) <= 3 * math.sqrt(0.95 * 0.05 / 300)


@pytest.mark.slow
def test_coverage_blbquant_grid_median_and_equal_tailed() -> None:
    """Median (exponential mechanism inside) and the equal-tailed option on the same setting, 300 trials each."""
    se = math.sqrt(0.95 * 0.05 / 300)
    median_truth = float(TRUNC.median())
    assert median_truth == pytest.approx(-0.0536489, abs=1e-6)
    coverage, width = _coverage("median", 1000, 300, 16, median_truth)
    print(f"blbquant median: coverage {coverage:.3f}, width {width:.4f}")  # reported in the closing note (-s)
    assert abs(coverage - 0.95) <= 3 * se
    coverage, width = _coverage("mean", 1000, 300, 17, TRUE_MEAN, sets="equal-tailed")
    print(f"blbquant mean, equal-tailed: coverage {coverage:.3f}, width {width:.4f}")
    assert abs(coverage - 0.95) <= 3 * se
