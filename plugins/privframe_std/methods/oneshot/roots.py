"""The common skeleton of the one-shot methods (``docs/algorithms.md``, section 3, steps 1-4)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import attrs
import numpy as np

import privframe.plugin as pp
from privframe_std.distributed.evaluate import evaluate_distributed
from privframe_std.distributed.local import evaluate_resamples

__all__ = [
    "DEFAULT_SIZES",
    "ORDER_STATISTIC_RULES",
    "OneShotRoots",
    "SmoothRoots",
    "compute_roots",
    "compute_smooth_roots",
    "fpc_factor",
    "order_statistic",
]

DEFAULT_SIZES: Mapping[str, Any] = MappingProxyType({"m": "n/log(n)", "B": 1000})
"""Resample sizes of the one-shot family: ``m = ceil(n / ln n)``, B = 1000 ([choice])."""

ORDER_STATISTIC_RULES = ("inverted_cdf", "closest_observation", "lower", "higher", "nearest")
"""numpy quantile methods that return one of the roots: each fixes an order statistic given B and alpha."""


@attrs.frozen
class OneShotRoots:
    """theta(D), the (1 - alpha) order statistic r of the root norms, and the resampling settings.

    ``theta_hat``, ``r`` and ``deviations`` (``theta*_i - theta_hat``, one row per resample) are non-private;
    a private method must privatise what it derives from them before release.
    """

    theta_hat: pp.Array
    r: float
    deviations: pp.Array
    n: int
    m: int
    B: int
    kappa: int
    replace: bool
    tau_m: float
    tau_n: float


def fpc_factor(enabled: bool, ctx: pp.RunContext[Any], roots: OneShotRoots) -> float:
    """``1 / sqrt(1 - m / n)`` when the finite-population correction applies, else 1.

    It applies to without-replacement subsamples of sqrt(k)-rate statistics: a size-m subsample's spread
    around theta(D) is ``sqrt(1 - m/n)`` times that of an independent size-m sample.
    """
    n, m = roots.n, roots.m
    if not enabled or roots.replace or m >= n:
        return 1.0
    if not math.isclose(ctx.rate(m), math.sqrt(m), rel_tol=1e-12):
        return 1.0
    return 1.0 / math.sqrt(1.0 - m / n)


def order_statistic(roots: pp.Array, confidence: float, rule: str = "inverted_cdf") -> float:
    """The radius order statistic: by default ``R_(k)``, ``k = ceil(confidence * B)`` (numpy ``inverted_cdf``).

    Any rule that picks a fixed order statistic (its rank depends only on B and the confidence) keeps the
    privacy analysis, which only uses that an order statistic is 1-Lipschitz in the sup norm.
    """
    if rule == "inverted_cdf":
        k = pp.order_statistic_index(confidence, roots.shape[0])
        return float(np.partition(roots, k)[k])
    return float(np.quantile(roots, confidence, method=rule))  # type: ignore[call-overload]


def _roots(
    ctx: pp.RunContext[Any], resamples: pp.Resamples, theta_hat: pp.Array, theta_star: pp.Array, rule: str
) -> OneShotRoots:
    deviations = theta_star - theta_hat
    roots = np.linalg.norm(deviations, axis=1)
    return OneShotRoots(
        theta_hat=theta_hat,
        r=order_statistic(roots, ctx.confidence, rule),
        deviations=deviations,
        n=ctx.n,
        m=resamples.m,
        B=resamples.B,
        kappa=resamples.kappa,
        replace=resamples.replace,
        tau_m=ctx.rate(resamples.m),
        tau_n=ctx.rate(ctx.n),
    )


def compute_roots(ctx: pp.RunContext[Any], rng: np.random.Generator, rule: str = "inverted_cdf") -> OneShotRoots:
    """Steps 1-3: resample, evaluate theta on every resample, take the order statistic of the roots.

    ``r = R_(k)`` with ``k = ceil(confidence * B)`` and ``R_i = ||theta*_i - theta_hat||_2``.
    """
    resamples = ctx.resample(rng)
    if ctx.distributed is not None:  # a Dask array: partial sums on the workers (docs/cluster.md)
        theta_hat, theta_star = evaluate_distributed(ctx, resamples)
    else:
        theta_hat = ctx.evaluate()
        theta_star = evaluate_resamples(ctx, resamples, theta_hat.shape[0])
    return _roots(ctx, resamples, theta_hat, theta_star, rule)


@attrs.frozen
class SmoothRoots:
    """:class:`OneShotRoots` plus the smoothness beta and the logs of the smooth bounds (all non-private)."""

    roots: OneShotRoots
    beta: float
    rho: float
    log_center_bound: float
    log_max_resample_bound: float


def compute_smooth_roots(
    ctx: pp.RunContext[Any],
    rng: np.random.Generator,
    beta_rule: Callable[[pp.Resamples], tuple[float, float]],
    rule: str = "inverted_cdf",
) -> SmoothRoots:
    """Steps 1-3 plus ``ln SS_beta`` on the full data and on every resample (one pass over the resamples).

    ``beta_rule(resamples) -> (beta, rho)`` runs once the sampler has fixed kappa and B.
    """
    resamples = ctx.resample(rng)
    beta, rho = beta_rule(resamples)
    theta_hat = ctx.evaluate()
    smooth = ctx.evaluate_smooth(resamples, theta_hat.shape[0], beta)
    return SmoothRoots(
        roots=_roots(ctx, resamples, theta_hat, smooth.values, rule),
        beta=beta,
        rho=rho,
        log_center_bound=smooth.log_full,
        log_max_resample_bound=float(smooth.log_resamples.max()),
    )
