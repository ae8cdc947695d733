"""Interval endpoints of every private method: the data reach them only through releases on public sets.

``tests/test_floating_point.py`` checks that a released *centre* is a whole number of steps of a public
grid, so that neighbouring datasets reach the same doubles. An interval's endpoints are further computed
from the releases, and a computation that read the data again (or added a float to a release) would put
data-dependent bits into them. What each method's endpoints are (read from its code):

========== ==================================================================================================
method     endpoints, in the statistic's coordinates (the public lower bound is added back, then the range
           clip of ``pipeline/ranges.py``: both public post-processing)
========== ==================================================================================================
cr-gs      ``c -+ max(g_r k_r, floor) / tau_n``: c a lattice release, ``g_r k_r`` the released radius
           quantile, floor the (public) centre-noise radius
cr-ss      ``c -+ tau_m max(r + margin, floor) / tau_n``: c and r PTR-GDP releases (lattice, on grids fixed by
           their released bounds), margin a quantile of the radius noise's (released) law
privsub    ``2 c - Z_(1 - alpha / 2)``, ``2 c - Z_(alpha / 2)``: c the full-data release, Z interpolated order
           statistics of ``c + (tau_m / tau_n)(t_i - c)`` with t_i the T subsample releases (lattice, or
           exponential-mechanism grid points for the median)
blbquant   ``c + (mid -+ (k + 1) w) / tau_n``: c a lattice release (mean) or grid point (median), k the
           index AboveThreshold releases, mid and w the public root grid
dette-graw ``c - tau_m (t_(j) - c) / tau_n`` for two order statistics t_(j) of the B lattice releases
privboot   quantiles of an Efron g-model fitted to the B lattice releases with the public noise sd
========== ==================================================================================================

So every endpoint should be a public function of (a) the seed's data-independent streams (resampling
indices, simulated noise) and (b) released values, each in a public set: a multiple of its plan's grid, a
point of the exponential mechanism's grid, an index. The tests assert exactly that, two ways:

1. **Coupling.** Each method runs on a dataset D, with every release recorded: ``noise.release`` and
   ``noise.release_rows`` (every lattice release, PTR-GDP's two included), the exponential mechanism's
   ``select_batch`` and BLBQuant's ``above_threshold``. Each recorded value must lie in its public set.
   The method then runs, with the same seed, on a neighbour D' (one record replaced) while each release
   returns what it returned on D (every value of a public set has positive probability on D' too, so this
   is a possible run on D'); the plans asked for must be the same, the endpoints and centre must be the
   same doubles, bit for bit, and so must the rest of the result (parameters, diagnostics, ledger). A
   method that read the data outside a release, or released ``value + noise`` off the grid, fails: the
   tests at the end check that the coupling catches a Gaussian mechanism that adds lattice noise to the
   unrounded value, the float paths (``exact=False``), and cr-ss's ``report_nonprivate`` diagnostics.
2. **Public grids.** Where the result itself shows the structure, it is checked from the result alone:
   each centre minus the public offset is on its documented grid (all but privboot, whose centre is the
   mean of its releases), and the endpoints of cr-gs, blbquant and dette-graw are reproduced exactly, as
   doubles, from the centre and one released integer (or index).

Why not a chi-square on the endpoints' low mantissa bits: measured once on cr-gs (mean, GDP(1), B = 50,
bounds (0, 1), n = 1000, 1000 seeds per dataset, neighbours x and x with x_0 -> 1 - x_0), the low 8 bits
of the low end gave p = 0.23 with exact releases, p = 0.68 for the value-plus-lattice-noise mutant below,
and p = 0.41 with float noise (``exact=False``): dividing by tau_n fills the mantissa with bits that look
uniform either way, so such a test has no power against the bugs it is meant to catch (the centres' low
bits do show the mutant, p = 0). The coupling check catches both, exactly.

Everything is seeded and deterministic: no statistical threshold is involved. The data are n = 2000
uniform records on the bounds (2, 3), so that the mean and median are computed in shifted coordinates
(offset 2), and each case's budget is one at which no endpoint is clipped to the range (checked).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
import pytest

import privframe as pf
from privframe.privacy import noise
from privframe_std.mechanisms import gaussian as gaussian_module
from privframe_std.mechanisms.exponential import ExponentialMechanism, grid_points
from privframe_std.methods.blbquant import method as blbquant_module

N = 2000
LOW, HIGH = 2.0, 3.0
X = LOW + np.random.default_rng(0).uniform(size=N)
NEIGHBOUR = X.copy()
NEIGHBOUR[np.argmin(X)] = HIGH  # one record replaced: moves the mean by 1/2000 and the median by one rank
SEEDS = (1, 2)

CASES: dict[str, tuple[str, str, dict[str, Any]]] = {
    "cr-gs-mean": ("cr-gs", "mean", {"budget": pf.GDP(1.0), "B": 100}),
    "cr-ss-mean": ("cr-ss", "mean", {"budget": pf.GDP(1.0, delta=1e-6), "B": 100}),
    "cr-ss-median": ("cr-ss", "median", {"budget": pf.GDP(1.0, delta=1e-6), "B": 100}),
    "privsub-mean": ("privsub", "mean", {"budget": pf.GDP(1.0)}),
    "privsub-median": ("privsub", "median", {"budget": pf.GDP(1.0)}),
    "blbquant-mean": ("blbquant", "mean", {"budget": pf.PureDP(1.0), "min_block": 0}),
    "blbquant-median": ("blbquant", "median", {"budget": pf.PureDP(1.0), "min_block": 0}),
    "dette-graw-mean": ("dette-graw", "mean", {"budget": pf.GDP(2.0), "B": 50}),
    "privboot-mean": ("privboot", "mean", {"budget": pf.GDP(1.0).to_approx_dp(1e-6)}),
}
"""Every private method, with the mean and, where it takes another mechanism, the median (PTR-GDP's smooth
sensitivity, the exponential mechanism)."""


def _call(x: np.ndarray, case: str, seed: int, **extra: Any) -> pf.IntervalResult:
    method, statistic, options = CASES[case]
    result = pf.confidence_interval(x, statistic, method=method, bounds=(LOW, HIGH), rng=seed, **options, **extra)
    assert isinstance(result, pf.IntervalResult)
    return result


def _ends(result: pf.IntervalResult) -> tuple[str, str, str]:
    """The endpoints and centre as exact hexadecimal doubles."""
    return (float(result.low).hex(), float(result.high).hex(), float(result.center).hex())


def _fingerprint(value: Any) -> Any:
    """A comparable, exact form of what a result reports (floats as hex, arrays as bytes)."""
    if isinstance(value, dict):
        return tuple(sorted((str(k), _fingerprint(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_fingerprint(v) for v in value)
    if isinstance(value, (float, np.floating)):
        return float(value).hex()
    if isinstance(value, np.ndarray):
        return (str(value.dtype), value.shape, value.tobytes())
    if hasattr(value, "values") and hasattr(value, "center"):  # privsub's SubsampleECDF
        return (_fingerprint(np.asarray(value.values)), _fingerprint(value.center))
    return repr(value)


def _report(result: pf.IntervalResult) -> Any:
    """Everything else the result publishes: parameters, diagnostics and the ledger's events."""
    return _fingerprint(
        {"parameters": result.parameters, "diagnostics": result.diagnostics, "events": list(result.privacy.events)}
    )


