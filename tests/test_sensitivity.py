"""Sensitivity claims checked by brute force over neighbouring datasets (replace-one).

CR-GS's privacy rests on two claims: the statistic's global sensitivity Delta_k, and that the released
radius Q = tau_m * R_(k) moves by at most tau_m (kappa Delta_m + Delta_n) between neighbours when the
resample indices are held fixed (they are drawn independently of the data). Both are checked here on
every neighbour of small datasets on a grid, for WOR and for WR index sets with repeated records.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import pytest

import privframe as pf
import privframe.plugin as pp
from privframe_std.methods.oneshot.radius import convolved_quantile

GRID = np.linspace(0.0, 1.0, 5)


def _neighbours(x: np.ndarray) -> list[np.ndarray]:
    out = []
    for i in range(x.shape[0]):
        for v in GRID:
            if v != x[i]:
                y = x.copy()
                y[i] = v
                out.append(y)
    return out


@pytest.mark.parametrize("k", [2, 3, 5])
def test_mean_sensitivity_is_attained_and_never_exceeded(k: int) -> None:
    mean = pf.registry.create("statistic", "mean")
    bounds = pf.Bounds(0.0, 1.0)
    claimed = mean.sensitivity(k, bounds)
    worst = 0.0
    for x in itertools.product(GRID, repeat=k):
        xa = np.array(x)
        base = mean.evaluate(xa)[0]
        for y in _neighbours(xa):
            worst = max(worst, abs(mean.evaluate(y)[0] - base))
    assert worst <= claimed + 1e-15
    assert worst == pytest.approx(claimed)  # tight: a record moving from 0 to 1


def test_vector_mean_sensitivity_on_the_ball() -> None:
    mean = pf.registry.create("statistic", "mean")
    ball = pf.L2Ball(1.0)
    k = 3
    angles = np.linspace(0, 2 * np.pi, 8, endpoint=False)
    points = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    worst = 0.0
    for rows in itertools.combinations(range(8), k):
        x = points[list(rows)]
        base = mean.evaluate(x)
        for i in range(k):
            for p in points:
                y = x.copy()
                y[i] = p
                worst = max(worst, float(np.linalg.norm(mean.evaluate(y) - base)))
    assert worst <= mean.sensitivity(k, ball) + 1e-12
    assert worst == pytest.approx(mean.sensitivity(k, ball))  # antipodal swap


def _radius(x: np.ndarray, index: np.ndarray, confidence: float) -> float:
    mean = pf.registry.create("statistic", "mean")
    theta = mean.evaluate(x)
    roots = np.linalg.norm(mean.evaluate_batch(x, index) - theta, axis=1)
    k = pp.order_statistic_index(confidence, index.shape[0])
    return float(np.sort(roots)[k]) * np.sqrt(index.shape[1])


def _radii(datasets: np.ndarray, index: np.ndarray, confidence: float) -> np.ndarray:
    """:func:`_radius` of every row of ``datasets`` (N, n) at once: the rows are laid end to end and the
    statistic's own ``evaluate_batch`` reads each resample at its dataset's offset."""
    mean = pf.registry.create("statistic", "mean")
    count, n = datasets.shape
    flat = datasets.reshape(-1)
    offsets = (np.arange(count) * n)[:, None, None]
    theta = mean.evaluate_batch(flat, np.arange(count * n).reshape(count, n))  # (N, 1)
    star = mean.evaluate_batch(flat, (index[None, :, :] + offsets).reshape(-1, index.shape[1]))
    roots = np.abs(star.reshape(count, index.shape[0]) - theta)
    k = pp.order_statistic_index(confidence, index.shape[0])
    return np.sort(roots, axis=1)[:, k] * np.sqrt(index.shape[1])


def _worst_radius_change(
    index: np.ndarray, n: int, confidence: float, radius: Callable[..., float] | None = None
) -> float:
    """The largest change of the radius over every dataset on GRID^n and every replace-one neighbour."""
    if radius is None:
        datasets = np.array(list(itertools.product(GRID, repeat=n)))
        base = _radii(datasets, index, confidence)
        worst = 0.0
        for i in range(n):
            for v in GRID:
                moved = datasets.copy()
                moved[:, i] = v
                worst = max(worst, float(np.max(np.abs(_radii(moved, index, confidence) - base))))
        assert base[7] == pytest.approx(_radius(datasets[7], index, confidence), rel=1e-12)  # same as one by one
        return worst
    worst = 0.0
    for x in itertools.product(GRID, repeat=n):
        xa = np.array(x)
        base_one = radius(xa, index, confidence)
        for y in _neighbours(xa):
            worst = max(worst, abs(radius(y, index, confidence) - base_one))
    return worst


def _claimed(n: int, m: int, kappa: int) -> float:
    mean = pf.registry.create("statistic", "mean")
    bounds = pf.Bounds(0.0, 1.0)
    return float(np.sqrt(m) * (kappa * mean.sensitivity(m, bounds) + mean.sensitivity(n, bounds)))


def _index_set(n: int, m: int, B: int, replace: bool, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """B resamples of m indices and their multiplicity bound kappa; with replacement, row 0 repeats record 0
    m times (the worst case for the kappa factor)."""
    if not replace:
        return np.stack([rng.choice(n, size=m, replace=False) for _ in range(B)]), 1
    index = rng.integers(0, n, size=(B, m))
    index[0] = 0
    return index, int(max(np.bincount(row, minlength=n).max() for row in index))


@pytest.mark.parametrize("replace", [False, True])
def test_radius_sensitivity_claim_of_cr_gs(replace: bool) -> None:
    n, m, B, confidence = 5, 3, 12, 0.75
    index, kappa = _index_set(n, m, B, replace, np.random.default_rng(0))
    assert _worst_radius_change(index, n, confidence) <= _claimed(n, m, kappa) + 1e-12


def test_radius_sensitivity_needs_the_kappa_factor() -> None:
    """With one record filling whole resamples (kappa = m), dropping kappa from the bound would be unsafe."""
    n, m = 5, 3
    index = np.zeros((4, m), dtype=np.intp)
    worst = _worst_radius_change(index, n, 0.75)
    assert worst <= _claimed(n, m, kappa=m) + 1e-12
    assert worst > _claimed(n, m, kappa=1)


@pytest.mark.parametrize("replace", [False, True])
def test_the_noise_aware_quantile_has_the_same_sensitivity(replace: bool) -> None:
    """The noise-aware radius convolves the roots with fixed, data-independent draws of the centre and radius
    noise (docs/algorithms.md 3.5): its quantile must move no more than the paper's bound between neighbours.
    The draws are large against the roots, so a wrong argument (e.g. a noise that depended on the data, or a
    quantile that was not 1-Lipschitz) would show."""
    n, m, B, confidence = 4, 3, 12, 0.75
    rng = np.random.default_rng(1)
    index, kappa = _index_set(n, m, B, replace, rng)
    offsets, shifts = rng.normal(0.0, 0.5, size=(B, 1)), rng.normal(0.0, 0.5, size=B)
    mean = pf.registry.create("statistic", "mean")

    def convolved(x: np.ndarray, index: np.ndarray, confidence: float) -> float:
        deviations = mean.evaluate_batch(x, index) - mean.evaluate(x)
        return convolved_quantile(np.sqrt(m) * deviations, offsets, confidence, "inverted_cdf", shifts)

    worst = _worst_radius_change(index, n, confidence, convolved)
    assert 0 < worst <= _claimed(n, m, kappa) + 1e-12
