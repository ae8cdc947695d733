"""A third-party pure-DP mechanism through every method that takes an additive mechanism (issue 18).

The mechanism is a small Laplace variant written the way a researcher would: it keeps what it needs in
its event's ``details`` and reads them back in ``apply`` (methods must never overwrite them), calibrates
to pure epsilon, and under a GDP budget runs at the pure epsilon that implies it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import ClassVar

import attrs
import numpy as np
import pytest

import privframe as pf
from privframe.privacy.accounting import gdp_pure_epsilon


@attrs.frozen
class PureLaplace:
    """Laplace noise at ``sqrt(d) Delta / eps`` (float noise: a test double, not a safe release)."""

    name: ClassVar[str] = "test-pure-laplace"

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

    def apply(self, value: pf.Array, event: pf.PrivacyEvent, rng: np.random.Generator) -> pf.Array:
        epsilon = event.details["epsilon_per_coordinate"]  # raises KeyError if a method replaced the details
        scale = (event.sensitivity or 0.0) / epsilon
        noisy: pf.Array = np.asarray(value, dtype=np.float64) + rng.laplace(0.0, scale, size=np.shape(value))
        return noisy

    def noise_quantile(self, noise_scale: float, p: float) -> float:
        return noise_scale * (-math.log(2.0 * (1.0 - p)) if p >= 0.5 else math.log(2.0 * p))

    def noise_sd(self, noise_scale: float) -> float:
        return math.sqrt(2.0) * noise_scale

    def noise_draws(self, noise_scale: float, shape: tuple[int, ...], rng: np.random.Generator) -> pf.Array:
        draws: pf.Array = rng.laplace(0.0, noise_scale, size=shape)
        return draws


class Plugin:
    @pf.hookimpl
    def privframe_register_mechanisms(self, registry: pf.MechanismRegistry) -> None:
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


@pytest.mark.parametrize(("method", "options"), [("dette-graw", {}), ("privboot", {"B": 200, "ci": "standard"})])
def test_gdp_baselines_run_with_the_mechanism_and_keep_its_details(method: str, options: dict[str, object]) -> None:
    res = pf.confidence_interval(
        X, "mean", method=method, mechanism="test-pure-laplace", budget=pf.GDP(1.0), bounds=(0, 1), rng=2,
        **options,
    )  # fmt: skip
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
    """``ci='standard'`` subtracts the law's variance (2 b^2 for Laplace scale b), not b^2."""
    res = pf.confidence_interval(
        X, "mean", method="privboot", mechanism="test-pure-laplace", budget=pf.GDP(1.0), B=200, ci="standard",
        bounds=(0, 1), rng=5,
    )  # fmt: skip
    (event,) = res.privacy.events
    assert res.diagnostics["sigma"] == pytest.approx(math.sqrt(2.0) * event.noise_scale)  # type: ignore[operator]


def test_privboot_deconvolution_refuses_noise_that_is_not_gaussian() -> None:
    with pytest.raises(pf.ConfigError, match=r"^ci: .*assumes Gaussian noise.*ci='standard'"):
        pf.confidence_interval(
            X, "mean", method="privboot", mechanism="test-pure-laplace", budget=pf.GDP(1.0), B=200,
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
