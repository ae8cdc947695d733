"""BLBQuant (Chadha, Duchi and Kuditipudi, 2024): bag of little bootstraps with a private median, pure eps-DP.

``docs/algorithms.md``, section 5. The budget is split: ``eps_param = split * eps`` for the private point estimate,
``eps_cdf = (1 - split) * eps`` for the interval search.

1. A random partition into ``s = ceil(10 ln n / eps_cdf)`` blocks of ``b = floor(n / s)`` records
   (sampler ``partition``).
2. Each block runs R little bootstraps (n draws with replacement from its b records, as multinomial
   weights) with the private estimator inside: roots ``tau_n (theta(block_j) - theta_tilde(resample))``.
3. Each block's roots are binned on a public grid ``[L, U]`` (by default ``+-5 (high - low) / 2`` and bin width
   about ``(high - low) / (10 sqrt(n))``, both from the public bounds, so the method is affine-equivariant;
   bin count a power of two).
4. AboveThreshold over nested candidate sets picks the first set whose noisy median block coverage
   exceeds ``1 - alpha`` (see :mod:`privframe_std.methods.blbquant.search`); the interval is
   ``theta_tilde_n + A_k / tau_n``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any, ClassVar

import attrs
import numpy as np

import privframe.plugin as pp
from privframe.errors import BudgetError, ConfigError, DataError
from privframe_std.methods.blbquant.roots import block_roots, weighted_estimator
from privframe_std.methods.blbquant.search import ExactLaplace, above_threshold, block_histograms, nested_coverages

__all__ = ["MAX_BINS", "MAX_ROOT_BYTES", "BLBQuant", "blb_blocks", "blb_replicates", "default_bin_width"]

MAX_BINS = 1 << 24
"""The most histogram bins a root grid may have (each block keeps one histogram)."""

MAX_ROOT_BYTES = 1 << 31
"""The most memory the ``(s, R)`` replicate roots may take."""

_LOG = logging.getLogger(__name__)


def blb_blocks(n: int, eps_cdf: float) -> int:
    """``s = ceil(10 ln n / eps_cdf)``."""
    return math.ceil(round(10.0 * math.log(n) / eps_cdf, 9))


COST_PER_RECORD = {"mean": 1.2e-9, "weighted": 3.6e-9, "quantile": 6.6e-9}
"""Seconds per record of a block per replicate, on a 2-core machine (one thread). ``mean``: the compiled
path of the mean under the exact Laplace mechanism with independent weights (each count drawn and summed in
place; fitted to eight (n, b) pairs from n = 5 000 to 1e6, ``docs/methods/blbquant.md``, Cost).
``weighted`` (the mean on a weight matrix: shared weights, or another mechanism) and ``quantile`` (its
weight and the estimator's pass) were measured with ``min_block=0`` on uniform data at n = 20 000, eps = 1
and n = 50 000, eps = 8, before the selection window and the compiled weight stream, which made every case
as fast or faster: that rule errs long."""

COST_PER_REPLICATE = {"mean": 6e-8, "weighted": 4.1e-6, "quantile": 1.0e-6}
"""Seconds per replicate besides its records: the simulated estimator noise (an exact Laplace sample:
compiled for ``mean``, vectorised numpy for ``weighted``) and a selection's setup."""

COST_PER_FILL_DRAW = {"mean": 0.85e-9, "weighted": 4e-9, "quantile": 4e-9}
"""Seconds per uniform draw that tops a replicate's Poisson counts up to n (about ``1.3 sqrt(n)`` a row)."""

ANNOUNCE_SECONDS = 10.0
"""Expected duration from which blbquant logs its cost before the little bootstraps."""


def blbquant_seconds(n: int, s: int, b: int, R: int, shared: bool, quantile: bool) -> float:
    """Expected duration of the little bootstraps on a 2-core machine, one thread (the method page's cost rule).

    ``R s`` replicates of b weighted records each. Shared weights skip the per-block draws but reorder one
    weight matrix per block, which costs about as much again per record (measured 1.5-2x); the mean with
    shared weights runs on the weight matrix. ``workers`` threads divide the mean's compiled path.
    """
    kind = "quantile" if quantile else ("weighted" if shared else "mean")
    per_record = COST_PER_RECORD[kind] * (2.0 if shared else 1.0)
    fill = 0.0 if shared else 1.3 * math.sqrt(n) * COST_PER_FILL_DRAW[kind]
    return R * s * (b * per_record + fill + COST_PER_REPLICATE[kind])


def blbquant_cost_note(n: int, s: int, b: int, R: int, shared: bool, quantile: bool) -> str | None:
    """The warning logged before a long blbquant call (expected ``ANNOUNCE_SECONDS`` or more), else None."""
    seconds = blbquant_seconds(n, s, b, R, shared, quantile)
    if seconds < ANNOUNCE_SECONDS:
        return None
    return (
        f"blbquant: R = {R} little bootstraps on each of s = {s} blocks of b = {b} records "
        f"({'shared' if shared else 'independent'} weights): expect about {seconds:.0f} s on a 2-core machine; "
        "lower R, or use cr-gs for a one-shot interval at a fraction of the cost"
    )


MIN_BLOCK = 200
"""Default fewest records per block (for a quantile, in the tail the statistic needs); see ``min_block``."""


def effective_block(b: int, statistic: pp.Statistic) -> float:
    """Records of a block that inform the statistic: ``b``, or ``2 b min(q, 1 - q)`` for a q-quantile."""
    q = pp.traits_of(statistic).quantile
    if q is not None:
        return 2.0 * b * min(q, 1.0 - q)
    return float(b)


def blb_replicates(n: int, b: int) -> int:
    """``R = clip(sqrt(n) b / ln n, 100, 10000)`` (rounded up)."""
    return int(min(10_000, max(100, math.ceil(math.sqrt(n) * b / math.log(n)))))


def default_bin_width(bounds: pp.Bounds, n: int) -> float:
    """The default target bin width ``(high - low) / (10 sqrt(n))`` on the root scale.

    A function of the public bounds and n only. At the paper's experiment (bounds [-6, 4]) it is the paper's
    ``1 / sqrt(n)``; with the default grid ``+-5 (high - low) / 2`` the target bin count is ``50 sqrt(n)``
    whatever the unit of the data.
    """
    return bounds.width / (10.0 * math.sqrt(n))


def _grid(_: Any, attribute: Any, value: Any) -> None:
    if value is None:
        return
    ok = isinstance(value, (tuple, list)) and len(value) == 2
    if ok:
        ok = all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value)
    if not ok or not value[0] < value[1]:
        raise ConfigError("expected public bounds (L, U) with L < U, or omitted", path=attribute.name)


