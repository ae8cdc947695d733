"""m-out-of-n sampling with replacement under a multiplicity constraint (MCS, algorithms.md section 2)."""

from __future__ import annotations

import math
from typing import ClassVar

import attrs
import numpy as np
from scipy import special

import privframe as pf
from privframe.errors import ConfigError, SamplerRejected
from privframe_std._validation import choice, int_at_least, probability_or_none
from privframe_std.samplers._blocks import max_multiplicity_exceeded, uniform_rows
from privframe_std.samplers._common import DEFAULT_MEMORY_BUDGET, make_resamples
from privframe_std.samplers._sizes import resolve_size, size_rule

__all__ = ["MultiplicityConstrained", "kappa_star"]


def kappa_star(n: int, m: int, B: int, rho: float) -> int:
    """Multiplicity cap ``min{m, ceil(L / W0((n / (m e)) L)) - 1}`` with ``L = ln(B n / rho)``.

    With this cap, P(some record appears more than kappa* times in some row) <= rho.
    """
    if not (0 < rho < 1):
        raise ConfigError("rho: must be a number in (0, 1)")
    L = math.log(B * n / rho)
    w = float(special.lambertw(n / (m * math.e) * L, 0).real)
    return int(min(m, math.ceil(L / w) - 1))


@attrs.frozen
class MultiplicityConstrained:
    """B resamples of m indices drawn with replacement, no record more than kappa* times per row.

    Parameters
    ----------
    m : int or str, default "n/log(n)"
        Resample size, or a rule in n (rounded up). Must satisfy ``2 <= m < n``.
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
    memory_budget : int, default 256 MiB
        Bytes the chunks in flight may use together.
    workers : int, default 1
        Threads evaluating chunks in parallel. Results are bit-identical for any value (each 32-row block
        has its own seed).
    """

    name: ClassVar[str] = "wr"
    m: int | str = attrs.field(default="n/log(n)", validator=size_rule)
    B: int = attrs.field(default=1000, validator=int_at_least(1))
    rho: float | None = attrs.field(default=None, validator=probability_or_none)
    on_reject: str = attrs.field(default="raise", validator=choice("raise", "redraw"))
    max_redraws: int = attrs.field(default=100, validator=int_at_least(1))
    memory_budget: int = attrs.field(default=DEFAULT_MEMORY_BUDGET, validator=int_at_least(2**16))
    workers: int = attrs.field(default=1, validator=int_at_least(1))

    def resolved_rho(self, n: int) -> float:
        """rho, defaulting to 1/n."""
        return self.rho if self.rho is not None else 1.0 / n

    def draw(self, n: int, rng: np.random.Generator) -> pf.Resamples:
        """Resamples of ``range(n)`` with the multiplicity check applied block by block."""
        m = resolve_size("m", self.m, n)
        kappa = kappa_star(n, m, self.B, self.resolved_rho(n))
        redraw = self.on_reject == "redraw"
        max_redraws = self.max_redraws

        def draw_block(block_rng: np.random.Generator, rows: int) -> pf.IndexMatrix:
            index = uniform_rows(block_rng, rows, n, m)
            bad = max_multiplicity_exceeded(index, kappa)
            rounds = 0
            while bad.any():
                if not redraw:
                    raise SamplerRejected(
                        f"sampler: a record appeared more than kappa* = {kappa} times in a resample (an event of "
                        "probability <= rho that depends only on the indices); nothing was released. "
                        "Retry with fresh randomness or use on_reject='redraw'."
                    )
                rounds += 1
                if rounds > max_redraws:
                    raise SamplerRejected(f"sampler: still rejecting after max_redraws = {max_redraws} rounds")
                fresh = uniform_rows(block_rng, int(bad.sum()), n, m)
                index[bad] = fresh
                bad[bad] = max_multiplicity_exceeded(fresh, kappa)
            return index

        return make_resamples(
            n=n,
            m=m,
            B=self.B,
            kappa=kappa,
            replace=True,
            rng=rng,
            draw_block=draw_block,
            memory_budget=self.memory_budget,
            workers=self.workers,
            rho=self.resolved_rho(n),
        )
