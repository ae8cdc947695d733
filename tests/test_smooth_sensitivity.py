"""Smooth sensitivities (carried as ln SS) against brute force, and their exact log-smoothness (algorithms.md 3.2).

For a dataset x of k grid values we enumerate every dataset on the grid, compute its local sensitivity by
trying every replacement, and take ``A_bf^(j)(x) = max {LS(y) : Hamming(x, y) <= j}``. Order statistics: the
NRS bound must EQUAL the brute force for every j (the grid holds the data and the bounds, where the maxima
are attained). Product U-statistic: the closed-form bound must be >= the brute force for every j (it is an
upper bound by construction) and tight at j = 0 for data at the bounds.

The order-statistic search (a direct pass over short spans, then a divide and conquer over the pairs
``(l, u)``) must equal a brute-force maximum over all pairs on the same log grid, on tied and continuous
rows; ``|ln SS(x) - ln SS(x')| <= beta`` must hold for the floats at every neighbour, including n = 100 000
records of 0/1 data where ``e^{-j beta}`` underflows.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, ClassVar

import numpy as np
import pytest

import privframe as pf
import privframe.plugin as pp
import privframe_std.statistics.order as order_module
from privframe.resampling.blocks import draw
from privframe_std.statistics.order import (
    Median,
    Quantile,
    order_log_grid,
    order_log_smooth_sensitivity,
    order_statistic_log_smooth,
)
from privframe_std.statistics.ustat import (
    UStatistic,
    exact_row_sums,
    product_log_smooth_sensitivity,
    product_log_terms,
)

GRID = np.arange(0.0, 7.0)  # values 0..6, bounds (0, 6)
LOW, HIGH = 0.0, 6.0


def _all_datasets(k: int, grid: np.ndarray) -> np.ndarray:
    return np.array(list(itertools.product(grid, repeat=k)), dtype=np.float64)


def _local_sensitivity(f, datasets: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """LS(y) = max over one replaced record (any grid value) of |f(y) - f(y')|, for every row y."""
    base = f(datasets)
    best = np.zeros(datasets.shape[0])
    for i in range(datasets.shape[1]):
        for v in grid:
            other = datasets.copy()
            other[:, i] = v
            np.maximum(best, np.abs(f(other) - base), out=best)
    return best


def _brute_a(x: np.ndarray, datasets: np.ndarray, ls: np.ndarray, j: int) -> float:
    distance = np.count_nonzero(datasets != x, axis=1)
    return float(ls[distance <= j].max())


def _order_stat(rank: int):
    def f(rows: np.ndarray) -> np.ndarray:
        return np.sort(rows, axis=1)[:, rank - 1]

    return f


def _formula_a(sorted_x: np.ndarray, rank: int, j: int, low: float, high: float) -> float:
    """A^(j) straight from the definition, with the padded order statistics."""
    k = sorted_x.shape[0]

    def at(i: int) -> float:
        if i < 1:
            return low
        if i > k:
            return high
        return float(sorted_x[i - 1])

    return max(at(rank + t) - at(rank + t - j - 1) for t in range(j + 2))


@pytest.mark.parametrize(("k", "q"), [(4, 0.5), (5, 0.5), (5, 0.2), (5, 0.8), (4, 0.75)])
def test_order_statistic_a_j_equals_brute_force(k: int, q: float) -> None:
    stat = Quantile(q=q)
    rank = stat.rank(k)
    datasets = _all_datasets(k, GRID)
    ls = _local_sensitivity(_order_stat(rank), datasets, GRID)
    rng = np.random.default_rng(k * 100 + int(q * 10))
    for x in rng.choice(GRID, size=(6, k)):
        sorted_x = np.sort(x)
        for j in range(k + 2):
            assert _formula_a(sorted_x, rank, j, LOW, HIGH) == _brute_a(x, datasets, ls, j)


@pytest.mark.parametrize("beta", [0.05, 0.3, 1.0, 3.0])
def test_order_smooth_sensitivity_equals_brute_force(beta: float) -> None:
    k = 5
    median = Median()
    rank = median.rank(k)
    datasets = _all_datasets(k, GRID)
    ls = _local_sensitivity(_order_stat(rank), datasets, GRID)
    rng = np.random.default_rng(7)
    bounds = pf.Bounds(LOW, HIGH)
    for x in rng.choice(GRID, size=(8, k)):
        brute = max(math.exp(-j * beta) * _brute_a(x, datasets, ls, j) for j in range(k + 2))
        assert math.exp(median.log_smooth_sensitivity(x, beta, bounds)) == pytest.approx(brute, rel=1e-12)


def test_order_smooth_sensitivity_batch_matches_rows() -> None:
    rng = np.random.default_rng(3)
    x = rng.uniform(-2, 3, size=200)
    index = rng.integers(0, 200, size=(40, 31))
    bounds = pf.Bounds(-2.0, 3.0)
    for stat in (Median(), Quantile(q=0.1), Quantile(q=0.9)):
        values, log_smooth = stat.evaluate_log_smooth_batch(x, index, 0.2, bounds)
        assert values.shape == (40, 1)
        np.testing.assert_array_equal(values, stat.evaluate_batch(x, index))
        expected = [stat.log_smooth_sensitivity(x[row], 0.2, bounds) for row in index]
        np.testing.assert_array_equal(log_smooth, expected)


def test_order_smooth_sensitivity_is_log_smooth_on_neighbours() -> None:
    """|ln SS(x) - ln SS(x')| <= beta for every neighbour on the grid (the property PTR relies on)."""
    beta = 0.4
    rng = np.random.default_rng(11)
    for x in rng.choice(GRID, size=(20, 6)):
        base = order_log_smooth_sensitivity(np.sort(x)[None, :], 3, beta, LOW, HIGH)[0]
        for i, v in itertools.product(range(6), GRID):
            y = x.copy()
            y[i] = v
            other = order_log_smooth_sensitivity(np.sort(y)[None, :], 3, beta, LOW, HIGH)[0]
            assert abs(base - other) <= beta


@pytest.mark.parametrize("window", [64, 0])
@pytest.mark.parametrize(("k", "rank"), [(5, 3), (5, 1), (4, 4)])
def test_order_log_smooth_on_every_grid_dataset_and_neighbour(k: int, rank: int, window: int) -> None:
    """Every dataset of k values on the grid, every replace-one neighbour: ln SS covers the local sensitivity
    and moves by at most beta, exactly (no tolerance). ``window=0`` sends every row through the divide and
    conquer, with its rounding loss held back from beta."""
    datasets = _all_datasets(k, GRID)
    values = np.sort(datasets, axis=1)[:, rank - 1]
    for beta in (0.05, 0.4, 3.0):
        base = order_log_smooth_sensitivity(np.sort(datasets, axis=1), rank, beta, LOW, HIGH, window=window)
        assert np.all(np.isfinite(base))
        for i, v in itertools.product(range(k), GRID):
            neighbour = datasets.copy()
            neighbour[:, i] = v
            rows = np.sort(neighbour, axis=1)
            other = order_log_smooth_sensitivity(rows, rank, beta, LOW, HIGH, window=window)
            assert np.all(np.abs(base - other) <= beta)
            assert np.all(np.abs(rows[:, rank - 1] - values) <= np.exp(base))


def _pairs_brute_force(row: np.ndarray, rank: int, beta: float, low: float, high: float, window: int) -> tuple:
    """Max over all pairs l <= rank <= u, l < u, of the grid term, and of the plain float term."""
    k = row.size
    grid = order_log_grid(k, beta, low, high, window)
    padded = np.concatenate([[low], row, [high]])
    lo = np.arange(rank + 1)[:, None]
    hi = np.arange(rank, k + 2)[None, :]
    gaps = padded[hi] - padded[lo]
    with np.errstate(divide="ignore"):
        logs = np.log(gaps)
    on_grid = np.where(hi > lo, grid.quantize(logs) - grid.decay(hi - lo - 1), -np.inf)
    plain = np.where(hi > lo, logs - (hi - lo - 1) * beta, -np.inf)
    return float(on_grid.max()), float(plain.max()), grid


def _random_row(rng: np.random.Generator, kind: str, k: int) -> np.ndarray:
    if kind == "ties":
        return rng.integers(0, 3, size=k).astype(np.float64)
    if kind == "skewed ties":
        return rng.choice([0.0, 0.5, 1.0, 2.0], size=k, p=[0.6, 0.1, 0.1, 0.2])
    if kind == "rounded":
        return np.round(rng.uniform(-1.0, 3.0, size=k), 1)
    return np.clip(rng.normal(size=k), -3.0, 3.0)


@pytest.mark.parametrize("kind", ["ties", "skewed ties", "rounded", "continuous"])
@pytest.mark.parametrize("beta", [1e-6, 1e-3, 0.05, 5.0])
def test_order_search_equals_brute_force_over_all_pairs(kind: str, beta: float) -> None:
    """The search (direct pass, tie-block pairs, divide and conquer) equals the maximum over all pairs on the
    same grid, and is within the grid's documented distance of the plain floating-point maximum."""
    rng = np.random.default_rng(list(f"{kind} {beta}".encode()))
    for trial in range(12):
        k = int(rng.integers(1, 300)) if trial else 300
        row = np.sort(_random_row(rng, kind, k))
        rank = int(rng.integers(1, k + 1))
        for window in (64, 0):
            got = float(order_log_smooth_sensitivity(row[None, :], rank, beta, -3.0, 3.0, window=window)[0])
            on_grid, plain, grid = _pairs_brute_force(row, rank, beta, -3.0, 3.0, window)
            assert got == on_grid
            assert -1e-12 <= got - plain <= grid.h + (k + 1) * (beta - grid.beta_step) + 1e-12


def test_order_search_batch_does_not_depend_on_its_rows() -> None:
    """Rows that need the divide and conquer, batched with rows of other widths, get their own results."""
    rng = np.random.default_rng(8)
    rows = np.sort(np.concatenate([rng.integers(0, 2, size=(6, 250)), rng.normal(size=(6, 250))]), axis=1)
    rows[6:] = np.clip(rows[6:], -3.0, 3.0)
    for window in (64, 0):
        batch = order_log_smooth_sensitivity(rows, 125, 1e-3, -3.0, 3.0, window=window)
        alone = [order_log_smooth_sensitivity(row[None, :], 125, 1e-3, -3.0, 3.0, window=window)[0] for row in rows]
        np.testing.assert_array_equal(batch, alone)


@pytest.mark.parametrize(
    ("kind", "beta", "window", "forced"),
    [
        ("continuous", 0.8, 64, False),  # every row settles inside the window
        ("continuous", 1e-3, 64, True),  # small beta: spans beyond the window, every row falls back
        ("continuous", 0.05, 4, True),  # a short window: some rows settle, some fall back
        ("ties", 0.05, 64, True),  # tied rows leave the direct pass open
        ("skewed ties", 0.8, 16, True),
        ("rounded", 0.3, 64, False),
    ],
)
def test_partial_sort_path_is_bit_identical_to_the_full_sort(kind: str, beta: float, window: int, forced: bool) -> None:
    """The window partial sort (``order_statistic_log_smooth``) gives exactly the values and ln SS of a full sort
    of every row, also where rows need values beyond the window and take the exact fallback (a full sort)."""
    rng = np.random.default_rng(list(f"{kind} {beta} {window}".encode()))
    k = 3000
    rows = np.stack([_random_row(rng, kind, k) for _ in range(40)])
    for rank in (1, 7, k // 3, k // 2, k - 70, k):
        full = np.sort(rows, axis=1)
        expected = order_log_smooth_sensitivity(full, rank, beta, -3.0, 3.0, window=window)
        stats: dict[str, int] = {}
        values, got = order_statistic_log_smooth(rows.copy(), rank, beta, -3.0, 3.0, window=window, stats=stats)
        np.testing.assert_array_equal(values, full[:, rank - 1])
        np.testing.assert_array_equal(got, expected)
        if forced and rank == k // 2:
            assert stats["open_rows"] > 0  # the fallback really ran


def test_partial_sort_path_fallback_rows_are_the_full_sort() -> None:
    """A batch mixing rows that settle in the window and rows that fall back gives each row its own full-sort
    result (the fallback sorts exactly the open rows)."""
    rng = np.random.default_rng(15)
    settled = np.clip(rng.normal(size=(5, 2000)), -3.0, 3.0)
    tied = (rng.uniform(size=(5, 2000)) < 0.1).astype(np.float64)  # the median deep in a block of zeros
    rows = np.concatenate([settled, tied])[rng.permutation(10)]
    stats: dict[str, int] = {}
    values, got = order_statistic_log_smooth(rows.copy(), 1000, 0.5, -3.0, 3.0, stats=stats)
    assert 0 < stats["open_rows"] < 10
    alone = [order_log_smooth_sensitivity(np.sort(row)[None, :], 1000, 0.5, -3.0, 3.0)[0] for row in rows]
    np.testing.assert_array_equal(got, alone)
    np.testing.assert_array_equal(values, np.sort(rows, axis=1)[:, 999])


N_LARGE = 100_000


def _zero_one(share_of_ones: float, seed: int) -> np.ndarray:
    return (np.random.default_rng(seed).uniform(size=N_LARGE) < share_of_ones).astype(np.float64)


@pytest.mark.parametrize("beta", [1e-4, 1e-3, 1e-2, 0.5])
def test_order_log_smooth_on_tied_zero_one_data_at_n_100000(beta: float) -> None:
    """0/1 data with the median inside a block of ties. On bounds (0, 1) the best pair is the nearest 0-1 step,
    so ln SS = -(span) beta_step exactly; e^{-j beta} underflows (beta = 0.5: ln SS ~ -10^4) where the linear
    search gave 0 or a subnormal. Each neighbour (a 0 replaced by a 1, a 1 by a 0, records at the median's value
    and away from it, and replacements by the bounds and by an interior value) moves ln SS by at most beta."""
    median = Median()
    r = median.rank(N_LARGE)
    for share, bounds in ((0.499, pf.Bounds(0.0, 1.0)), (0.3, pf.Bounds(0.0, 1.0)), (0.3, pf.Bounds(-1.0, 2.0))):
        x = _zero_one(share, seed=int(share * 1000))
        zeros = N_LARGE - int(x.sum())
        assert zeros > r  # the median is 0, inside the block of zeros
        base = median.log_smooth_sensitivity(x, beta, bounds)
        assert math.isfinite(base)
        if bounds.low == 0.0:
            grid = order_log_grid(N_LARGE, beta, 0.0, 1.0)
            assert base == -(zeros - r) * grid.beta_step  # the pair (r, first one): gap 1, span zeros - r
            assert base == pytest.approx(-(zeros - r) * beta, rel=1e-6)
        for old, new in ((0.0, 1.0), (1.0, 0.0), (0.0, bounds.low), (1.0, bounds.high), (0.0, 0.5), (1.0, 0.5)):
            y = x.copy()
            y[np.flatnonzero(x == old)[0]] = new
            other = median.log_smooth_sensitivity(y, beta, bounds)
            assert math.isfinite(other)
            assert abs(base - other) <= beta * (1 + 1e-12)


def test_order_search_cost_does_not_grow_with_ties() -> None:
    """At n = 100 000 the full-data search is O(n log n) whatever the data: the direct pass stops at span 64,
    at most the one row goes to the divide and conquer, whose depth is at most ceil(log2(n + 2)) and which
    evaluates at most 2 (n + 2) matrix entries per level. Tied 0/1 data with the median deep in a block of ties
    (the nearest step 20 000 ranks away: the old linear search needed ~2 * 10^8 evaluations) and continuous
    data at a small beta (the best span is ~10^3) both stay within that budget."""
    median = Median()
    r = median.rank(N_LARGE)
    levels = math.ceil(math.log2(N_LARGE + 2))
    budget = 2 * (N_LARGE + 2) * levels
    normal = np.clip(np.random.default_rng(1).normal(size=N_LARGE), -4.0, 4.0)
    cases = [(_zero_one(0.3, seed=300), 0.0, 1.0), (_zero_one(0.499, seed=499), 0.0, 1.0), (normal, -4.0, 4.0)]
    for beta in (1e-4, 1e-2):
        for x, low, high in cases:
            stats: dict[str, int] = {}
            value = order_log_smooth_sensitivity(np.sort(x)[None, :], r, beta, low, high, stats=stats)[0]
            assert math.isfinite(value)
            assert stats["window_spans"] <= 65
            assert stats["open_rows"] <= 1
            assert stats["dc_levels"] <= levels
            assert stats["dc_cells"] <= budget


def test_beta_below_the_grid_resolution_is_refused() -> None:
    with pytest.raises(pf.ConfigError, match=r"^beta"):
        order_log_smooth_sensitivity(np.zeros((1, 1000)), 500, 1e-16, 0.0, 1.0)


def test_non_finite_log_smooth_sensitivity_gives_an_uninformative_release_not_an_error() -> None:
    """A plugin's ln SS that is not finite (SS = 0, NaN, an overflow) on some data must not raise there (the
    error would be a release): NaN becomes +inf, and ptr-gdp turns an infinite or zero bound into a NaN
    release, which the method reports as the widest interval."""

    class Broken:
        name: ClassVar[str] = "broken-smooth"

        def evaluate_batch(self, x: np.ndarray, index: np.ndarray) -> np.ndarray:
            return x[index].mean(axis=1, keepdims=True)

        def sensitivity(self, k: int, bounds: Any) -> float:
            return 1.0 / k

        def log_smooth_sensitivity(self, x: np.ndarray, beta: float, bounds: Any) -> float:
            return math.nan

        def evaluate_log_smooth_batch(
            self, x: np.ndarray, index: np.ndarray, beta: float, bounds: Any
        ) -> tuple[np.ndarray, np.ndarray]:
            return self.evaluate_batch(x, index), np.full(index.shape[0], np.nan)

    x = np.full(50, 0.123456789)
    ctx = pp.RunContext(method="probe", statistic=Broken(), data=x, bounds=pf.Bounds(0.0, 1.0), confidence=0.9)
    sampler = pf.registry.create("sampler", "wor", m=10, B=4)
    resamples = draw(sampler, 50, np.random.default_rng(0))
    smooth = ctx.evaluate_smooth(resamples, 1, 0.1)
    assert smooth.log_full == math.inf
    assert smooth.values.shape == (4, 1)
    assert np.all(smooth.log_resamples == math.inf)
    ptr = pf.registry.create("mechanism", "ptr-gdp")
    event = ptr.plan_smooth(0.1, pf.GDP(1.0, delta=1e-6), label="center")
    out = ptr.release_smooth(np.array([0.123456789]), math.inf, event, np.random.default_rng(1))
    assert math.isnan(float(out.value[0]))
    # ln s = -inf claims a smooth sensitivity of exactly zero (the statistic is constant on every dataset):
    # the value itself is the release, as for any bound below a quarter of the doubles' spacing.
    out = ptr.release_smooth(np.array([0.123456789]), -math.inf, event, np.random.default_rng(1))
    assert float(out.value[0]) == 0.123456789
    assert out.noise_scale == 0.0


UGRID = np.array([-0.5, -0.25, 0.0, 0.25, 0.5])


def _u_product(rows: np.ndarray) -> np.ndarray:
    k = rows.shape[1]
    total = rows.sum(axis=1)
    return (total**2 - (rows**2).sum(axis=1)) / (k * (k - 1))


def _u_formula_a(total: float, k: int, c: float, j: int) -> float:
    return min(4 * c * (abs(total) + (2 * j + 1) * c) / (k * (k - 1)), 4 * c * c / k)


@pytest.mark.parametrize("k", [3, 4, 5])
def test_product_u_bound_dominates_brute_force(k: int) -> None:
    c = 0.5
    datasets = _all_datasets(k, UGRID)
    ls = _local_sensitivity(_u_product, datasets, UGRID)
    rng = np.random.default_rng(k)
    tight_at_zero = False
    for x in rng.choice(UGRID, size=(12, k)):
        for j in range(k + 1):
            brute = _brute_a(x, datasets, ls, j)
            formula = _u_formula_a(float(x.sum()), k, c, j)
            assert formula >= brute - 1e-15
            tight_at_zero |= j == 0 and math.isclose(formula, brute)
    # Data at the bounds attain the bound: the formula is not loose by construction.
    x = np.full(k, c)
    brute0 = _brute_a(x, datasets, ls, 0)
    assert _u_formula_a(float(x.sum()), k, c, 0) == pytest.approx(brute0)


@pytest.mark.parametrize("beta", [0.01, 0.1, 0.5, 2.0])
def test_product_smooth_closed_form_equals_enumeration(beta: float) -> None:
    """The O(1) maximisation over j equals enumerating every j up to where the bound is capped: exactly on the
    log grid, and within the grid's documented distance of the plain floating-point maximum."""
    rng = np.random.default_rng(5)
    for k in (5, 50, 1000):
        totals = rng.uniform(-k / 2, k / 2, size=50)
        totals[:3] = [0.0, k / 2, -k / 4]
        closed = product_log_smooth_sensitivity(totals, k, 0.5, beta)
        every_j = np.arange(4 * k + 10, dtype=np.float64)
        np.testing.assert_array_equal(closed, product_log_terms(totals, k, 0.5, beta, every_j).max(axis=1))
        for total, value in zip(totals, closed, strict=True):
            enumerated = max(-j * beta + math.log(_u_formula_a(total, k, 0.5, j)) for j in range(4 * k + 10))
            assert value == pytest.approx(enumerated, abs=1e-9)
            assert value >= enumerated - 1e-13


def test_product_u_smooth_batch_matches_rows() -> None:
    rng = np.random.default_rng(2)
    x = rng.uniform(-0.5, 0.5, size=300)
    index = rng.integers(0, 300, size=(20, 50))
    stat = UStatistic(kernel="product", degenerate=True)
    bounds = pf.Bounds(-0.5, 0.5)
    values, log_smooth = stat.evaluate_log_smooth_batch(x, index, 0.3, bounds)
    np.testing.assert_allclose(values, stat.evaluate_batch(x, index), rtol=1e-12)
    expected = [stat.log_smooth_sensitivity(x[row], 0.3, bounds) for row in index]
    np.testing.assert_allclose(log_smooth, expected, rtol=1e-12)
    # the O(k) value equals the pairwise definition
    row = x[index[0]]
    pairwise = (np.outer(row, row).sum() - (row**2).sum()) / (50 * 49)
    assert values[0, 0] == pytest.approx(pairwise, rel=1e-10)


def test_exact_row_sums_error_bound() -> None:
    """The split sum is within its stated bound of the exact (math.fsum) sum, a bound ~ u k c."""
    rng = np.random.default_rng(6)
    rows = rng.uniform(-0.5, 0.5, size=(30, 5000))
    total, error = exact_row_sums(rows, 0.5)
    exact = np.array([math.fsum(row) for row in rows])
    assert np.all(np.abs(total - exact) <= error)
    assert error < 1e-11


@pytest.mark.parametrize("beta", [1e-6, 1e-4, 1e-2, 0.5, 5.0])
def test_product_u_log_smooth_at_n_100000(beta: float) -> None:
    """Records at -c and c, n = 100 000: moving one record across the whole range moves |S| by exactly 2c, the
    worst case, where the naive ``ln A^(j) - j beta`` exceeds beta by an ulp. ln SS is finite and moves by at
    most beta for these neighbours and for interior replacements."""
    stat = UStatistic(kernel="product", degenerate=True)
    for share, bounds in ((0.5, pf.Bounds(-0.5, 0.5)), (0.9, pf.Bounds(-0.5, 0.5)), (0.3, pf.Bounds(-1.0, 0.25))):
        x = np.where(np.random.default_rng(int(share * 10)).uniform(size=N_LARGE) < share, bounds.high, bounds.low)
        base = stat.log_smooth_sensitivity(x, beta, bounds)
        assert math.isfinite(base)
        for old, new in ((bounds.low, bounds.high), (bounds.high, bounds.low), (bounds.low, 0.1), (bounds.high, 0.0)):
            y = x.copy()
            y[np.flatnonzero(x == old)[0]] = new
            other = stat.log_smooth_sensitivity(y, beta, bounds)
            assert math.isfinite(other)
            assert abs(base - other) <= beta * (1 + 1e-12)


def test_general_kernel_matches_pairwise_definition_and_product() -> None:
    rng = np.random.default_rng(4)
    x = rng.uniform(-0.5, 0.5, size=120)
    index = rng.integers(0, 120, size=(9, 17))
    general = UStatistic(kernel=np.multiply, kernel_range=(-0.25, 0.25))
    product = UStatistic(kernel="product")
    np.testing.assert_allclose(general.evaluate_batch(x, index), product.evaluate_batch(x, index), rtol=1e-10)
    # a kernel whose range is clipped: |x - y| on [-0.5, 0.5] clipped to [0, 0.5]
    clipped = UStatistic(kernel=lambda a, b: np.abs(a - b), kernel_range=(0.0, 0.5))
    row = x[index[0]]
    pairs = np.minimum(np.abs(row[:, None] - row[None, :]), 0.5)
    assert clipped.evaluate_batch(x, index[:1])[0, 0] == pytest.approx(pairs.sum() / (17 * 16))
    assert clipped.sensitivity(17, pf.Bounds(-0.5, 0.5)) == pytest.approx(2 * 0.5 / 17)


def test_product_u_global_sensitivity_by_search() -> None:
    """4 c^2 / k is attained (x_i = -c -> c with the rest at c) and never exceeded on the grid."""
    k, c = 4, 0.5
    stat = UStatistic(kernel="product")
    datasets = _all_datasets(k, UGRID)
    ls = _local_sensitivity(_u_product, datasets, UGRID)
    assert ls.max() == pytest.approx(stat.sensitivity(k, pf.Bounds(-c, c)))


def test_rates_and_options() -> None:
    assert UStatistic(degenerate=True).rate(100) == 100
    assert UStatistic().rate(100) == 10
    with pytest.raises(pf.ConfigError, match="kernel_range"):
        UStatistic(kernel=np.multiply)
    with pytest.raises(pf.ConfigError, match=r"^kernel"):
        UStatistic(kernel="sum")
    with pytest.raises(pf.ConfigError, match=r"^q"):
        Quantile(q=1.0)
    assert Median().rank(10) == 5
    assert Median().rank(11) == 6
    assert Quantile(q=0.9).rank(10) == 9


@pytest.mark.parametrize("hinted", [True, False], ids=["hinted", "unhinted"])
@pytest.mark.parametrize("kind", ["normal", "ties", "skewed ties", "rounded", "fine ties"])
@pytest.mark.parametrize("beta", [0.02, 0.085])
def test_open_rows_sorted_only_within_their_reach_are_the_full_sort(
    kind: str, beta: float, hinted: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At small beta the direct pass leaves rows open and their search reads only ranks within a reach their
    best term bounds; sorting that window alone (``_sorted_where_read``) gives the full sort's values and
    ln SS bit for bit, at every rank, on tied data whose tie blocks straddle the window's edges too. Unhinted,
    the first sort covers only the direct pass's window and the open rows are partitioned further."""
    if not hinted:
        monkeypatch.setattr(order_module, "_reach_hint", lambda k, beta: 0)
    rng = np.random.default_rng(list(f"reach {kind} {beta}".encode()))
    k = 20_000
    if kind == "fine ties":  # tie blocks of tens of records, some across the sorted window's edges
        rows = np.clip(np.round(rng.normal(size=(12, k)), 2), -3.0, 3.0)
    else:
        rows = np.stack([_random_row(rng, kind, k) for _ in range(12)])
    windowed = 0
    for rank in (1, 40, 300, k // 3, k // 2, k - 200, k - 3, k):
        full = np.sort(rows, axis=1)
        expected = order_log_smooth_sensitivity(full, rank, beta, -3.0, 3.0)
        stats: dict[str, int] = {}
        values, got = order_statistic_log_smooth(rows.copy(), rank, beta, -3.0, 3.0, stats=stats)
        np.testing.assert_array_equal(values, full[:, rank - 1])
        np.testing.assert_array_equal(got, expected)
        windowed += 0 < stats["open_sorted"] < k
    if kind in ("normal", "fine ties"):
        assert windowed > 0  # the windowed sort really ran


@pytest.mark.parametrize("seed", range(6))
def test_tie_block_counts_from_a_sorted_window_equal_counts_over_the_row(seed: int) -> None:
    """The compiled tie-block pass reads the counts below and at most x_(r) off the tie block's ends in the
    sorted window, and counts over the partitioned rest only when the block reaches a window edge: the same
    counts, gaps and spans as counting over the whole row, for blocks inside, across and beyond the window."""
    from privframe_std.statistics._order_jit import tie_block_gaps

    rng = np.random.default_rng(seed)
    k, rank = 400, 200
    rows = rng.integers(0, [[2], [5], [40], [400]], size=(4, k)).astype(np.float64)
    for lo, hi in ((150, 250), (195, 205), (199, 199), (0, k - 1)):
        part = rows.copy()
        part.partition(lo, axis=1)
        if hi > lo:
            part[:, lo + 1 :].partition(hi - lo - 1, axis=1)
        part[:, lo : hi + 1].sort(axis=1)
        gaps = np.empty((3, 4))
        spans = np.empty((3, 4))
        tie_block_gaps(part, rank, -1.0, 500.0, lo, hi, gaps, spans)
        ordered = np.sort(rows, axis=1)
        pivot = ordered[:, rank - 1]
        below = np.count_nonzero(ordered < pivot[:, None], axis=1)
        above = np.count_nonzero(ordered <= pivot[:, None], axis=1) + 1
        padded = np.concatenate([np.full((4, 1), -1.0), ordered, np.full((4, 1), 500.0)], axis=1)
        at = np.arange(4)
        np.testing.assert_array_equal(spans[0], above - below - 1)
        np.testing.assert_array_equal(spans[1], rank - below - 1)
        np.testing.assert_array_equal(spans[2], above - rank - 1)
        # A tie-block end outside the sorted window reads a partitioned value: a gap at least the true one
        # and within the bounds (its span is beyond the reach, so it cannot be the maximum); inside, exact.
        for gap, true, end in (
            (gaps[1], pivot - padded[at, below], below),
            (gaps[2], padded[at, above] - pivot, above),
        ):
            inside = (end == 0) | (end == k + 1) | ((lo <= end - 1) & (end - 1 <= hi))
            np.testing.assert_array_equal(gap[inside], true[inside])
            assert np.all((true <= gap) & (gap <= 501.0))
