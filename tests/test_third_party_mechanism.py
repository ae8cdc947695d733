"""A third-party pure-DP mechanism through every method that takes an additive mechanism (issues 18 and 26).

The mechanism is a small Laplace variant written the way a researcher would: it keeps what it needs in
its event's ``details`` and reads them back in ``apply`` (methods must never overwrite them), calibrates
to pure epsilon, and under a GDP budget runs at the pure epsilon that implies it. It implements only
``plan`` and ``apply`` (no ``pp.DescribedNoise``): the methods that account for the noise draw its law from
the mechanism itself on a public input, and their coverage is measured here.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any, ClassVar

import attrs
import numpy as np
import pytest

import privframe as pf
import privframe.plugin as pp
from privframe.privacy.accounting import gdp_pure_epsilon


@attrs.frozen
class PureLaplace:
    """Laplace noise at ``sqrt(d) Delta / eps`` (float noise: a test double, not a safe release)."""

    name: ClassVar[str] = "test-pure-laplace"
    accepts: ClassVar[Mapping[pp.BudgetKind, pp.BudgetKind]] = MappingProxyType(
        {pf.GDP: pf.GDP, pf.ApproxDP: pf.PureDP, pf.PureDP: pf.PureDP}
    )

    def plan(self, sensitivity: float, budget: pf.Budget, *, label: str, dimension: int = 1) -> pf.PrivacyEvent:
        if isinstance(budget, pf.GDP):
            epsilon, recorded = gdp_pure_epsilon(budget.mu), pf.GDP(budget.mu)  # eps-DP implies mu-GDP
        else:
            epsilon, recorded = budget.epsilon, pf.PureDP(budget.epsilon)
        scale = math.sqrt(dimension) * sensitivity / epsilon
        return pf.PrivacyEvent(
            label=label,
            mechanism=self.name,
            budget=recorded,
            sensitivity=sensitivity,
            noise_scale=scale,
            details={"epsilon_per_coordinate": epsilon / math.sqrt(dimension), "dimension": float(dimension)},
        )

    def apply(self, value: pp.Array, event: pf.PrivacyEvent, rng: np.random.Generator) -> pp.Array:
        epsilon = event.details["epsilon_per_coordinate"]  # raises KeyError if a method replaced the details
        scale = (event.sensitivity or 0.0) / epsilon
        noisy: pp.Array = np.asarray(value, dtype=np.float64) + rng.laplace(0.0, scale, size=np.shape(value))
        return noisy


class Plugin:
    @pp.hookimpl
    def privframe_register_mechanisms(self, registry: pp.MechanismRegistry) -> None:
        registry.add(PureLaplace, asserts_privacy=True)


@pytest.fixture(autouse=True)
def plugin() -> Iterator[None]:
    name = pf.registry.register(Plugin(), name="test-pure-laplace-plugin")
    try:
        yield
    finally:
        pf.registry.unregister(name)


X = np.random.default_rng(0).binomial(1, 0.3, size=3000).astype(float)


def test_cr_gs_under_a_pure_budget_makes_two_pure_releases_of_half_the_epsilon() -> None:
    res = pf.confidence_interval(
        X, "mean", method="cr-gs", mechanism="test-pure-laplace", accountant="approx-dp",
        budget=pf.PureDP(2.0), bounds=(0, 1), rng=1,
    )  # fmt: skip
    assert [(e.label, e.mechanism, e.budget) for e in res.privacy.events] == [
        ("center", "test-pure-laplace", pf.PureDP(1.0)),
        ("radius", "test-pure-laplace", pf.PureDP(1.0)),
    ]
    assert res.privacy.total == pf.PureDP(2.0)
    assert res.low < res.high
    # the noise is what the event says: the centre's scale is Delta_n / (eps / 2)
    assert res.diagnostics["nu_n"] == pytest.approx((1 / 3000) / 1.0)


def test_cr_gs_with_a_pure_budget_defaults_to_laplace() -> None:
    res = pf.confidence_interval(X, "mean", method="cr-gs", budget=pf.PureDP(2.0), bounds=(0, 1), rng=1)
    assert {e.mechanism for e in res.privacy.events} == {"laplace"}
    assert res.privacy.total == pf.PureDP(2.0)


def test_an_approx_budget_is_split_in_epsilon_for_a_pure_mechanism() -> None:
    """Two eps = 1 releases under (2, 1e-6)-DP, not 0.253 each through a GDP conversion."""
    res = pf.confidence_interval(
        X, "mean", method="cr-gs", mechanism="test-pure-laplace", accountant="approx-dp",
        budget=pf.ApproxDP(2.0, 1e-6), bounds=(0, 1), rng=1,
    )  # fmt: skip
    assert [e.budget for e in res.privacy.events] == [pf.PureDP(1.0), pf.PureDP(1.0)]


@pytest.mark.parametrize(
    ("method", "options"),
    [
        ("dette-graw", {"budget": pf.GDP(1.0)}),
        ("privboot", {"budget": pf.ApproxDP(4.89, 1e-6), "B": 200, "ci": "standard"}),
    ],
)
def test_gdp_baselines_run_with_the_mechanism_and_keep_its_details(method: str, options: dict[str, Any]) -> None:
    res = pf.confidence_interval(
        X, "mean", method=method, mechanism="test-pure-laplace", bounds=(0, 1), rng=2, **options
    )
    assert res.low <= res.high
    events = res.privacy.events
    assert events
    assert all(e.mechanism == "test-pure-laplace" and "epsilon_per_coordinate" in e.details for e in events)


def test_privsub_runs_the_mechanism_as_its_private_estimator() -> None:
    """PrivSub under an (eps, delta) budget calls the pure mechanism T + 1 times through its estimator."""
    res = pf.confidence_interval(
        X, "mean", method="privsub", mechanism="test-pure-laplace", budget=pf.ApproxDP(2.0, 1e-6), bounds=(0, 1),
        rng=3,
    )  # fmt: skip
    assert res.low <= res.high
    assert {e.mechanism for e in res.privacy.events} == {"test-pure-laplace"}
    assert res.privacy.as_approx_dp(1e-6).epsilon <= 2.0 + 1e-9


def test_dette_graw_splits_a_pure_budget_in_epsilon_with_the_mechanism() -> None:
    res = pf.confidence_interval(
        X, "mean", method="dette-graw", mechanism="test-pure-laplace", accountant="approx-dp",
        budget=pf.PureDP(2.0), calibration="composition", B=100, bounds=(0, 1), rng=4,
    )  # fmt: skip
    center, boot = res.privacy.events
    assert (center.budget, boot.budget, boot.count) == (pf.PureDP(1.0), pf.PureDP(0.01), 100)
    assert res.privacy.total == pf.PureDP(2.0)
    assert res.low < res.high


def test_privboot_removes_the_mechanisms_own_noise_variance() -> None:
    """``ci='standard'`` subtracts the law's variance (2 b^2 for Laplace scale b), not b^2: the mechanism does not
    describe its noise, so privboot draws 2^18 values of it on zeros (relative error of the sd about 0.2%)."""
    res = pf.confidence_interval(
        X, "mean", method="privboot", mechanism="test-pure-laplace", budget=pf.ApproxDP(4.89, 1e-6), B=200,
        ci="standard", bounds=(0, 1), rng=5,
    )  # fmt: skip
    (event,) = res.privacy.events
    assert res.diagnostics["sigma"] == pytest.approx(math.sqrt(2.0) * event.noise_scale, rel=0.01)  # type: ignore[operator]


def test_a_sampled_noise_law_matches_the_described_one() -> None:
    """The law drawn from ``apply`` on zeros against the stated law of the standard Laplace mechanism."""
    mine = pf.registry.create("mechanism", "test-pure-laplace")
    theirs = pf.registry.create("mechanism", "laplace")
    event = mine.plan(0.01, pf.PureDP(1.0), label="x")
    described = theirs.plan(0.01, pf.PureDP(1.0), label="x")
    sampled, stated = pp.noise_law(mine, event), pp.noise_law(theirs, described)
    assert (sampled.described, stated.described) == (False, True)
    rng = np.random.default_rng(7)
    assert sampled.sd(rng) == pytest.approx(stated.sd(rng), rel=0.01)
    # an upper bound: above the true 0.95 quantile, and by no more than a few Monte Carlo SEs
    upper, truth = sampled.quantile(0.95, rng), stated.quantile(0.95, rng)
    assert truth * (1 - 1e-5) <= upper <= truth * 1.05
    draws = sampled.draws((400, 2), rng)
    assert draws.shape == (400, 2)
    assert abs(float(np.mean(draws))) < 5 * math.sqrt(2.0) * 0.01 / math.sqrt(800)


def _coverage(method: str, trials: int, **options: object) -> tuple[float, float]:
    """Seeded Monte Carlo coverage of the Bernoulli(0.3) mean at n = 1500 with the third-party mechanism."""
    hits = 0
    for seed in np.random.SeedSequence(26).spawn(trials):
        data_seed, run_seed = seed.spawn(2)
        x = np.random.default_rng(data_seed).binomial(1, 0.3, size=1500).astype(float)
        res = pf.confidence_interval(
            x, "mean", method=method, mechanism="test-pure-laplace", bounds=(0, 1), rng=run_seed, **options
        )
        hits += res.low <= 0.3 <= res.high
    return hits / trials, math.sqrt(0.9 * 0.1 / trials)


@pytest.mark.parametrize(
    ("method", "options"),
    [
        ("cr-gs", {"budget": pf.PureDP(2.0), "accountant": "approx-dp", "B": 300}),  # the noise-aware radius
        ("dette-graw", {"budget": pf.PureDP(2.0), "accountant": "approx-dp", "calibration": "composition", "B": 200}),
        ("privboot", {"budget": pf.ApproxDP(4.89, 1e-6), "B": 200, "ci": "standard"}),
    ],
)
def test_an_undescribed_mechanism_covers_through_the_noise_aware_methods(
    method: str, options: dict[str, object]
) -> None:
    coverage, se = _coverage(method, 120, **options)
    assert coverage >= 0.9 - 3 * se, (method, coverage)


def test_privboot_deconvolution_refuses_noise_that_is_not_gaussian() -> None:
    with pytest.raises(pf.ConfigError, match=r"^ci: .*assumes Gaussian noise.*ci='standard'"):
        pf.confidence_interval(
            X, "mean", method="privboot", mechanism="test-pure-laplace", budget=pf.ApproxDP(4.89, 1e-6), B=200,
            bounds=(0, 1), rng=5,
        )  # fmt: skip


def test_blbquant_runs_the_mechanism_for_its_mean() -> None:
    res = pf.confidence_interval(
        X, "mean", method="blbquant", mechanism="test-pure-laplace", budget=pf.PureDP(2.0), bounds=(0, 1), rng=6,
        min_block=0,
    )  # fmt: skip
    assert res.low <= res.high
    # its sparse-vector step (above-threshold) is its own; the releases of the mean use the mechanism
    assert "test-pure-laplace" in {e.mechanism for e in res.privacy.events}
    assert res.privacy.total is not None
    assert res.privacy.total.epsilon <= 2.0 * (1 + 1e-12)  # type: ignore[union-attr]
