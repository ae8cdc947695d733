"""The ``rank-quantile`` method: the rank-based interval for any quantile as a privframe method.

The statistics and the privacy live in :mod:`~privframe_std.methods.rank_quantile.core` (pure functions); this
module plans the release from public inputs, charges its selections and reports the interval
(``docs/methods/rank-quantile.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import attrs
import numpy as np

import privframe.plugin as pp
from privframe.errors import BudgetError, ConfigError, DataError
from privframe_std.distributed.counts import histogram_distributed
from privframe_std.methods.rank_quantile import core
from privframe_std.methods.rank_quantile.budget import GDP_ACCOUNTING, bounded_range_gdp_mu

__all__ = ["RankQuantile"]


def _grid_size(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ConfigError("must be an integer or None", path="grid_size")
    if not 1 <= int(value) <= core.MAX_GRID_SIZE:
        raise ConfigError(f"must be between 1 and {core.MAX_GRID_SIZE}", path="grid_size")
    return int(value)


@attrs.frozen
class RankQuantile:
    """A finite-sample interval for the q-quantile from two privately selected order statistics.

    The records are binned on a public grid of ``G`` cells between the bounds; each end is a grid point
    chosen by an exponential mechanism whose utility is how many records would have to change for the
    point to be the end's target order statistic. The target ranks come from Binomial(n, q) with the
    selection's exact worst-case error law folded in, so the interval covers the population q-quantile
    with probability at least the confidence in finite samples, for every distribution on the bounds
    (ties and atoms included). Pure eps-DP natively; ``ApproxDP`` through the tightest composition of the
    pure selections; ``GDP`` through the exact conversion of each pure selection.

    Parameters
    ----------
    grid_size : int or None, default None
        G, the number of grid cells (the interval's ends are grid points). None: ``2^k`` with
        ``k = round(log2(4 n eps_i))`` clipped to 10..16, from public inputs (measured best; the method page).
    variant : {"auto", "independent", "joint"}, default "auto"
        One selection per end, one selection of the pair, or whichever gives the narrower rank span
        (decided from public inputs).
    tilt : bool, default True
        Tilt each end's base measure away from its bound (a public prior; narrower at large n).
    gdp_accounting : {"pure", "bounded-range"}, default "pure"
        How a GDP budget is met: ``"pure"``, each eps-DP selection is ``pure_dp_gdp_mu(eps)``-GDP (proved);
        ``"bounded-range"``, each selection is eps-bounded-range, whose tradeoff curve is proved and whose
        ``pure_dp_gdp_mu(eps / 2)``-GDP is verified numerically (twice the selection epsilon; the page).
    """

    name: ClassVar[str] = "rank-quantile"

    grid_size: int | None = attrs.field(default=None, converter=_grid_size)
    variant: str = attrs.field(default="auto", validator=pp.validators.choice(*core.VARIANTS))
    tilt: bool = attrs.field(default=True, validator=pp.validators.boolean)
    gdp_accounting: str = attrs.field(default="pure", validator=pp.validators.choice(*GDP_ACCOUNTING[::-1]))

    @property
    def needs(self) -> pp.MethodNeeds:
        """No sampler and no mechanism part (it selects its ends itself); a quantile statistic; a Dask array is
        read as per-block counts on its grid."""
        return pp.MethodNeeds(
            sampler=None,
            mechanism=None,
            statistic={pp.StatisticNeed.QUANTILE},
            mechanism_budget="own",
            distributed="own",
        )

    def defaults(self, budget: pp.Budget | None, confidence: float) -> Mapping[str, object]:
        """The ``gdp`` accountant for a GDP budget (it composes the selections' pure events as GDP; a
        ``GDP(mu, delta)`` limit is met spending no delta), else ``approx-dp`` (pure selections, basic or
        optimal composition)."""
        if budget is None:
            raise BudgetError("rank-quantile is private and needs a budget", path="budget")
        return {"accountant": "gdp" if isinstance(budget, pp.GDP) else "approx-dp"}

    def plan(self, n: int, statistic: pp.Statistic, budget: pp.Budget, confidence: float) -> core.RankPlan:
        """The public plan at n: grid, target ranks, per-selection epsilons (no data)."""
        q = pp.traits_of(statistic).quantile
        if q is None:  # refused at build (StatisticNeed.QUANTILE); kept for direct calls
            raise ConfigError(f"rank-quantile needs a quantile statistic, not '{statistic.name}'", path="statistic")
        accounting = self.gdp_accounting if isinstance(budget, pp.GDP) else "pure"
        size = self.grid_size if self.grid_size is not None else core.suggested_grid_size(n, budget, accounting)
        return core.plan(
            n, q, confidence, budget, size, variant=self.variant, tilt=self.tilt, gdp_accounting=accounting
        )

    def check_design(self, design: pp.Design | None, statistic: pp.Statistic, call: pp.PublicCall) -> None:
        """Refuse, from public inputs only, bounds that are not scalar and an n and budget at which no
        interval narrower than the bounds is valid (before any data are read: a session charges nothing)."""
        if not isinstance(call.bounds, pp.Bounds):
            raise ConfigError("rank-quantile needs public scalar bounds (low, high)", path="bounds")
        if call.budget is not None and self.plan(call.n, statistic, call.budget, call.confidence).trivial:
            raise ConfigError(_too_small(call.n, call.budget), path="budget")

    def _event(self, plan: core.RankPlan) -> pp.PrivacyEvent:
        """The ledger entry of the selections that run, one event for all of them (``count`` = 2 for one
        selection per end), so that the accountant composes them together (optimal composition under an
        (eps, delta) budget): a pure event per selection, or its GDP under bounded-range accounting."""
        count = len(plan.selection_epsilons)
        epsilon = plan.selection_epsilons[0]
        what = {"independent": "the lower and the upper end", "joint": "the pair of ends"}.get(
            plan.variant, "the one end that is not a bound"
        )
        budget: pp.Budget = pp.PureDP(epsilon)
        note = f"exponential mechanism selecting {what} on the public grid, sensitivity-1 rank distance; exact"
        if plan.route == "gdp-bounded-range":
            budget = pp.GDP(bounded_range_gdp_mu(epsilon))
            note += f"; each {epsilon:.6g}-bounded-range, counted as its GDP"
        return pp.PrivacyEvent(
            label="selection",
            mechanism="exponential",
            budget=budget,
            sensitivity=1.0,
            count=count,
            note=note,
            details={"grid_size": float(plan.grid_size), "epsilon": epsilon},
        )

    def run(self, ctx: pp.RunContext[pp.Mechanism]) -> pp.IntervalResult:
        """Plan from public inputs, charge the selections, then bin the data and select the ends."""
        bounds = ctx.bounds
        if not isinstance(bounds, pp.Bounds):
            raise ConfigError("rank-quantile needs public scalar bounds (low, high)", path="bounds")
        if ctx.data.ndim != 1:
            raise DataError("rank-quantile needs one-dimensional data", path="x")
        n = ctx.n
        plan = self.plan(n, ctx.statistic, ctx.budget, ctx.confidence)
        if plan.trivial:
            raise ConfigError(_too_small(n, ctx.budget), path="budget")
        ctx.charge(self._event(plan))
        (rng,) = ctx.generators(1)
        if ctx.distributed is not None:  # a Dask array: counts on the workers, the same integers (docs/cluster.md)
            counts = histogram_distributed(ctx, bounds.low, bounds.high, plan.grid_size)
        else:
            counts = core.histogram(ctx.data, bounds.low, bounds.high, plan.grid_size)
        indices = core.select(counts, plan, rng)
        low, high = core.interval(indices, plan, bounds.low, bounds.high)
        # the centre: the grid point halfway between the two selected ones (post-processing, on the grid)
        middle = (min(indices) + max(indices)) // 2
        center = float(core.grid_edges(bounds.low, bounds.high, plan.grid_size)[middle])
        return ctx.interval(
            low,
            high,
            center,
            parameters={
                "q": plan.q,
                "grid_size": plan.grid_size,
                "variant": plan.variant,
                "gdp_accounting": self.gdp_accounting,
            },
            diagnostics={
                "lower_rank": plan.lower_rank,
                "upper_rank": plan.upper_rank,
                "nonprivate_ranks": core.order_statistic_ranks(n, plan.q, plan.confidence),
                "selection_epsilons": plan.selection_epsilons,
                "route": plan.route,
                "miss_bounds": (plan.lower.miss, plan.upper.miss),
                "grid_step": bounds.width / plan.grid_size,
                "one_sided": plan.variant == "one-sided",
            },
        )


def _too_small(n: int, budget: pp.Budget) -> str:
    return (
        f"at n = {n} and {budget} no rank-based interval narrower than the bounds covers at the confidence "
        "asked: give more records, a larger budget or a lower confidence"
    )
