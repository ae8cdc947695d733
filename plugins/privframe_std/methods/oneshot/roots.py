"""The common skeleton of the one-shot methods (algorithms.md section 3, steps 1-4)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

import privframe as pf
from privframe import engine
from privframe.errors import ConfigError

__all__ = [
    "ORDER_STATISTIC_RULES",
    "OneShotRoots",
    "SmoothRoots",
    "compute_roots",
    "compute_smooth_roots",
    "fpc_factor",
    "order_statistic",
    "require",
]


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


def require(part: object, kind: str, method: str, protocol: type[Any] | None = None) -> object:
    """The part a method needs, or a ``ConfigError`` when it is missing or of the wrong kind.

    With ``protocol`` the part must implement it (e.g. CR-GS needs an additive-noise ``pf.Mechanism``, not a
    smooth-bound or selection mechanism).
    """
    if part is None:
        raise ConfigError(f"{kind}: method '{method}' needs a {kind}")
    if protocol is not None and not isinstance(part, protocol):
        name = getattr(part, "name", type(part).__name__)
        raise ConfigError(f"{kind}: method '{method}' cannot use {kind} '{name}' (it needs a {protocol.__name__})")
    return part


def fpc_factor(enabled: bool, statistic: pf.Statistic, n: int, m: int, replace: bool) -> float:
    """``1 / sqrt(1 - m / n)`` when the finite-population correction applies, else 1.

    It applies to without-replacement subsamples of sqrt(k)-rate statistics: a size-m subsample's spread
    around theta(D) is ``sqrt(1 - m/n)`` times that of an independent size-m sample.
    """
    if not enabled or replace or m >= n:
        return 1.0
    if not math.isclose(engine.rate(statistic, m), math.sqrt(m), rel_tol=1e-12):
        return 1.0
    return 1.0 / math.sqrt(1.0 - m / n)


ORDER_STATISTIC_RULES = ("inverted_cdf", "closest_observation", "lower", "higher", "nearest")
"""numpy quantile methods that return one of the roots: each fixes an order statistic given B and alpha."""


def order_statistic(roots: pf.Array, confidence: float, rule: str = "inverted_cdf") -> float:
    """The radius order statistic: by default ``R_(k)``, ``k = ceil(confidence * B)`` (numpy ``inverted_cdf``).

    Any rule that picks a fixed order statistic (its rank depends only on B and the confidence) keeps the
    privacy analysis, which only uses that an order statistic is 1-Lipschitz in the sup norm.
    """
    if rule == "inverted_cdf":
        k = engine.order_statistic_index(confidence, roots.shape[0])
        return float(np.partition(roots, k)[k])
    return float(np.quantile(roots, confidence, method=rule))  # type: ignore[call-overload]


def _roots(
    statistic: pf.Statistic,
    resamples: pf.Resamples,
    n: int,
    theta_hat: pf.Array,
    theta_star: pf.Array,
    confidence: float,
    rule: str,
) -> OneShotRoots:
    roots = np.linalg.norm(theta_star - theta_hat, axis=1)
    return OneShotRoots(
        theta_hat=theta_hat,
        r=order_statistic(roots, confidence, rule),
        n=n,
        m=resamples.m,
        B=resamples.B,
        kappa=resamples.kappa,
        replace=resamples.replace,
        tau_m=engine.rate(statistic, resamples.m),
        tau_n=engine.rate(statistic, n),
    )


def compute_roots(
    statistic: pf.Statistic,
    data: pf.Array,
    sampler: pf.Sampler,
    confidence: float,
    rng: np.random.Generator,
    rule: str = "inverted_cdf",
) -> OneShotRoots:
    """Steps 1-3: resample, evaluate theta on every resample (chunked), take the order statistic of the roots.

    ``r = R_(k)`` with ``k = ceil(confidence * B)`` and ``R_i = ||theta*_i - theta_hat||_2``.
    """
    n = data.shape[0]
    resamples = engine.draw_resamples(sampler, n, rng)
    theta_hat = engine.evaluate_full(statistic, data)
    theta_star = engine.evaluate_resamples(statistic, data, resamples, theta_hat.shape[0])
    return _roots(statistic, resamples, n, theta_hat, theta_star, confidence, rule)


@attrs.frozen
class SmoothRoots:
    """:class:`OneShotRoots` plus the smoothness beta and the smooth bounds (all non-private)."""

    roots: OneShotRoots
    beta: float
    rho: float
    center_bound: float
    max_resample_bound: float


def compute_smooth_roots(
    statistic: pf.Statistic,
    data: pf.Array,
    sampler: pf.Sampler,
    confidence: float,
    rng: np.random.Generator,
    *,
    bounds: pf.Bounds | pf.L2Ball | None,
    beta_rule: Callable[[pf.Resamples], tuple[float, float]],
    rule: str = "inverted_cdf",
) -> SmoothRoots:
    """Steps 1-3 plus ``SS_beta`` on the full data and on every resample (one pass over the resamples).

    ``beta_rule(resamples) -> (beta, rho)`` runs once the sampler has fixed kappa and B.
    """
    n = data.shape[0]
    resamples = engine.draw_resamples(sampler, n, rng)
    beta, rho = beta_rule(resamples)
    theta_hat = engine.evaluate_full(statistic, data)
    center_bound = engine.smooth_sensitivity(statistic, data, beta, bounds)
    theta_star, smooth = engine.evaluate_resamples_smooth(statistic, data, resamples, theta_hat.shape[0], beta, bounds)
    return SmoothRoots(
        roots=_roots(statistic, resamples, n, theta_hat, theta_star, confidence, rule),
        beta=beta,
        rho=rho,
        center_bound=center_bound,
        max_resample_bound=float(smooth.max()),
    )
