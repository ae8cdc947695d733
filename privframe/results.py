"""Result objects: an interval for scalar statistics, a Euclidean ball for vector ones."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

import attrs
import numpy as np
import numpy.typing as npt

from privframe._typing import frozen_mapping
from privframe.errors import ConfigError, DataError
from privframe.privacy.ledger import Ledger

__all__ = ["IntervalResult", "RegionResult", "Result"]


def _readonly_vector(value: npt.ArrayLike) -> npt.NDArray[np.float64]:
    arr = np.array(value, dtype=np.float64).reshape(-1)
    arr.flags.writeable = False
    return arr


@attrs.frozen(eq=False)
class IntervalResult:
    """A confidence interval ``(low, high)`` for a scalar statistic.

    Attributes
    ----------
    low, high : float
        Interval end points.
    center : float
        The released point estimate.
    confidence : float
        Nominal coverage ``1 - alpha``.
    method : str
        Method that produced it.
    parameters : mapping
        Resolved settings (statistic, sampler, m, B, kappa, budget, ...).
    diagnostics : mapping
        Data-independent internals (sensitivities, noise scales) - never non-private data summaries.
    privacy : Ledger
        The privacy spend.
    """

    low: float
    high: float
    center: float
    confidence: float
    method: str
    parameters: Mapping[str, Any] = attrs.field(converter=frozen_mapping)
    diagnostics: Mapping[str, Any] = attrs.field(converter=frozen_mapping)
    privacy: Ledger

    @property
    def width(self) -> float:
        """``high - low``."""
        return self.high - self.low

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies in the open interval ``(low, high)``."""
        return bool(self.low < float(value) < self.high)

    def to_region(self) -> RegionResult:
        """The same set as a one-dimensional ball (only for intervals symmetric about their centre)."""
        radius = (self.high - self.low) / 2
        if abs(self.center - (self.low + radius)) > 1e-12 * max(1.0, abs(self.center)):
            raise ConfigError(
                f"'{self.method}' returns an asymmetric interval; use pf.confidence_interval", path="method"
            )
        return RegionResult(
            center=[self.center],
            radius=radius,
            confidence=self.confidence,
            method=self.method,
            parameters=self.parameters,
            diagnostics=self.diagnostics,
            privacy=self.privacy,
        )

    def __str__(self) -> str:
        whole = " [the whole range: no information]" if self.diagnostics.get("whole_range") else ""
        estimand = self.parameters.get("estimand")
        what = f" for the {estimand}" if isinstance(estimand, str) else ""
        return (
            f"{self.confidence:.0%} CI{what} [{self.low:.6g}, {self.high:.6g}]{whole} (center {self.center:.6g}; "
            f"{self.method}; {self.privacy.summary()})"
        )


@attrs.frozen(eq=False)
class RegionResult:
    """A Euclidean ball ``{u : ||u - center|| < radius}`` for a vector statistic.

    Attributes are as for :class:`IntervalResult`, with ``center`` a read-only vector and ``radius``
    the released radius.
    """

    center: npt.NDArray[np.float64] = attrs.field(converter=_readonly_vector)
    radius: float
    confidence: float
    method: str
    parameters: Mapping[str, Any] = attrs.field(converter=frozen_mapping)
    diagnostics: Mapping[str, Any] = attrs.field(converter=frozen_mapping)
    privacy: Ledger

    @property
    def dimension(self) -> int:
        """Dimension d of the statistic."""
        return int(self.center.shape[0])

    @property
    def width(self) -> float:
        """The diameter ``2 * radius`` (the interval length when d = 1)."""
        return 2.0 * self.radius

    def contains(self, value: npt.ArrayLike) -> bool:
        """Whether ``value`` lies strictly inside the ball."""
        v = np.asarray(value, dtype=np.float64).reshape(-1)
        if v.shape != self.center.shape:
            raise DataError(f"expected a vector of length {self.dimension}", path="value")
        return bool(np.linalg.norm(v - self.center) < self.radius)

    def to_interval(self) -> IntervalResult:
        """The same set as an interval (d = 1 only)."""
        if self.dimension != 1:
            raise DataError("a region of dimension > 1 is not an interval; use pf.confidence_region", path="statistic")
        c = float(self.center[0])
        return IntervalResult(
            low=c - self.radius,
            high=c + self.radius,
            center=c,
            confidence=self.confidence,
            method=self.method,
            parameters=self.parameters,
            diagnostics=self.diagnostics,
            privacy=self.privacy,
        )

    def __str__(self) -> str:
        center = np.array2string(self.center, precision=6)
        return (
            f"{self.confidence:.0%} ball center {center} radius {self.radius:.6g} "
            f"({self.method}; {self.privacy.summary()})"
        )


Result: TypeAlias = IntervalResult | RegionResult
"""What a method returns: an interval (a scalar statistic) or a ball (a vector one)."""