# ---------------------------------------------------------------------------------------------------------
# the coupling: record every release on D, replay it on D'


@attrs.define
class Tape:
    """What was released on D (in call order), and what went wrong: a value outside its public set, or a
    replayed call that asked for something else than the recorded one."""

    entries: list[tuple[Any, Any]] = attrs.Factory(list)
    replaying: bool = False
    position: int = 0
    off_public_set: list[str] = attrs.Factory(list)
    mismatches: list[str] = attrs.Factory(list)

    def step(self, key: Any, value: Any, public: Callable[[Any], bool], what: str) -> Any:
        if not self.replaying:
            if not public(value):
                self.off_public_set.append(what)
            self.entries.append((key, value))
            return value
        if self.position >= len(self.entries):
            self.mismatches.append(f"an extra {what} on the neighbour")
            return value
        recorded_key, recorded = self.entries[self.position]
        self.position += 1
        if not _same_key(recorded_key, key):
            self.mismatches.append(f"{what} #{self.position}: asked for another release than on D")
        return np.array(recorded, copy=True) if isinstance(recorded, np.ndarray) else recorded


def _same_key(a: Any, b: Any) -> bool:
    return bool(a[0] == b[0] and all(np.array_equal(x, y) for x, y in zip(a[1:], b[1:], strict=True)))


def _on_grid(value: Any, grids: Any) -> bool:
    """Every finite entry a whole number of steps of its grid, each grid a power of two."""
    array, grid = np.asarray(value, dtype=np.float64), np.asarray(grids, dtype=np.float64)
    if not np.all(np.frexp(grid)[0] == 0.5):
        return False
    steps = array / grid
    finite = np.isfinite(steps)
    return bool(np.all(steps[finite] == np.rint(steps[finite])))


