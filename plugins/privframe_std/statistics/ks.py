"""The Kolmogorov-Smirnov distance of the data to a public reference CDF (algorithms.md section 4)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import attrs
import numpy as np

import privframe as pf
from privframe.errors import ConfigError, DataError

__all__ = ["KolmogorovSmirnov"]


def _reference(_: Any, attribute: Any, value: Any) -> None:
    if value is None:
        raise ConfigError(
            f"{attribute.name}: the ks statistic needs a public reference CDF (a frozen scipy distribution or a "
            "callable)"
        )
    if not callable(getattr(value, "cdf", value)):
        raise ConfigError(f"{attribute.name}: expected a frozen scipy distribution (with .cdf) or a CDF callable")


@attrs.frozen
class KolmogorovSmirnov:
    """``sup_x |F_k(x) - F_0(x)|`` for the empirical CDF F_k of k scalars and a public, continuous F_0.

    Needs no bounds: replacing one record moves F_k by at most 1/k everywhere, so the replace-one
    sensitivity is ``1 / k`` whatever the data. The limit law is not normal when the supremum has several
    maximisers; the rate is still ``sqrt(k)``.

    The statistic works on ``u_i = F_0(x_i)`` (computed once in ``prepare``): with ``u`` sorted,
    ``D = max_i max(i/k - u_(i), u_(i) - (i-1)/k)``, vectorised over resamples.

    Parameters
    ----------
    reference : frozen scipy distribution or callable
        The public reference CDF F_0 (``scipy.stats.norm(0, 1.5)``, or any vectorised callable). Required.
    """

    name: ClassVar[str] = "ks"
    requires_bounds: ClassVar[bool] = False
    reference: Any = attrs.field(default=None, validator=_reference)

    def _cdf(self) -> Callable[[pf.Array], Any]:
        cdf: Callable[[pf.Array], Any] = getattr(self.reference, "cdf", self.reference)
        return cdf

    def prepare(self, x: pf.Array, bounds: Any) -> pf.Array:
        """The reference CDF at every record, ``u_i = F_0(x_i)``."""
        if bounds is not None:
            raise ConfigError("bounds: the ks statistic needs no bounds (its sensitivity is 1/k)")
        if x.ndim != 1:
            raise DataError("x: the ks statistic needs one-dimensional data")
        u = np.asarray(self._cdf()(x), dtype=np.float64)
        if u.shape != x.shape or not np.all((u >= 0) & (u <= 1)):
            raise ConfigError("reference: must return one CDF value in [0, 1] per record")
        return u

    def evaluate(self, x: pf.Array) -> pf.Array:
        """D on the full (prepared) data, shape ``(1,)``."""
        value: pf.Array = self.evaluate_batch(x, np.arange(x.shape[0], dtype=np.intp)[np.newaxis, :])[0]
        return value

    def evaluate_batch(self, x: pf.Array, index: pf.IndexMatrix) -> pf.Array:
        """D on B resamples, ``(B, 1)``: one sort per row."""
        u = np.take(x, index)
        u.sort(axis=1)
        k = index.shape[1]
        steps = np.arange(1, k + 1, dtype=np.float64) / k
        above = np.max(steps - u, axis=1)
        below = np.max(u - (steps - 1.0 / k), axis=1)
        distance: pf.Array = np.maximum(above, below)[:, np.newaxis]
        return distance

    def sensitivity(self, k: int, bounds: Any) -> float:
        """Replace-one sensitivity ``1 / k``."""
        return 1.0 / k

    def default_mechanism(self, budget: pf.Budget) -> str:
        """Laplace under a pure or (eps, delta) budget, Gaussian under GDP."""
        return "gaussian" if isinstance(budget, pf.GDP) else "laplace"
