"""Failure semantics: documented failures happen at their documented rates and release nothing.

- ``SamplerRejected`` (the multiplicity-constrained ``wr`` sampler, ``on_reject="raise"``) happens with
  probability at most rho; its measured rate matches the exact rejection probability.
- ``PTRFailed`` (classic propose-test-release) happens with probability
  ``1 - Phi((mu_test / gamma) ln(b_0 / s) - z_{1-delta})``, measured through the mechanism and through CR-SS.
- A failed call releases nothing: no noise is drawn for any release that did not happen, and no result (so
  no partial ledger) leaves the call. A successful call has exactly one ledger event per noisy release: the
  ledger never reports a release as unspent.
- A spending limit refuses the release that would exceed it before its noise is drawn (draws are counted on
  every generator the method spawns).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any, ClassVar

import attrs
import numpy as np
import pytest
from scipy import special, stats

import privframe as pf
import privframe.plugin as pp
from privframe.plugin.spending import PrivacySpender
from privframe_std.samplers import kappa_star

SENTINEL_TEXT = "123456"

# ---------------------------------------------------------------------------------------------------------
# Instrumentation: counting generators, and mechanisms that record what they release


class CountingGenerator(np.random.Generator):
    """A numpy Generator that counts noise draws: calls of the float distributions, and exact lattice releases
    (``pp.noise.release`` and ``release_rows``, which draw integers; counted by the fixture below)."""

    def __init__(self, bit_generator: np.random.BitGenerator) -> None:
        super().__init__(bit_generator)
        self.draws = 0

    def standard_normal(self, *args: Any, **kwargs: Any) -> Any:
        self.draws += 1
        return super().standard_normal(*args, **kwargs)

    def normal(self, *args: Any, **kwargs: Any) -> Any:
        self.draws += 1
        return super().normal(*args, **kwargs)

    def laplace(self, *args: Any, **kwargs: Any) -> Any:
        self.draws += 1
        return super().laplace(*args, **kwargs)

    def random(self, *args: Any, **kwargs: Any) -> Any:
        self.draws += 1
        return super().random(*args, **kwargs)


@pytest.fixture(autouse=True)
def _count_lattice_releases(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each exact lattice release from a counting generator counts as one draw."""
    original, original_rows = pp.noise.release, pp.noise.release_rows

    def counted(value: Any, plan: Any, rng: np.random.Generator) -> Any:
        if isinstance(rng, CountingGenerator):
            rng.draws += 1
        return original(value, plan, rng)

    def counted_rows(values: Any, plans: Any, rng: np.random.Generator) -> Any:
        if isinstance(rng, CountingGenerator):
            rng.draws += 1
        return original_rows(values, plans, rng)

    monkeypatch.setattr(pp.noise, "release", counted)
    monkeypatch.setattr(pp.noise, "release_rows", counted_rows)


@pytest.fixture
def generators(monkeypatch: pytest.MonkeyPatch) -> list[CountingGenerator]:
    """Every generator a method spawns from its run context, in order, as a counting generator."""
    spawned: list[CountingGenerator] = []
    original = pp.RunContext.generators

    def spawn(self: pp.RunContext, count: int) -> list[np.random.Generator]:
        made = [CountingGenerator(g.bit_generator) for g in original(self, count)]
        spawned.extend(made)
        return list(made)

    monkeypatch.setattr(pp.RunContext, "generators", spawn)
    return spawned


RELEASED: list[str] = []  # labels of the releases whose noise was actually drawn, in order