def _install(monkeypatch: pytest.MonkeyPatch, tape: Tape) -> None:
    """Route every release of the standard mechanisms and BLBQuant's search through ``tape``."""
    release, release_rows = noise.release, noise.release_rows
    select_batch = ExponentialMechanism.select_batch
    above_threshold = blbquant_module.above_threshold

    def recorded_release(value: Any, plan: noise.LatticePlan, rng: np.random.Generator) -> Any:
        out = release(value, plan, rng)
        return tape.step(("release", plan), np.array(out), lambda v: _on_grid(v, plan.grid), "lattice release")

    def recorded_rows(values: Any, plans: list[noise.LatticePlan], rng: np.random.Generator) -> Any:
        out = np.array(release_rows(values, plans, rng))
        grids = np.array([plan.grid for plan in plans]).reshape((-1,) + (1,) * (out.ndim - 1))
        return tape.step(("rows", tuple(plans)), out, lambda v: _on_grid(v, grids), "lattice rows")

    def recorded_select(
        self: ExponentialMechanism, statistic: Any, x: Any, index: Any, bounds: Any, event: Any, rng: Any
    ) -> Any:
        out = np.array(select_batch(self, statistic, x, index, bounds, event, rng))
        points = grid_points(bounds.low, bounds.high, self.grid_size)
        epsilon = getattr(event.budget, "epsilon", math.nan)
        key = ("select", np.array([bounds.low, bounds.high, self.grid_size, epsilon]), np.array(index.shape))
        return tape.step(key, out, lambda v: bool(np.all(np.isin(v, points))), "exponential selection")

    def recorded_search(coverages: Any, threshold: float, epsilon: float, source: Any) -> int | None:
        k = above_threshold(coverages, threshold, epsilon, source)
        count = coverages.shape[0]
        key = ("search", np.array([threshold, epsilon, count]))
        public: Callable[[Any], bool] = lambda v: v is None or (isinstance(v, int) and 0 <= v < count)  # noqa: E731
        chosen: int | None = tape.step(key, k, public, "AboveThreshold index")
        return chosen

    monkeypatch.setattr(noise, "release", recorded_release)
    monkeypatch.setattr(noise, "release_rows", recorded_rows)
    monkeypatch.setattr(ExponentialMechanism, "select_batch", recorded_select)
    monkeypatch.setattr(blbquant_module, "above_threshold", recorded_search)


@attrs.frozen
class Coupled:
    """One coupled pair of runs: on D, and on D' with D's releases."""

    on_d: pf.IntervalResult
    on_neighbour: pf.IntervalResult
    tape: Tape

    @property
    def releases(self) -> int:
        return len(self.tape.entries)

    def problems(self) -> list[str]:
        """Everything that breaks "endpoints are a public function of the releases"."""
        found = [f"{what} outside its public set" for what in self.tape.off_public_set] + self.tape.mismatches
        if self.tape.position != len(self.tape.entries):
            found.append(f"{len(self.tape.entries) - self.tape.position} fewer releases on the neighbour")
        if _ends(self.on_d) != _ends(self.on_neighbour):
            found.append(f"different endpoints: {_ends(self.on_d)} on D, {_ends(self.on_neighbour)} on D'")
        elif _report(self.on_d) != _report(self.on_neighbour):
            found.append("same endpoints, but different parameters, diagnostics or ledger")
        return found


@pytest.fixture
def couple(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Coupled]:
    """``couple(case, seed, data=(D, D'), **options)``: the coupled pair of runs of a case (by default on X and
    NEIGHBOUR), releases recorded on D."""

    def run(case: str, seed: int, data: tuple[np.ndarray, np.ndarray] = (X, NEIGHBOUR), **extra: Any) -> Coupled:
        with monkeypatch.context() as patch:
            tape = Tape()
            _install(patch, tape)
            on_d = _call(data[0], case, seed, **extra)
            tape.replaying = True
            on_neighbour = _call(data[1], case, seed, **extra)
        return Coupled(on_d, on_neighbour, tape)

    return run


@pytest.mark.parametrize("case", list(CASES))
def test_endpoints_depend_on_the_data_only_through_public_releases(case: str, couple: Callable[..., Coupled]) -> None:
    """Coupled on the neighbour, every method gives the same endpoints, bit for bit, from the same releases
    (and the same parameters, diagnostics and ledger: the rest of what the result publishes).

    Not vacuous: without the coupling the neighbour's interval differs (the data do reach the endpoints),
    and no endpoint is clipped to the range (which would make it a public constant).
    """
    differs = False
    for seed in SEEDS:
        coupled = couple(case, seed)
        assert coupled.releases > 0
        assert coupled.problems() == []
        result = coupled.on_d
        assert LOW < result.low < result.high < HIGH, "an endpoint clipped to the range tests nothing"
        differs |= _ends(_call(NEIGHBOUR, case, seed)) != _ends(result)
    assert differs, "the neighbour's own releases should move the interval"


