"""Property tests (hypothesis) on the front door: finite ordered intervals, exact ledger totals, determinism."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import privframe as pf

FAST = settings(max_examples=25, deadline=None)


@FAST
@given(
    n=st.integers(min_value=20, max_value=400),
    mu=st.floats(min_value=0.05, max_value=50.0),
    confidence=st.floats(min_value=0.05, max_value=0.995),
    low=st.floats(min_value=-1e3, max_value=1e3),
    width=st.floats(min_value=1e-3, max_value=1e3),
    sampler=st.sampled_from(["wor", "wr"]),
    B=st.integers(min_value=1, max_value=64),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_valid_input_gives_a_finite_ordered_interval_and_exact_ledger(
    n: int, mu: float, confidence: float, low: float, width: float, sampler: str, B: int, seed: int
) -> None:
    x = np.random.default_rng(seed).uniform(low - width, low + 2 * width, size=n)  # some values out of bounds
    options = {"on_reject": "redraw"} if sampler == "wr" else {}

    def call() -> pf.IntervalResult:
        return pf.confidence_interval(
            x,
            "mean",
            method="cr-gs",
            budget=pf.GDP(mu),
            bounds=(low, low + width),
            confidence=confidence,
            sampler=sampler,
            B=B,
            rng=seed,
            **options,
        )

    res = call()
    assert math.isfinite(res.low)
    assert math.isfinite(res.high)
    assert res.low <= res.high
    total = res.privacy.total
    assert isinstance(total, pf.GDP)
    assert math.isclose(total.mu, mu, rel_tol=1e-12)
    again = call()
    assert (again.low, again.high) == (res.low, res.high)


@FAST
@given(
    epsilon=st.floats(min_value=0.05, max_value=20.0),
    delta=st.floats(min_value=1e-12, max_value=1e-2),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_approx_dp_budget_is_never_exceeded(epsilon: float, delta: float, seed: int) -> None:
    x = np.random.default_rng(seed).uniform(size=100)
    res = pf.confidence_interval(
        x, "mean", method="cr-gs", budget=pf.ApproxDP(epsilon, delta), bounds=(0, 1), B=16, rng=seed
    )
    spent = res.privacy.as_approx_dp(delta)
    assert spent.epsilon <= epsilon * (1 + 1e-9)