def _epsilon(budget: pp.Budget | None) -> float:
    if isinstance(budget, pp.PureDP):
        return budget.epsilon
    if isinstance(budget, pp.ApproxDP):
        return budget.epsilon  # pure eps-DP implies (eps, delta)-DP; no delta is spent
    if isinstance(budget, pp.GDP):
        raise BudgetError(
            "blbquant is pure epsilon-DP and takes pf.PureDP(epsilon) (or pf.ApproxDP, spending no delta); "
            "to compare with a GDP method, pick epsilon yourself (e.g. "
            "privframe.privacy.accounting.gdp_pure_epsilon(mu))",
            path="budget",
        )
    raise BudgetError("blbquant is private and needs a budget", path="budget")


@attrs.frozen
class BLBQuant:
    """BLBQuant: a private median of little-bootstrap coverages picks the interval (pure eps-DP).

    Releases the private point estimate (``eps_param``) and the index of the chosen candidate set
    (AboveThreshold, ``eps_cdf``). Supports the ``mean`` (Laplace noise inside the replicates) and
    quantiles such as the ``median`` (exponential mechanism), both on public scalar ``bounds``.

    Parameters
    ----------
    split : float, default 0.5
        ``eps_param = split * eps`` (paper: eps / 2).
    R : int, optional
        Little bootstraps per block; default ``clip(sqrt(n) b / ln n, 100, 10000)`` (paper).
    grid : (float, float), optional
        Public bounds ``(L, U)`` of the root histogram, on the root scale ``tau_n (theta - theta_tilde)`` (data
        units). The paper used +-5 population SDs, which are not public; the default here is
        ``+-5 (high - low) / 2``, the largest SD data in the bounds can have. [choice]
    bin_width : float, optional
        Target bin width on the root scale (data units); default ``(high - low) / (10 sqrt(n))`` from the
        public bounds: the paper's ``1 / sqrt(n)`` on its own experiment (bounds [-6, 4], width 10), made to
        scale with the bounds so that the default grid always has ``50 sqrt(n)`` target bins and the interval
        does not depend on the unit of measurement (data and bounds mapped by ``a x + b``, a > 0, give the
        interval mapped the same way). [choice] A value given here is used as it is, in data units. The bin
        count is rounded up to a power of two and the bins then divide ``[L, U]`` evenly (so they are at
        most this wide).
    sets : {"symmetric", "equal-tailed"}, default "symmetric"
        "symmetric": nested sets centred on the grid midpoint, widening one bin per side. "equal-tailed":
        two one-sided searches (upper and lower end point, each at ``alpha / 2`` with ``eps_cdf / 2``); the
        block rule then uses the budget of one search, ``s = ceil(10 ln n / (eps_cdf / 2))``, which keeps the
        chance that the noisy median index runs past s (a spurious early stop) as small as in the symmetric
        search. [choice]
    weights : {"independent", "shared", "auto"}, default "independent"
        "independent": every block draws its own multinomial weights (the paper). "shared": one weight
        matrix for all blocks (exact law per block; Monte Carlo errors correlated across blocks, privacy
        unchanged since the weights do not depend on the data), now slower than "independent". "auto" is
        kept for configs that name it and means "independent" (it used to switch to shared weights when
        ``R n`` exceeded 2^25, which paid before the weights were compiled). [choice]
    min_block : int, default 200
        The fewest records a block may hold for the statistic (``b`` for the mean, ``2 b min(q, 1 - q)``
        for a q-quantile); smaller blocks are refused with a ``ConfigError``. The search picks the set that
        covers in the *median* block, and a small block's spread is biased low for skewed data (the median
        of a block's sample variance is half the variance at b = 13 on lognormal data, so a nominal 0.9
        interval covered 0.77). The rule reads only n, epsilon and q. 0 runs the paper's construction. [choice]
    """

    name: ClassVar[str] = "blbquant"
    needs: ClassVar[pp.MethodNeeds] = pp.MethodNeeds(
        mechanism=(pp.Mechanism, pp.SelectionMechanism),
        statistic={pp.StatisticNeed.WEIGHTED},
        mechanism_budget="own",
    )
    """A partition sampler, an additive or selection mechanism run at a pure epsilon it derives itself, and a
    statistic evaluated on weighted resamples (the little bootstraps)."""

    split: float = attrs.field(default=0.5, validator=pp.validators.probability)
    R: int | None = attrs.field(
        default=None,
        converter=pp.validators.as_int,
        validator=pp.validators.optional(pp.validators.integer_at_least(1)),
    )
    grid: tuple[float, float] | None = attrs.field(default=None, validator=_grid)
    bin_width: float | None = attrs.field(default=None, validator=pp.validators.optional(pp.validators.positive))
    sets: str = attrs.field(default="symmetric", validator=pp.validators.choice("symmetric", "equal-tailed"))
    weights: str = attrs.field(default="independent", validator=pp.validators.choice("independent", "shared", "auto"))
    min_block: int = attrs.field(
        default=MIN_BLOCK, converter=pp.validators.as_int, validator=pp.validators.integer_at_least(0)
    )

    def _searches(self) -> tuple[str, ...]:
        return ("symmetric",) if self.sets == "symmetric" else ("upper", "lower")

    def _eps_search(self, epsilon: float) -> float:
        return (1.0 - self.split) * epsilon / len(self._searches())

    def defaults(self, budget: pp.Budget | None, confidence: float) -> Mapping[str, object]:
        """A random partition into ``s = ceil(10 ln n / eps_search)`` blocks, the ``approx-dp`` accountant;
        the statistic's default mechanism (exponential for quantiles, Laplace for the mean)."""
        defaults: dict[str, object] = {"sampler": "partition", "accountant": "approx-dp"}
        if budget is not None:
            eps_search = self._eps_search(_epsilon(budget))

            def blocks(n: int) -> int:
                s = blb_blocks(n, eps_search)
                if s >= n // 2:
                    raise ConfigError(
                        f"the rule ceil(10 ln n / eps_cdf) gives {s} blocks for n = {n}; too few records per "
                        "block (increase epsilon or n, or set s)",
                        path="s",
                    )
                return s

            defaults["s"] = blocks
        return defaults

    def check_design(self, design: pp.Design | None, statistic: pp.Statistic, call: pp.PublicCall) -> None:
        """Refuse bounds that are not scalar and blocks too small for the statistic (``min_block``); public
        inputs only.

        Called before the search runs, and by ``method="auto"`` to pass over a method that would refuse.

        Parameters
        ----------
        design : Design
            The partition's design: ``B = s`` blocks of ``m = b`` records out of ``n``.
        statistic : Statistic
            The statistic (its ``q`` for quantiles).
        call : PublicCall
            The call's public inputs (its bounds).
        """
        if not isinstance(call.bounds, pp.Bounds):
            raise ConfigError("blbquant needs public scalar bounds (low, high)", path="bounds")
        if design is None:  # blbquant always has a sampler; nothing to check without one
            return
        n, s, b = design.n, design.B, design.m
        effective = effective_block(b, statistic)
        if effective < self.min_block:
            what = (
                "records" if effective == b else f"records in the tail the {statistic.name} needs (2 b min(q, 1 - q))"
            )
            raise ConfigError(
                f"blbquant's {s} blocks of b = {b} records at n = {n} leave {effective:g} {what}, below "
                f"min_block = {self.min_block}: the median block then understates the spread of skewed data "
                "(a nominal 0.9 interval of a lognormal mean covered 0.77 at b = 13, 0.85 at b = 64); use "
                "cr-gs, privsub or method='auto', a larger epsilon or n, or min_block=0 for the paper's construction",
                path="min_block",
            )

    def run(self, ctx: pp.RunContext[pp.Mechanism | pp.SelectionMechanism]) -> pp.IntervalResult:
        """Compute the interval and its ledger."""
        epsilon = _epsilon(ctx.budget)
        data = ctx.data
        if data.ndim != 1:
            raise DataError("blbquant needs one-dimensional data", path="x")
        bounds = ctx.bounds
        if not isinstance(bounds, pp.Bounds):
            raise ConfigError("blbquant needs public scalar bounds (low, high)", path="bounds")
        statistic = ctx.statistic
        mechanism = ctx.mechanism
        eps_param, eps_cdf = self.split * epsilon, (1.0 - self.split) * epsilon
        searches = self._searches()
        eps_search = self._eps_search(epsilon)
        estimator = pp.MechanismEstimator(statistic, mechanism, bounds)
        replicates = weighted_estimator(
            statistic, mechanism, estimator.plan(ctx.n, pp.PureDP(eps_param), label="replicate"), bounds
        )
        sample_rng, center_rng, search_rng, weight_rng, block_parent = ctx.generators(5)
        block_seq = block_parent.bit_generator.seed_seq
        assert isinstance(block_seq, np.random.SeedSequence)  # generators are seeded from SeedSequences

        partition = ctx.resample(sample_rng)
        if partition.replace or partition.kappa != 1:
            raise ConfigError("blbquant needs disjoint blocks ('partition')", path="sampler")
        n = ctx.n
        s, b = partition.B, partition.m
        self.check_design(
            partition.design,
            statistic,
            pp.PublicCall(n=ctx.n, budget=ctx.budget, bounds=ctx.bounds, confidence=ctx.confidence),
        )
        blocks_index = partition.matrix()
        R = self.R if self.R is not None else blb_replicates(n, b)
        tau_n = ctx.rate(n)
        low, high = self.grid if self.grid is not None else (-2.5 * bounds.width, 2.5 * bounds.width)
        if self.bin_width is not None:
            target_bins = (high - low) / self.bin_width
        else:  # (high - low) / default_bin_width, as a ratio of widths: a tiny width cannot underflow it to 0
            target_bins = (high - low) / bounds.width * (10.0 * math.sqrt(n))
        if not math.isfinite(target_bins):
            raise ConfigError("the root grid is wider than the largest double; give a narrower grid", path="grid")
        if target_bins > MAX_BINS:
            name = "bin_width" if self.bin_width is not None else "grid"
            raise ConfigError(
                f"the root grid would need {target_bins:.3g} bins, more than {MAX_BINS}; choose a wider bin_width "
                "or a narrower grid",
                path=name,
            )
        if R * s * 8 > MAX_ROOT_BYTES:
            raise ConfigError(
                f"R = {R} replicates on {s} blocks need {R * s * 8} bytes of roots, more than {MAX_ROOT_BYTES}; "
                "lower R",
                path="R",
            )
        bins = 1 << (math.ceil(math.log2(target_bins)) if target_bins > 2 else 1)  # a power of two, at least 2
        width = (high - low) / bins
        shared = self.weights == "shared"
        note = blbquant_cost_note(n, s, b, R, shared, pp.traits_of(statistic).quantile is not None)
        if note is not None:
            _LOG.warning(note)

        center_event = estimator.plan(n, pp.PureDP(eps_param), label="center")
        ctx.charge(center_event)
        for name in searches:
            ctx.charge(
                pp.PrivacyEvent(
                    label=f"search-{name}",
                    mechanism="above-threshold",
                    budget=pp.PureDP(eps_search),
                    sensitivity=1.0,
                    noise_scale=2.0 / eps_search,
                    note="AboveThreshold over nested sets: threshold noise Lap(2/eps) drawn once, query noise "
                    "Lap(4/eps), block-count queries of sensitivity 1",
                    details={"s": float(s), "candidates": float(bins // 2), "query_noise": 4.0 / eps_search},
                )
            )
        center_values, _ = estimator.release_batch(
            data, np.arange(n, dtype=np.intp)[np.newaxis, :], pp.PureDP(eps_param), center_rng
        )
        center = float(center_values[0])

        blocks = data[blocks_index]
        block_values = ctx.evaluate_resamples(partition, 1)[:, 0]
        block_rngs = [np.random.default_rng(seed) for seed in block_seq.spawn(s)]
        bar = partition.progress_bar(s, unit="blocks", work=R * n, label=f"blbquant: {R} little bootstraps a block")
        try:
            roots = block_roots(
                replicates,
                blocks,
                block_values,
                n=n,
                R=R,
                tau_n=tau_n,
                block_rngs=block_rngs,
                shared_rng=weight_rng if shared else None,
                workers=partition.workers,
                bound=max(abs(bounds.low), abs(bounds.high)),
                advance=bar.advance,
            )
        finally:
            bar.close()
        histograms = block_histograms(roots, low, width, bins)

        alpha = 1.0 - ctx.confidence
        search_noise = ExactLaplace(search_rng)
        chosen: dict[str, int | None] = {}
        if self.sets == "symmetric":
            k = above_threshold(nested_coverages(histograms, "symmetric"), 1.0 - alpha, eps_search, search_noise)
            chosen["symmetric"] = k
            mid = (low + high) / 2
            half = (high - low) / 2 if k is None else (k + 1) * width
            set_low, set_high = mid - half, mid + half
        else:
            k_up = above_threshold(nested_coverages(histograms, "upper"), 1.0 - alpha / 2, eps_search, search_noise)
            k_low = above_threshold(nested_coverages(histograms, "lower"), 1.0 - alpha / 2, eps_search, search_noise)
            chosen.update(upper=k_up, lower=k_low)
            mid = (low + high) / 2
            set_high = high if k_up is None else mid + (k_up + 1) * width
            set_low = low if k_low is None else mid - (k_low + 1) * width
        return ctx.interval(
            center + set_low / tau_n,
            center + set_high / tau_n,
            center,
            parameters={
                "s": s,
                "b": b,
                "R": R,
                "epsilon": epsilon,
                "split": self.split,
                "sets": self.sets,
                "grid": (low, high),
                "bins": bins,
                "weights": "shared" if shared else "independent",
            },
            diagnostics={
                "eps_param": eps_param,
                "eps_cdf": eps_cdf,
                "bin_width": width,
                "tau_n": tau_n,
                "chosen_set": chosen,
                "whole_grid": any(v is None for v in chosen.values()),
                "center_noise": center_event.noise_scale,
            },
        )
