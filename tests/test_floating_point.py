"""Floating-point safety: neighbouring inputs can reach exactly the same released doubles (Mironov 2012).

The attack: with ``value + scale * rng.standard_normal()`` the set of doubles a release can take depends on
the value, so the low bits of one release can tell two neighbouring datasets apart. Every standard
mechanism releases on a public grid instead; these tests check, on two neighbouring inputs (means 0 and
1/n, n = 1000), that (a) every release is a whole number of grid steps of a grid that depends on public
numbers only, so both inputs reach the same set of doubles, and (b) the low bits of the releases have the
same distribution under both inputs. The same checks on the float path (``exact=False``, kept for
simulations and flagged in every event) fail, which shows they can fail.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from scipy import stats

import privframe as pf
import privframe.plugin as pp
from privframe_std.mechanisms.exponential import grid_points

N = 1000
DRAWS = 20_000


def _mantissa_low_bits(values: np.ndarray, bits: int = 4) -> np.ndarray:
    """The lowest ``bits`` bits of each double's 53-bit significand."""
    mantissa = np.abs(np.frexp(values)[0])
    return (mantissa * 2.0**53).astype(np.int64) % (2**bits)


def _same_law(a: np.ndarray, b: np.ndarray, bins: int) -> float:
    """p-value of a chi-square test that two samples of integers in [0, bins) share a law."""
    table = np.vstack([np.bincount(a, minlength=bins), np.bincount(b, minlength=bins)])
    table = table[:, table.sum(axis=0) > 0]
    if table.shape[1] < 2:
        return 1.0
    return float(stats.chi2_contingency(table)[1])


def _unreachable(outputs: np.ndarray, other_value: float) -> float:
    """Share of ``outputs`` that no double noise z can produce as ``fl(other_value + z)``.

    The only candidates for z are the doubles within two ulps of ``output - other_value``."""
    missing = 0
    for y in outputs:
        z = y - other_value
        candidates = [z]
        for direction in (math.inf, -math.inf):
            step = z
            for _ in range(2):
                step = math.nextafter(step, direction)
                candidates.append(step)
        missing += not any(other_value + c == y for c in candidates)
    return missing / len(outputs)


def _additive(name: str, budget: pf.Budget, exact: bool) -> tuple[np.ndarray, np.ndarray, pf.PrivacyEvent]:
    mechanism = pf.registry.create("mechanism", name, exact=exact)
    event = mechanism.plan(1.0 / N, budget, label="mean")
    a = mechanism.apply(np.zeros(DRAWS), event, np.random.default_rng(1))
    b = mechanism.apply(np.full(DRAWS, 1.0 / N), event, np.random.default_rng(2))
    return a, b, event


@pytest.mark.parametrize(("name", "budget"), [("gaussian", pf.GDP(1.0)), ("laplace", pf.PureDP(1.0))])
def test_additive_releases_reach_the_same_doubles(name: str, budget: pf.Budget) -> None:
    a, b, event = _additive(name, budget, exact=True)
    grid = event.noise.grid
    assert grid == 2.0 ** round(math.log2(grid))  # a power of two, fixed by sensitivity and budget only
    steps_a, steps_b = a / grid, b / grid
    assert np.all(steps_a == np.rint(steps_a))
    assert np.all(steps_b == np.rint(steps_b))
    assert np.max(np.abs(steps_a)) < 2**53  # every whole number of steps in range is a double: same support
    assert _same_law(np.rint(steps_a).astype(np.int64) % 16, np.rint(steps_b).astype(np.int64) % 16, 16) > 1e-3
    assert _unreachable(a[:2000], 1.0 / N) == 0.0


@pytest.mark.parametrize(("name", "budget"), [("gaussian", pf.GDP(1.0)), ("laplace", pf.PureDP(1.0))])
def test_the_checks_catch_float_noise(name: str, budget: pf.Budget) -> None:
    a, b, event = _additive(name, budget, exact=False)
    assert event.simulated
    assert "not safe against floating-point attacks" in event.note
    assert _same_law(_mantissa_low_bits(a), _mantissa_low_bits(b), 16) < 1e-6
    assert _unreachable(a[:2000], 1.0 / N) > 0.2


def test_ptr_gdp_releases_on_grids() -> None:
    mechanism = pf.registry.create("mechanism", "ptr-gdp")
    event = mechanism.plan_smooth(0.1, pf.GDP(1.0, delta=1e-6), label="centre")
    bounds, outputs = [], {}
    for value, seed in ((0.0, 3), (1.0 / N, 4)):
        rng = np.random.default_rng(seed)
        released = [mechanism.release_smooth(np.array([value]), 1.0 / N, event, rng) for _ in range(400)]
        outputs[value] = released
        bounds.extend(r.bound for r in released)
    test = pp.noise.plan_gaussian(0.1, event.details["mu_test"])
    for log_b in np.log(bounds):  # the bound's logarithm is a whole number of the test's grid steps
        assert abs(log_b / test.grid - round(log_b / test.grid)) < 1e-6
    for released in outputs.values():
        for r in released:
            grid = pp.noise.plan_gaussian(r.bound, event.details["mu_release"]).grid
            assert (r.value[0] / grid).is_integer()


def _median_releases(shift: float, exact: bool) -> np.ndarray:
    mechanism = pf.registry.create("mechanism", "exponential", exact=exact)
    median = pf.registry.create("statistic", "median")
    x = np.concatenate([np.full(N - 1, 0.5), [0.5 + shift]])
    event = mechanism.plan_selection(median, pf.PureDP(1.0), label="median")
    index = np.tile(np.arange(N, dtype=np.intp), (DRAWS // 10, 1))
    released = mechanism.select_batch(median, x, index, pf.Bounds(0.0, 1.0), event, np.random.default_rng(7))
    values: np.ndarray = released[:, 0]
    return values


def test_exponential_mechanism_releases_grid_points() -> None:
    grid = grid_points(0.0, 1.0, 2**16)
    a, b = _median_releases(0.0, True), _median_releases(1.0 / N, True)
    assert np.all(np.isin(a, grid))
    assert np.all(np.isin(b, grid))
    positions_a, positions_b = np.searchsorted(grid, a), np.searchsorted(grid, b)
    assert _same_law(positions_a % 16, positions_b % 16, 16) > 1e-3


def test_the_check_catches_a_float_exponential_mechanism() -> None:
    """The float path draws a uniform point inside the chosen piece, whose edges are data values: its releases
    are (almost) never grid points."""
    released = _median_releases(1.0 / N, False)
    assert np.mean(np.isin(released, grid_points(0.0, 1.0, 2**16))) < 0.01


def _front_door(x: Any, **options: Any) -> pf.IntervalResult:
    return pf.confidence_interval(x, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), B=100, **options)


def test_every_standard_method_releases_on_grids_by_default() -> None:
    """The events of a default cr-gs call carry their grid, and the released centre is on it."""
    x = np.random.default_rng(0).uniform(size=N)
    res = _front_door(x, rng=5)
    center_event = res.privacy.events[0]
    assert not center_event.simulated
    assert (res.center / center_event.noise.grid).is_integer()