@attrs.frozen
class RecordingGaussian:
    """The Gaussian mechanism; optionally overstates the budget of one release (to trip the limit)."""

    name: ClassVar[str] = "test-recording-gaussian"
    accepts: ClassVar[Mapping[pp.BudgetKind, pp.BudgetKind]] = MappingProxyType({pf.GDP: pf.GDP, pf.ApproxDP: pf.GDP})
    greedy: str = ""  # the label whose planned event claims 100 times its budget

    def plan(self, sensitivity: float, budget: pf.Budget, *, label: str, dimension: int = 1) -> pf.PrivacyEvent:
        gaussian: pp.Mechanism = pf.registry.create("mechanism", "gaussian")
        event = gaussian.plan(sensitivity, budget, label=label, dimension=dimension)
        if label == self.greedy:
            assert isinstance(event.budget, pf.GDP)
            event = attrs.evolve(event, budget=pf.GDP(100 * event.budget.mu))
        return event

    def apply(self, value: pp.Array, event: pf.PrivacyEvent, rng: np.random.Generator) -> pp.Array:
        RELEASED.append(event.label)
        gaussian: pp.Mechanism = pf.registry.create("mechanism", "gaussian")
        return gaussian.apply(value, event, rng)

    def noise_quantile(self, event: pf.PrivacyEvent, p: float) -> float:
        law: pp.DescribedNoise = pf.registry.create("mechanism", "gaussian")
        return law.noise_quantile(event, p)

    def noise_sd(self, event: pf.PrivacyEvent) -> float:
        return event.noise_scale or 0.0

    def noise_draws(self, event: pf.PrivacyEvent, shape: tuple[int, ...], rng: np.random.Generator) -> pp.Array:
        law: pp.DescribedNoise = pf.registry.create("mechanism", "gaussian")
        return law.noise_draws(event, shape, rng)


@attrs.frozen
class RecordingPTR:
    """ptr-gdp (any variant), recording each release that got past its test."""

    name: ClassVar[str] = "test-recording-ptr"
    accepts: ClassVar[Mapping[pp.BudgetKind, pp.BudgetKind]] = MappingProxyType({pf.GDP: pf.GDP})
    variant: str = "bound"

    def _inner(self) -> Any:
        return pf.registry.create("mechanism", "ptr-gdp", {"variant": self.variant})

    def plan_smooth(self, gamma: float, budget: pf.Budget, *, label: str, dimension: int = 1) -> pf.PrivacyEvent:
        event: pf.PrivacyEvent = self._inner().plan_smooth(gamma, budget, label=label, dimension=dimension)
        return event

    def release_smooth(self, value: pp.Array, log_bound: float, event: pf.PrivacyEvent, rng: Any, **kwargs: Any) -> Any:
        out = self._inner().release_smooth(value, log_bound, event, rng, **kwargs)
        RELEASED.append(event.label)
        return out

    def noise_quantile(self, event: pf.PrivacyEvent, p: float) -> float:
        return float(self._inner().noise_quantile(event, p))

    def noise_sd(self, event: pf.PrivacyEvent) -> float:
        return event.noise_scale or 0.0

    def noise_draws(self, event: pf.PrivacyEvent, shape: tuple[int, ...], rng: np.random.Generator) -> pp.Array:
        draws: pp.Array = self._inner().noise_draws(event, shape, rng)
        return draws


class Instruments:
    @pp.hookimpl
    def privframe_register_mechanisms(self, registry: pp.MechanismRegistry) -> None:
        registry.add(RecordingGaussian, asserts_privacy=True)
        registry.add(RecordingPTR, asserts_privacy=True)


@pytest.fixture(autouse=True)
def instruments() -> Iterator[None]:
    name = pf.registry.register(Instruments(), name="test-failure-instruments")
    RELEASED.clear()
    try:
        yield
    finally:
        pf.registry.unregister(name)
        RELEASED.clear()


def _bernoulli(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).binomial(1, 0.3, size=n).astype(float)


# ---------------------------------------------------------------------------------------------------------
# SamplerRejected


def exact_rejection_probability(n: int, m: int, B: int, kappa: int) -> float:
    """P(some record appears more than kappa times in some of B rows of m uniform draws from n), exactly.

    One row: ``P(max count <= kappa) = m! / n^m [x^m] (sum_{j <= kappa} x^j / j!)^n``; rows are independent.
    """
    poly = np.array([1.0 / math.factorial(j) for j in range(kappa + 1)] + [0.0] * (m - kappa))
    result = np.zeros(m + 1)
    result[0] = 1.0
    power, e = poly, n
    while e:
        if e & 1:
            result = np.convolve(result, power)[: m + 1]
        power = np.convolve(power, power)[: m + 1]
        e >>= 1
    accept_row = result[m] * math.exp(math.lgamma(m + 1) - m * math.log(n))
    return float(1.0 - accept_row**B)


