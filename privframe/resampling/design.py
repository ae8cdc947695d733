"""A sampler's design: what it draws, fixed from public quantities before any index exists."""

from __future__ import annotations

import attrs

from privframe.errors import PluginError

__all__ = ["Design"]


def _positive_int(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise PluginError("a sampler's design needs positive integer sizes", path=f"design.{attribute.name}")


@attrs.frozen
class Design:
    """What a sampler draws, fixed from public quantities before any index exists.

    Attributes
    ----------
    n, m, B : int
        Population size, resample size, number of resamples.
    kappa : int
        The largest number of times one record can appear in one resample (1 without replacement). It is a
        privacy claim: CR-GS multiplies the radius sensitivity by it.
    replace : bool
        Whether rows are drawn with replacement.
    rho : float or None
        Bound on the probability that the draw is rejected (``wr``); None for samplers that never reject.
    block_rows : int or None
        Rows per independently seeded block; None for the engine's rule
        (:func:`privframe.resampling.blocks.block_rows`).
        A sampler whose rows are not independent (one permutation cut into blocks) sets it to B, so all rows
        are one block.
    """

    n: int = attrs.field(validator=_positive_int)
    m: int = attrs.field(validator=_positive_int)
    B: int = attrs.field(validator=_positive_int)
    kappa: int = attrs.field(validator=_positive_int)
    replace: bool
    rho: float | None = None
    block_rows: int | None = None