def test_a_ptr_release_of_the_value_itself_is_the_same_on_the_neighbour(couple: Callable[..., Coupled]) -> None:
    """The one data-dependent branch on the release path: PTR-GDP releases the value itself when its released
    bound is below a quarter of the doubles' spacing there (tied data: the median's smooth sensitivity
    underflows). On the test's good event every neighbour has the same double, and the coupling agrees: 19 995
    records at 2.5, five others, and the neighbour moves one of those to the upper bound."""
    tied = np.full(20_000, 2.5)
    tied[:5] = LOW + np.random.default_rng(0).uniform(size=5)
    neighbour = tied.copy()
    neighbour[0] = HIGH
    for seed in SEEDS:
        coupled = couple("cr-ss-median", seed, data=(tied, neighbour))
        assert coupled.problems() == []
        assert coupled.on_d.diagnostics["center_noise"] == 0.0  # the branch was taken: the median itself
        assert coupled.on_d.center == 2.5


# ---------------------------------------------------------------------------------------------------------
# the documented grids, read from the result alone


def _event(result: pf.IntervalResult, label: str) -> pf.PrivacyEvent:
    (event,) = [e for e in result.privacy.events if e.label == label]
    return event


def _lattice_grid(event: pf.PrivacyEvent) -> float:
    plan = event.noise
    assert isinstance(plan, noise.LatticePlan), f"'{event.label}' was not released on a lattice"
    return plan.grid


def _on(value: float, grid: float) -> bool:
    steps = value / grid
    return steps == round(steps) and math.frexp(grid)[0] == 0.5


def _centre_grid(case: str, result: pf.IntervalResult) -> tuple[str, float]:
    """The public set the centre (minus the offset) lies in: ``("lattice", grid)`` or ``("points", size)``."""
    method = CASES[case][0]
    event = _event(result, "full" if method == "privsub" else "center")
    if event.mechanism == "exponential":
        return "points", float(event.details["grid_size"])
    if method == "cr-ss":  # PTR-GDP: the grid of the release plan of the released bound
        bound, mu = result.diagnostics["proposed_bound_center"], result.diagnostics["mu_release"]
        return "lattice", noise.plan_gaussian(bound, mu).grid
    return "lattice", _lattice_grid(event)


@pytest.mark.parametrize("case", [case for case in CASES if not case.startswith("privboot")])
def test_centres_lie_on_their_documented_grids(case: str) -> None:
    """The centre minus the public offset (2, the lower bound) is a whole number of steps of its lattice
    release's grid, or a point of the exponential mechanism's grid ``i (high - low) / 2^16``.

    privboot is left out: its centre is the mean of its B releases (post-processing, on no grid); the
    coupling test covers it.
    """
    for seed in SEEDS:
        result = _call(X, case, seed)
        assert result.diagnostics["offset"] == LOW
        centre = result.center - LOW  # exact: the centre is within [2, 3], the released value within [0, 1]
        kind, grid = _centre_grid(case, result)
        if kind == "lattice":
            assert _on(centre, grid), (case, seed, centre, grid)
        else:
            assert centre in grid_points(0.0, HIGH - LOW, int(grid)), (case, seed, centre)


def _nearby_integers(estimate: float, spread: int = 3) -> range:
    middle = round(estimate)
    return range(middle - spread, middle + spread + 1)


def test_cr_gs_endpoints_are_the_centre_plus_minus_a_released_radius() -> None:
    """cr-gs: ``low = (c - R) + 2``, ``high = (c + R) + 2`` with ``R = max(g_r k, floor) / tau_n``, k an integer
    (the released radius quantile in steps of its grid) or R the public floor: reproduced exactly."""
    for seed in SEEDS:
        result = _call(X, "cr-gs-mean", seed)
        centre, tau_n = result.center - LOW, result.diagnostics["tau_n"]
        assert _on(centre, _lattice_grid(_event(result, "center")))
        grid = _lattice_grid(_event(result, "radius"))
        estimate = (result.high - result.low) / 2 * tau_n / grid
        # max(g k, floor) / tau_n is g k / tau_n or the floor's diagnostics["floor"] (the same division)
        radii = [grid * k / tau_n for k in _nearby_integers(estimate)] + [result.diagnostics["floor"]]
        ends = [((centre - r) + LOW, (centre + r) + LOW) for r in radii]
        assert (result.low, result.high) in ends, (seed, result.low, result.high)