# kappa* = 3 and a rejection probability ~0.064, far below rho = 0.5 (so rejections are common enough to count)
N_REJ, M_REJ, B_REJ, RHO_REJ = 200, 23, 64, 0.5


def _cr_gs_wr(x: np.ndarray, *, on_reject: str, rng: int) -> pf.IntervalResult:
    """CR-GS with the multiplicity-constrained sampler at the rejection-test settings, recording releases."""
    return pf.confidence_interval(
        x,
        "mean",
        method="cr-gs",
        budget=pf.GDP(1.0),
        bounds=(0, 1),
        sampler="wr",
        mechanism="test-recording-gaussian",
        m=M_REJ,
        B=B_REJ,
        rho=RHO_REJ,
        on_reject=on_reject,
        rng=rng,
    )


def test_sampler_rejected_rate_matches_its_probability_and_releases_nothing() -> None:
    """600 seeded calls: the rejection rate must match the exact probability p ~ 0.064 within 4 SE (SE =
    sqrt(p (1 - p) / 600) = 0.010) and stay below the documented bound rho. A rejected call drew no noise
    and returned nothing; an accepted call released exactly what its ledger lists."""
    kappa = kappa_star(N_REJ, M_REJ, B_REJ, RHO_REJ)
    assert kappa == 3
    p = exact_rejection_probability(N_REJ, M_REJ, B_REJ, kappa)
    assert 0.04 < p < 0.09
    x = _bernoulli(N_REJ, 0)
    x[3] = 0.123456789
    calls, messages = 600, []
    for seed in range(calls):
        RELEASED.clear()
        try:
            res = _cr_gs_wr(x, on_reject="raise", rng=seed)
        except pf.SamplerRejected as exc:
            messages.append(str(exc))
            assert RELEASED == []  # nothing released: the sampler runs before any noise
        else:
            assert RELEASED == [e.label for e in res.privacy.events] == ["center", "radius"]
    assert all(m.startswith("sampler:") and SENTINEL_TEXT not in m for m in messages)
    rate = len(messages) / calls
    se = math.sqrt(p * (1 - p) / calls)
    assert abs(rate - p) <= 4 * se, (rate, p)
    assert rate <= RHO_REJ


def test_redraw_never_rejects_and_keeps_the_ledger_complete() -> None:
    x = _bernoulli(N_REJ, 1)
    for seed in range(60):  # ~4 of these reject with on_reject="raise"
        RELEASED.clear()
        res = _cr_gs_wr(x, on_reject="redraw", rng=seed)
        assert [e.label for e in res.privacy.events] == RELEASED
        assert res.parameters["kappa"] == 3


# ---------------------------------------------------------------------------------------------------------
# PTRFailed


def _proposal_for(fail: float, bound: float, gamma: float, mu_test: float, delta: float) -> float:
    """The proposal b_0 whose classic test fails with probability ``fail`` for the bound s."""
    c = float(stats.norm.ppf(1.0 - fail))
    return bound * math.exp((gamma / mu_test) * (c - special.ndtri(delta)))


def test_ptr_failure_rate_matches_the_formula_and_a_failure_draws_no_release_noise() -> None:
    """Classic PTR-GDP fails with probability 1 - Phi((mu_test / gamma) ln(b_0 / s) - z_{1-delta}); with b_0
    chosen for 0.3, 3000 draws have SE sqrt(0.21 / 3000) = 0.0084 (4 SE = 0.033). A failed test has drawn
    Z_0 only (one draw); a passed one Z_0 and the release noise Z_1 (two)."""
    mechanism = pf.registry.create("mechanism", "ptr-gdp", {"variant": "classic"})
    budget = pf.GDP(1.0, delta=1e-6)
    gamma, bound = 0.2, 2.5
    event = mechanism.plan_smooth(gamma, budget, label="center")
    proposal = _proposal_for(0.3, bound, gamma, event.details["mu_test"], budget.delta)
    draws, messages = 3000, []
    for seed in range(draws):
        rng = CountingGenerator(np.random.PCG64(seed))
        try:
            out = mechanism.release_smooth(np.array([0.5]), math.log(bound), event, rng, proposal=proposal)
        except pf.PTRFailed as exc:
            messages.append(str(exc))
            assert rng.draws == 1
        else:
            assert rng.draws == 2
            assert out.passed
            assert out.bound == proposal
    assert all(m.startswith("ptr-gdp:") and "nothing was released" in m for m in messages)
    assert abs(len(messages) / draws - 0.3) <= 4 * math.sqrt(0.21 / draws)


