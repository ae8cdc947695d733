"""Order-2 U-statistics of bounded scalars: the ``product`` kernel in O(k) and a general kernel in O(k^2).

``U = (1 / (k (k - 1))) sum_{i != j} h(x_i, x_j)`` for a symmetric kernel h. For ``h(x, y) = x y`` this is
``(S^2 - sum x_i^2) / (k (k - 1))`` with ``S = sum x_i``; its smooth sensitivity (``docs/algorithms.md``,
section 3.2) makes the degenerate case (mean zero, rate ``tau_k = k``) usable with CR-SS.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar

import attrs
import numpy as np

import privframe as pf
from privframe.errors import ConfigError, DataError
from privframe_std.statistics._population import population_law

__all__ = ["UStatistic", "product_smooth_sensitivity"]

Kernel = Callable[[pf.Array, pf.Array], pf.Array]

_PAIR_BYTES = 24  # kernel value plus two broadcast temporaries per (row, i, j) entry


def _check_kernel(_: Any, attribute: Any, value: Any) -> None:
    if value != "product" and not callable(value):
        raise ConfigError("must be 'product' or a symmetric callable h(x, y)", path=attribute.name)


def _check_range(_: Any, attribute: Any, value: Any) -> None:
    if value is None:
        return
    try:
        pf.Bounds(*value)
    except (TypeError, ValueError) as exc:
        raise ConfigError("must be a pair (low, high) of finite numbers with low < high", path=attribute.name) from exc


def _half_width(bounds: Any, name: str) -> float:
    if not isinstance(bounds, pf.Bounds):
        raise ConfigError(f"statistic '{name}' needs scalar bounds (low, high)", path="bounds")
    return max(abs(bounds.low), abs(bounds.high))


def product_smooth_sensitivity(total: pf.Array, k: int, c: float, beta: float) -> pf.Array:
    """``SS_beta`` of the product-kernel U-statistic for row sums ``total`` of k values in ``[-c, c]``.

    ``A^(j) = min{a + b j, C}`` with ``a = 4c(|S| + c) / (k(k-1))``, ``b = 8c^2 / (k(k-1))``, ``C = 4c^2 / k``.
    ``e^{-j beta}(a + b j)`` is unimodal in j with its real maximum at ``1/beta - a/b`` and
    ``e^{-j beta} C`` decreases, so the maximum over integers j >= 0 is attained at the integers next to
    that point (below the cap) or where the cap starts: O(1) per row.
    """
    s = np.abs(np.asarray(total, dtype=np.float64))
    pairs = k * (k - 1)
    a = 4.0 * c * (s + c) / pairs
    b = 8.0 * c * c / pairs
    cap = 4.0 * c * c / k
    j_cap = np.maximum(np.ceil((cap - a) / b), 0.0)  # first j whose linear bound reaches the cap
    j_star = 1.0 / beta - a / b
    below = np.maximum(j_cap - 1.0, 0.0)
    candidates = [
        np.zeros_like(s),
        np.clip(np.floor(j_star), 0.0, below),
        np.clip(np.ceil(j_star), 0.0, below),
        j_cap,
    ]
    best = np.zeros_like(s)
    for j in candidates:
        np.maximum(best, np.exp(-beta * j) * np.minimum(a + b * j, cap), out=best)
    return best


@attrs.frozen
class UStatistic:
    """Order-2 U-statistic of bounded scalars with a symmetric kernel.

    Parameters
    ----------
    kernel : "product" or callable, default "product"
        ``"product"`` is ``h(x, y) = x y`` (closed form, O(k), smooth sensitivity available). A callable
        must be symmetric and broadcast like a numpy ufunc; it is evaluated on all pairs (O(k^2) per
        resample, chunked under the memory budget) and its values are clipped to ``kernel_range``.
    degenerate : bool, default False
        Declare the U-statistic first-order degenerate, so ``tau_k = k`` instead of ``sqrt(k)``. This is a
        statement about the population (e.g. mean zero for the product kernel) that the user must know.
    kernel_range : (low, high), optional
        Public range of a callable kernel's values (required for a callable; global sensitivity
        ``2 (high - low) / k``). The product kernel's range follows from the data bounds.

    Notes
    -----
    Data are clipped to ``bounds=(low, high)``; with ``c = max(|low|, |high|)`` the product kernel has global
    sensitivity ``4 c^2 / k`` (replacing ``x_i`` moves U by ``2 (x_i' - x_i)(S - x_i) / (k (k - 1))``).
    """

    name: ClassVar[str] = "u-statistic"
    kernel: str | Kernel = attrs.field(default="product", validator=_check_kernel)
    degenerate: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    kernel_range: tuple[float, float] | None = attrs.field(default=None, validator=_check_range)

    def __attrs_post_init__(self) -> None:
        if self.kernel != "product" and self.kernel_range is None:
            raise ConfigError("a callable kernel needs its public range (low, high)", path="kernel_range")

    def rate(self, k: int) -> float:
        """``k`` when declared degenerate, else ``sqrt(k)``."""
        return float(k) if self.degenerate else math.sqrt(k)

    def prepare(self, x: pf.Array, bounds: Any) -> pf.Array:
        """Clip one-dimensional data to the bounds."""
        if not isinstance(bounds, pf.Bounds):
            raise ConfigError(f"statistic '{self.name}' needs scalar bounds (low, high)", path="bounds")
        if x.ndim != 1:
            raise DataError(f"statistic '{self.name}' needs one-dimensional data", path="x")
        if x.shape[0] < 2:
            raise DataError(f"statistic '{self.name}' needs at least 2 records", path="x")
        return bounds.clip(x)

    def evaluate(self, x: pf.Array) -> pf.Array:
        """U on the full data, shape ``(1,)``."""
        value: pf.Array = self.evaluate_batch(x, np.arange(x.shape[0], dtype=np.intp)[np.newaxis, :])[0]
        return value

    def evaluate_batch(self, x: pf.Array, index: pf.IndexMatrix) -> pf.Array:
        """U on B resamples, shape ``(B, 1)``."""
        k = index.shape[1]
        if k < 2:
            raise ConfigError(f"statistic '{self.name}' needs resamples of at least 2 records", path="m")
        rows = np.take(x, index)
        if self.kernel == "product":
            total = rows.sum(axis=1)
            squares = np.einsum("ij,ij->i", rows, rows)
            values: pf.Array = ((total * total - squares) / (k * (k - 1)))[:, np.newaxis]
            return values
        general: pf.Array = self._general(rows)[:, np.newaxis]
        return general

    def _general(self, rows: pf.Array) -> pf.Array:
        assert callable(self.kernel)
        assert self.kernel_range is not None
        low, high = self.kernel_range
        count, k = rows.shape
        per_chunk = max(1, (64 * 2**20) // (_PAIR_BYTES * k * k))
        out = np.empty(count, dtype=np.float64)
        diagonal = np.eye(k, dtype=bool)
        for start in range(0, count, per_chunk):
            block = rows[start : start + per_chunk]
            values = np.asarray(self.kernel(block[:, :, np.newaxis], block[:, np.newaxis, :]), dtype=np.float64)
            if values.shape != (block.shape[0], k, k):
                raise ConfigError("must broadcast h(x[:, :, None], x[:, None, :]) to shape (B, k, k)", path="kernel")
            np.clip(values, low, high, out=values)
            values[:, diagonal] = 0.0
            out[start : start + per_chunk] = values.sum(axis=(1, 2)) / (k * (k - 1))
        return out

    def sensitivity(self, k: int, bounds: Any) -> float:
        """Global L2 sensitivity on k records: ``4 c^2 / k`` (product) or ``2 W / k`` (kernel range width W)."""
        if self.kernel == "product":
            c = _half_width(bounds, self.name)
            return 4.0 * c * c / k
        assert self.kernel_range is not None
        return 2.0 * (self.kernel_range[1] - self.kernel_range[0]) / k

    def smooth_sensitivity(self, x: pf.Array, beta: float, bounds: Any) -> float:
        """``SS_beta`` at the (clipped) full data (product kernel only)."""
        self._require_product()
        c = _half_width(bounds, self.name)
        return float(product_smooth_sensitivity(np.array([x.sum()]), x.shape[0], c, beta)[0])

    def evaluate_smooth_batch(
        self, x: pf.Array, index: pf.IndexMatrix, beta: float, bounds: Any
    ) -> tuple[pf.Array, pf.Array]:
        """Values ``(B, 1)`` and smooth sensitivities ``(B,)`` of B resamples (product kernel only)."""
        self._require_product()
        c = _half_width(bounds, self.name)
        k = index.shape[1]
        rows = np.take(x, index)
        total = rows.sum(axis=1)
        squares = np.einsum("ij,ij->i", rows, rows)
        values = ((total * total - squares) / (k * (k - 1)))[:, np.newaxis]
        return values, product_smooth_sensitivity(total, k, c, beta)

    def default_mechanism(self, budget: pf.Budget) -> str:
        """The private estimator's default: Laplace under a pure or (eps, delta) budget, Gaussian under GDP."""
        return "gaussian" if isinstance(budget, pf.GDP) else "laplace"

    def population_value(self, population: Any) -> float:
        """``E[X]^2`` for the product kernel (``E h(X, Y) = E[X] E[Y]``); unknown for a callable kernel."""
        if self.kernel != "product":
            raise ConfigError(
                "the population value of a U-statistic with a callable kernel is not known; give it explicitly",
                path="truth",
            )
        return float(population_law(population, "mean", self.name).mean()) ** 2

    def _require_product(self) -> None:
        if self.kernel != "product":
            raise ConfigError(
                "smooth sensitivity is available for the 'product' kernel only; use cr-gs for a callable", path="kernel"
            )