def test_blbquant_endpoints_are_the_centre_plus_a_released_index() -> None:
    """blbquant: ``low = (c + (mid - (k + 1) w) / tau_n) + 2`` and ``high`` with ``+``, from the released index
    k (``diagnostics["chosen_set"]``) and the public grid (its bounds, ``w``): reproduced exactly."""
    for case in ("blbquant-mean", "blbquant-median"):
        for seed in SEEDS:
            result = _call(X, case, seed)
            k = result.diagnostics["chosen_set"]["symmetric"]
            assert isinstance(k, int)
            assert 0 <= k < result.parameters["bins"] // 2
            low, high = result.parameters["grid"]
            width, tau_n = result.diagnostics["bin_width"], result.diagnostics["tau_n"]
            assert width == (high - low) / result.parameters["bins"]
            mid, half = (low + high) / 2, (k + 1) * width
            centre = result.center - LOW
            assert result.low == (centre + (mid - half) / tau_n) + LOW
            assert result.high == (centre + (mid + half) / tau_n) + LOW


def test_dette_graw_endpoints_are_order_statistics_of_lattice_releases() -> None:
    """dette-graw: ``low = (c - tau_m (t - c) / tau_n) + 2`` with t one of the B releases, a whole number of
    steps of the bootstrap event's grid (the ``1 - alpha / 2`` order statistic), and ``high`` likewise with
    the ``alpha / 2`` one: reproduced exactly."""
    for seed in SEEDS:
        result = _call(X, "dette-graw-mean", seed)
        centre = result.center - LOW
        assert _on(centre, _lattice_grid(_event(result, "center")))
        grid = _lattice_grid(_event(result, "bootstrap"))
        tau_n, tau_m = result.diagnostics["tau_n"], result.diagnostics["tau_m"]
        for end in (result.low, result.high):
            estimate = (centre + (centre - (end - LOW)) * tau_n / tau_m) / grid
            steps = _nearby_integers(estimate)
            candidates = [(centre - float(tau_m * (grid * k - centre)) / tau_n) + LOW for k in steps]
            assert end in candidates, (seed, end)


# ---------------------------------------------------------------------------------------------------------
# the checks catch what they are meant to catch


def _value_plus_lattice_noise(self: Any, value: Any, event: pf.PrivacyEvent, rng: np.random.Generator) -> Any:
    """A broken Gaussian mechanism: exact lattice noise added to the value in floating point (the value is
    not rounded to the grid first), the Mironov-style mistake."""
    values = np.asarray(value, dtype=np.float64)
    plan = event.noise
    assert isinstance(plan, noise.LatticePlan)
    return values + noise.release(np.zeros_like(values), plan, rng)


@pytest.mark.parametrize("case", ["cr-gs-mean", "privsub-mean", "dette-graw-mean", "privboot-mean"])
def test_the_coupling_catches_value_plus_lattice_noise(
    case: str, couple: Callable[..., Coupled], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every method with Gaussian releases, given the broken mechanism: its releases are off their grid, and
    with the same integer noise the neighbour's endpoints differ."""
    monkeypatch.setattr(gaussian_module.GaussianMechanism, "apply", _value_plus_lattice_noise)
    coupled = couple(case, SEEDS[0])
    assert any("different endpoints" in problem for problem in coupled.problems())


@pytest.mark.parametrize(
    ("case", "caught"),
    [
        ("cr-gs-mean", "different endpoints"),
        ("cr-ss-median", "different endpoints"),
        ("blbquant-mean", "different endpoints"),
        ("privsub-median", "exponential selection outside its public set"),
    ],
)
def test_the_coupling_catches_float_noise(case: str, caught: str, couple: Callable[..., Coupled]) -> None:
    """``exact=False`` (floating-point noise, or a float exponential mechanism: for simulations only): the
    Gaussian, PTR-GDP and Laplace float paths release nothing through the lattice, so the neighbour's
    endpoints differ; the float exponential mechanism's points are off its grid."""
    coupled = couple(case, SEEDS[0], exact=False)
    assert any(caught in problem for problem in coupled.problems()), coupled.problems()


def test_the_coupling_sees_non_private_diagnostics(couple: Callable[..., Coupled]) -> None:
    """cr-ss with ``report_nonprivate=True`` (for research only) puts the non-private smooth bounds in its
    diagnostics: same endpoints, but the report differs."""
    coupled = couple("cr-ss-mean", SEEDS[0], report_nonprivate=True)
    assert coupled.problems() == ["same endpoints, but different parameters, diagnostics or ledger"]