def test_ptr_global_fallback_never_fails_and_says_so() -> None:
    mechanism = pf.registry.create("mechanism", "ptr-gdp", {"variant": "classic", "on_fail": "global"})
    event = mechanism.plan_smooth(0.2, pf.GDP(1.0, delta=1e-6), label="center")
    out = mechanism.release_smooth(
        np.array([0.5]), math.log(2.5), event, np.random.default_rng(0), proposal=1e-9, fallback_sensitivity=4.0
    )
    assert not out.passed
    assert out.bound == 4.0
    expected = 4.0 / event.details["mu_release"]  # the exact lattice noise is at most max_scale_ratio above
    assert expected <= out.noise_scale <= expected * pp.noise.max_scale_ratio(event.details["mu_release"])


def test_cr_ss_failure_rate_through_the_front_door() -> None:
    """CR-SS with classic PTR: the centre test uses gamma = beta, mu_test = mu / 2 and delta / 2 (half the
    budget each for centre and radius). With the centre proposal set for a 0.3 failure probability (and a
    radius proposal that always passes), 250 seeded calls have SE sqrt(0.21 / 250) = 0.029; allow 4 SE. A
    call whose centre test failed drew no release noise for the centre and touched nothing for the radius."""
    x = np.random.default_rng(5).normal(0.0, 1.0, size=400)
    x[11] = 0.123456789
    common: dict[str, Any] = {
        "method": "cr-ss",
        "budget": pf.GDP(1.0, delta=1e-4),
        "bounds": (-4.0, 4.0),
        "B": 100,
        "mechanism": {"name": "test-recording-ptr", "variant": "classic"},
    }
    probe = pf.confidence_interval(x, "median", **common, center_proposal=1e9, radius_proposal=1e9, rng=0)
    beta, mu_test = probe.diagnostics["beta"], probe.diagnostics["mu_test"]
    statistic = pf.registry.create("statistic", "median")
    s_center = math.exp(statistic.log_smooth_sensitivity(np.clip(x, -4.0, 4.0), beta, pf.Bounds(-4.0, 4.0)))
    proposal = _proposal_for(0.3, s_center, beta, mu_test, 1e-4 / 2)
    calls, messages = 250, []
    for seed in range(calls):
        RELEASED.clear()
        try:
            res = pf.confidence_interval(x, "median", **common, center_proposal=proposal, radius_proposal=1e9, rng=seed)
        except pf.PTRFailed as exc:
            messages.append(str(exc))
            assert RELEASED == []
        else:
            assert RELEASED == [e.label for e in res.privacy.events] == ["center", "radius"]
    assert all("'center'" in m and SENTINEL_TEXT not in m for m in messages)
    assert abs(len(messages) / calls - 0.3) <= 4 * math.sqrt(0.21 / calls), len(messages) / calls


def test_cr_ss_radius_failure_after_the_centre_release_still_releases_nothing(
    generators: list[CountingGenerator],
) -> None:
    """The centre passes and is computed with noise, then the radius test fails: the call raises, so the noisy
    centre never leaves it. The radius stream drew its test noise only."""
    x = np.random.default_rng(6).normal(0.0, 1.0, size=400)
    with pytest.raises(pf.PTRFailed, match="'radius'"):
        pf.confidence_interval(
            x,
            "median",
            method="cr-ss",
            budget=pf.GDP(1.0, delta=1e-4),
            bounds=(-4.0, 4.0),
            B=100,
            mechanism={"name": "ptr-gdp", "variant": "classic"},
            center_proposal=1e9,
            radius_proposal=1e-12,
            rng=3,
        )
    _, center_rng, radius_rng, _ = generators[-4:]
    assert center_rng.draws == 2  # Z_0 and Z_1 of the centre
    assert radius_rng.draws == 1  # Z_0 of the radius test only


