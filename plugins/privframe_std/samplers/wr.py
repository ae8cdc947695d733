"""m-out-of-n sampling with replacement under a multiplicity constraint (MCS; ``docs/algorithms.md``, section 2)."""

from __future__ import annotations

import math
from typing import ClassVar

import attrs
import numpy as np

import privframe.plugin as pp
from privframe._typing import LazyModule
from privframe.errors import ConfigError, SamplerRejected
from privframe.resampling.sizes import SizeRule, resolve_size
from privframe_std.samplers._blocks import iid_rows_and_multiplicity, row_sums

special = LazyModule("scipy.special")  # imported on first use (0.2 s the plugins' loading need not pay)

__all__ = ["MultiplicityConstrained", "kappa_star"]


def kappa_star(n: int, m: int, B: int, rho: float) -> int:
    """Multiplicity cap ``min{m, ceil(L / W0((n / (m e)) L)) - 1}`` with ``L = ln(B n / rho)``.

    With this cap, P(some record appears more than kappa* times in some row) <= rho.
    """
    if not (0 < rho < 1):
        raise ConfigError("must be a number in (0, 1)", path="rho")
    L = math.log(B * n / rho)
    w = float(special.lambertw(n / (m * math.e) * L, 0).real)
    return int(min(m, math.ceil(L / w) - 1))


@attrs.frozen
class MultiplicityConstrained:
    """B resamples of m indices drawn with replacement, no record more than kappa* times per row.

    Parameters
    ----------
    m : int, str or callable, default "n/log(n)"
        Resample size, a rule in n (rounded up) or a function of n. Must satisfy ``2 <= m < n``.
    B : int, default 1000
        Number of resamples.
    rho : float, optional
        Bound on the rejection probability; default ``1/n``. Enters kappa* only through ``log(B n / rho)``.
    on_reject : {"raise", "redraw"}, default "raise"
        On a violation, raise :class:`privframe.SamplerRejected` (the paper's "bottom": nothing is released)
        or redraw the offending rows (rows are then i.i.d. from the law conditioned on the cap). Either way
        the decision depends only on indices and costs no privacy.
    max_redraws : int, default 100
        Rounds of redrawing before giving up with ``SamplerRejected``.
    """

    name: ClassVar[str] = "wr"
    m: SizeRule = attrs.field(default="n/log(n)", converter=pp.validators.as_int, validator=pp.validators.size)
    B: int = attrs.field(default=1000, converter=pp.validators.as_int, validator=pp.validators.integer_at_least(1))
    rho: float | None = attrs.field(default=None, validator=pp.validators.optional(pp.validators.probability))
    on_reject: str = attrs.field(default="raise", validator=pp.validators.choice("raise", "redraw"))
    max_redraws: int = attrs.field(
        default=100, converter=pp.validators.as_int, validator=pp.validators.integer_at_least(1)
    )

    def resolved_rho(self, n: int) -> float:
        """rho, defaulting to 1/n."""
        return self.rho if self.rho is not None else 1.0 / n

    def design(self, n: int) -> pp.Design:
        """n, m, B, the cap kappa* and rho."""
        m = resolve_size("m", self.m, n)
        rho = self.resolved_rho(n)
        return pp.Design(n=n, m=m, B=self.B, kappa=kappa_star(n, m, self.B, rho), replace=True, rho=rho)

    def draw_block(self, design: pp.Design, rng: np.random.Generator, rows: int) -> pp.IndexMatrix:
        """``rows`` rows of m i.i.d. indices (``iid_rows``), each checked against the cap (rejected or redrawn)."""
        n, m, kappa = design.n, design.m, design.kappa
        index, most = iid_rows_and_multiplicity(rng, rows, n, m)
        bad = most > kappa
        rounds = 0
        while bad.any():
            if self.on_reject != "redraw":
                raise SamplerRejected(
                    f"a record appeared more than kappa* = {kappa} times in a resample (an event of "
                    "probability <= rho that depends only on the indices); nothing was released. "
                    "Retry with fresh randomness or use on_reject='redraw'.",
                    path="sampler",
                )
            rounds += 1
            if rounds > self.max_redraws:
                raise SamplerRejected(f"still rejecting after max_redraws = {self.max_redraws} rounds", path="sampler")
            fresh, most = iid_rows_and_multiplicity(rng, int(bad.sum()), n, m, round_=rounds)
            index[bad] = fresh
            bad[bad] = most > kappa
        return index

    def draw_block_sums(
        self, design: pp.Design, rng: np.random.Generator, rows: int, x: pp.Array
    ) -> list[pp.Array] | None:
        """The sums of ``x`` over the rows :meth:`draw_block` would draw, per data block, without the rows
        (``pp.SummingSampler``); None when a row breaks the cap (the rows are then drawn, and rejected or
        redrawn as :meth:`draw_block` does)."""
        summed = row_sums(rng, rows, design.n, design.m, True, x)
        assert summed is not None  # with replacement the rows are always summed ...
        sums, most = summed
        assert most is not None  # ... and their multiplicities counted
        return None if bool((most > design.kappa).any()) else sums
