"""Smooth sensitivities against brute force on tiny datasets (algorithms.md 3.2).

For a dataset x of k grid values we enumerate every dataset on the grid, compute its local sensitivity by
trying every replacement, and take ``A_bf^(j)(x) = max {LS(y) : Hamming(x, y) <= j}``. Order statistics: the
NRS bound must EQUAL the brute force for every j (the grid holds the data and the bounds, where the maxima
are attained). Product U-statistic: the closed-form bound must be >= the brute force for every j (it is an
upper bound by construction) and tight at j = 0 for data at the bounds.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import privframe as pf
from privframe_std.statistics.order import Median, Quantile, order_smooth_sensitivity
from privframe_std.statistics.ustat import UStatistic, product_smooth_sensitivity

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
        assert median.smooth_sensitivity(x, beta, bounds) == pytest.approx(brute, rel=1e-12)


def test_order_smooth_sensitivity_batch_matches_rows() -> None:
    rng = np.random.default_rng(3)
    x = rng.uniform(-2, 3, size=200)
    index = rng.integers(0, 200, size=(40, 31))
    bounds = pf.Bounds(-2.0, 3.0)
    for stat in (Median(), Quantile(q=0.1), Quantile(q=0.9)):
        values, smooth = stat.evaluate_smooth_batch(x, index, 0.2, bounds)
        assert values.shape == (40, 1)
        np.testing.assert_array_equal(values, stat.evaluate_batch(x, index))
        expected = [stat.smooth_sensitivity(x[row], 0.2, bounds) for row in index]
        np.testing.assert_allclose(smooth, expected, rtol=1e-14)


def test_order_smooth_sensitivity_is_log_smooth_on_neighbours() -> None:
    """|ln SS(x) - ln SS(x')| <= beta for every neighbour on the grid (the property PTR relies on)."""
    beta = 0.4
    rng = np.random.default_rng(11)
    for x in rng.choice(GRID, size=(20, 6)):
        base = order_smooth_sensitivity(np.sort(x)[None, :], 3, beta, LOW, HIGH)[0]
        for i, v in itertools.product(range(6), GRID):
            y = x.copy()
            y[i] = v
            other = order_smooth_sensitivity(np.sort(y)[None, :], 3, beta, LOW, HIGH)[0]
            assert abs(math.log(base) - math.log(other)) <= beta + 1e-12


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
    """The O(1) maximisation over j equals enumerating every j up to where the bound is capped."""
    rng = np.random.default_rng(5)
    for k in (5, 50, 1000):
        totals = rng.uniform(-k / 2, k / 2, size=50)
        totals[:3] = [0.0, k / 2, -k / 4]
        closed = product_smooth_sensitivity(totals, k, 0.5, beta)
        for total, value in zip(totals, closed, strict=True):
            enumerated = max(math.exp(-j * beta) * _u_formula_a(total, k, 0.5, j) for j in range(4 * k + 10))
            assert value == pytest.approx(enumerated, rel=1e-12)


def test_product_u_smooth_batch_matches_rows() -> None:
    rng = np.random.default_rng(2)
    x = rng.uniform(-0.5, 0.5, size=300)
    index = rng.integers(0, 300, size=(20, 50))
    stat = UStatistic(kernel="product", degenerate=True)
    bounds = pf.Bounds(-0.5, 0.5)
    values, smooth = stat.evaluate_smooth_batch(x, index, 0.3, bounds)
    np.testing.assert_allclose(values, stat.evaluate_batch(x, index), rtol=1e-12)
    expected = [stat.smooth_sensitivity(x[row], 0.3, bounds) for row in index]
    np.testing.assert_allclose(smooth, expected, rtol=1e-12)
    # the O(k) value equals the pairwise definition
    row = x[index[0]]
    pairwise = (np.outer(row, row).sum() - (row**2).sum()) / (50 * 49)
    assert values[0, 0] == pytest.approx(pairwise, rel=1e-10)


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