# ---------------------------------------------------------------------------------------------------------
# A limit refuses before any noise is drawn


@pytest.mark.parametrize("budget", [pf.GDP(1.0), pf.ApproxDP(2.0, 1e-6)], ids=["gdp", "approx-dp"])
def test_limit_refuses_the_first_release_before_any_noise(
    budget: pf.Budget, generators: list[CountingGenerator]
) -> None:
    with pytest.raises(pf.BudgetError, match=r"^budget: releasing 'center' would spend .*nothing was released"):
        pf.confidence_interval(
            _bernoulli(500, 2),
            "mean",
            method="cr-gs",
            budget=budget,
            bounds=(0, 1),
            mechanism={"name": "test-recording-gaussian", "greedy": "center"},
            rng=0,
        )
    _, center_rng, radius_rng, _ = generators[-4:]
    assert (center_rng.draws, radius_rng.draws) == (0, 0)
    assert RELEASED == []


def test_limit_refuses_the_second_release_before_its_noise(generators: list[CountingGenerator]) -> None:
    with pytest.raises(pf.BudgetError, match=r"^budget: releasing 'radius'"):
        pf.confidence_interval(
            _bernoulli(500, 3),
            "mean",
            method="cr-gs",
            budget=pf.GDP(1.0),
            bounds=(0, 1),
            mechanism={"name": "test-recording-gaussian", "greedy": "radius"},
            rng=0,
        )
    _, center_rng, radius_rng, _ = generators[-4:]
    assert (center_rng.draws, radius_rng.draws) == (1, 0)
    assert RELEASED == ["center"]  # computed, but the call raised: it never left


def test_limit_refuses_a_smooth_release_before_its_test(generators: list[CountingGenerator]) -> None:
    """PTR charges the budget before the test runs (the test looks at the data); an overspend is refused
    before Z_0 is drawn."""
    spender = PrivacySpender(pf.registry.create("accountant", "gdp"), pf.GDP(1.0, delta=1e-6))
    ptr = pf.registry.create("mechanism", "ptr-gdp")
    rng = CountingGenerator(np.random.PCG64(0))
    with pytest.raises(pf.BudgetError, match=r"^budget: releasing 'too-much'"):
        spender.release_smooth(ptr, np.array([0.5]), 1.0, 0.1, pf.GDP(2.0, delta=1e-7), label="too-much", rng=rng)
    assert rng.draws == 0
    assert spender.ledger().events == ()


def test_every_release_of_a_successful_call_is_on_the_ledger() -> None:
    res = pf.confidence_interval(
        _bernoulli(500, 4),
        "mean",
        method="cr-gs",
        budget=pf.GDP(1.0),
        bounds=(0, 1),
        mechanism="test-recording-gaussian",
        rng=0,
    )
    assert [e.label for e in res.privacy.events] == RELEASED
    assert res.privacy.total == pf.registry.create("accountant", "gdp").compose(res.privacy.events)
    RELEASED.clear()
    res = pf.confidence_interval(
        np.random.default_rng(7).normal(size=400),
        "median",
        method="cr-ss",
        budget=pf.GDP(1.0, delta=1e-4),
        bounds=(-4, 4),
        B=100,
        mechanism="test-recording-ptr",
        rng=0,
    )
    assert RELEASED == [e.label for e in res.privacy.events] == ["center", "radius"]
    assert isinstance(res.privacy.total, pf.GDP)
    assert res.privacy.total.mu == pytest.approx(1.0, rel=1e-12)
    assert res.privacy.total.delta == pytest.approx(1e-4, rel=1e-12)
