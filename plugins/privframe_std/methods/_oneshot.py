"""The common skeleton of the one-shot methods (algorithms.md section 3, steps 1-4)."""

from __future__ import annotations

import attrs
import numpy as np

import privframe as pf
from privframe import engine
from privframe.errors import ConfigError

__all__ = ["OneShotRoots", "compute_roots", "require"]


@attrs.frozen
class OneShotRoots:
    """theta(D), the (1 - alpha) order statistic r of the root norms, and the resampling settings.

    ``theta_hat`` and ``r`` are non-private; a private method must privatise them before release.
    """

    theta_hat: pf.Array
    r: float
    n: int
    m: int
    B: int
    kappa: int
    replace: bool
    tau_m: float
    tau_n: float


def require(part: object, kind: str, method: str) -> object:
    """Fail clearly when a method is run without a part it needs."""
    if part is None:
        raise ConfigError(f"{kind}: method '{method}' needs a {kind}")
    return part


def compute_roots(
    statistic: pf.Statistic,
    data: pf.Array,
    sampler: pf.Sampler,
    confidence: float,
    rng: np.random.Generator,
) -> OneShotRoots:
    """Steps 1-3: resample, evaluate theta on every resample (chunked), take the order statistic of the roots.

    ``r = R_(k)`` with ``k = ceil(confidence * B)`` and ``R_i = ||theta*_i - theta_hat||_2``.
    """
    n = data.shape[0]
    resamples = engine.draw_resamples(sampler, n, rng)
    theta_hat = engine.evaluate_full(statistic, data)
    theta_star = engine.evaluate_resamples(statistic, data, resamples, theta_hat.shape[0])
    roots = np.linalg.norm(theta_star - theta_hat, axis=1)
    k = engine.order_statistic_index(confidence, resamples.B)
    r = float(np.partition(roots, k)[k])
    return OneShotRoots(
        theta_hat=theta_hat,
        r=r,
        n=n,
        m=resamples.m,
        B=resamples.B,
        kappa=resamples.kappa,
        replace=resamples.replace,
        tau_m=engine.rate(statistic, resamples.m),
        tau_n=engine.rate(statistic, n),
    )
