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

import privframe.plugin as pp
from privframe.errors import ConfigError, DataError
from privframe_std.statistics._population import population_law
from privframe_std.statistics.mean import NOISE_MECHANISMS
from privframe_std.statistics.order import LogGrid, log_grid

__all__ = ["UStatistic", "exact_row_sums", "product_log_smooth_sensitivity", "product_log_terms"]

Kernel = Callable[[pp.Array, pp.Array], pp.Array]

_PAIR_BYTES = 24  # kernel value plus two broadcast temporaries per (row, i, j) entry


def _product_u(rows: pp.Array) -> pp.Array:
    """``(S^2 - sum x^2) / (k (k - 1))`` per row; where that overflows, on rows scaled by an exact power of two
    (the same doubles otherwise), so that it is finite whenever the U-statistic itself is."""
    k = rows.shape[1]
    total = rows.sum(axis=1)
    squares = np.einsum("ij,ij->i", rows, rows)
    with np.errstate(over="ignore", invalid="ignore"):
        values: pp.Array = (total * total - squares) / (k * (k - 1))
    bad = ~np.isfinite(values)
    if np.any(bad):
        peak = float(np.max(np.abs(rows[bad])))
        scale = math.ldexp(1.0, -(math.frexp(peak)[1] + k.bit_length()))
        scaled = rows[bad] * scale
        total_s = scaled.sum(axis=1)
        squares_s = np.einsum("ij,ij->i", scaled, scaled)
        with np.errstate(over="ignore"):
            values[bad] = ((total_s * total_s - squares_s) / (k * (k - 1))) / (scale * scale)
    return values


def _check_kernel(_: Any, attribute: Any, value: Any) -> None:
    if value != "product" and not callable(value):
        raise ConfigError("must be 'product' or a symmetric callable h(x, y)", path=attribute.name)


def _check_range(_: Any, attribute: Any, value: Any) -> None:
    if value is None:
        return
    try:
        pp.Bounds(*value)
    except (TypeError, ValueError) as exc:
        raise ConfigError("must be a pair (low, high) of finite numbers with low < high", path=attribute.name) from exc


def _half_width(bounds: Any, name: str) -> float:
    if not isinstance(bounds, pp.Bounds):
        raise ConfigError(f"statistic '{name}' needs scalar bounds (low, high)", path="bounds")
    return max(abs(bounds.low), abs(bounds.high))


_UNIT_ROUNDOFF = 2.0**-53

_U_LOSS = 8
"""Grid steps of beta held back for the rounding loss of the candidate search (at most h + 2 eps <= 4 h)."""


def exact_row_sums(rows: pp.Array, c: float) -> tuple[pp.Array, float]:
    """Row sums of values in ``[-c, c]`` and a bound on their error that holds in any summation order.

    Each value is split as ``x 2^p = hi + lo`` with ``hi`` an integer and ``|lo| <= 1/2`` (both exact), where
    ``2^p <= 2^51 / (k c)``: the integer parts sum exactly (every partial sum is an integer below 2^53), the
    fractional parts with error at most ``(k - 1) u k / 2``, and the final addition rounds once. The bound is
    about ``u k c``, the rounding of the sum itself, instead of the ``u k^2 c`` of a plain sum.
    """
    k = rows.shape[-1]
    p = min(math.floor(51.0 - math.log2(k * c)), 1023)  # 2^p stays a finite double when c is tiny
    if p < 0:  # k c > 2^51: no exact split; the general bound for a sum of k terms of size <= c
        return rows.sum(axis=-1), 2.0 * k * k * c * _UNIT_ROUNDOFF
    scaled = rows * math.ldexp(1.0, p)
    whole = np.rint(scaled)
    scaled -= whole
    total = (whole.sum(axis=-1) + scaled.sum(axis=-1)) * math.ldexp(1.0, -p)
    error = math.ldexp(2.0 * _UNIT_ROUNDOFF * (k * k + math.ldexp(1.0, 53)), -p)
    return total, error


def product_log_smooth_sensitivity(
    total: pp.Array, k: int, c: float, beta: float, total_error: float = 0.0
) -> pp.Array:
    """``ln SS_beta`` of the product-kernel U-statistic for row sums ``total`` of k values in ``[-c, c]``.

    ``A^(j) = min{a + b j, C}`` with ``a = 4c(|S| + c) / (k(k-1))``, ``b = 8c^2 / (k(k-1))``, ``C = 4c^2 / k``,
    i.e. ``A^(j) = min{b (v + j), C}`` with ``v = (|S| + c) / (2c) = a / b``; a neighbour has ``v' <= v + 1``. So
    ``ln SS = max_j min{ln b + ln(v + j), ln C} - j beta``, a concave function of j: its maximum over the
    integers lies next to ``clip(1/beta - v, 0, C/b - v)`` (``C/b = (k-1)/2``), and five candidates around it
    (and j = 0) give the maximum in O(1) per row, computed in logs only (no exp of a large negative number).

    **Exact in floating point** (``product_log_terms``): a neighbour's best term maps to the term ``j + 1``
    here, less by exactly ``beta_step``; the candidates miss the maximum over all j by at most ``h + 2 eps``
    (eps <= 1.5 h, the rounding of ``ln b + ln(v + j)``), which ``_U_LOSS`` grid steps held back from beta
    absorb. So ``|ln SS(x) - ln SS(x')| <= beta`` holds for the floats; the result exceeds the exact ln SS by a
    relative ``O(k u + j h)`` (u the unit roundoff) and is below it by at most one rounding of a log.

    ``total_error`` bounds ``|total - exact sum|`` (``exact_row_sums``); with it the neighbour relation
    ``v' <= v + 1`` survives the rounding of the sums.
    """
    s = np.abs(np.asarray(total, dtype=np.float64))
    grid, g, v = _product_grid(s, k, c, beta, total_error)
    step = 1.0 + g
    kink = np.maximum(((k - 1) / 2.0 - v) / step, 0.0)  # where b (v + j step) reaches C
    peak = np.clip(1.0 / grid.beta_step - v / step, 0.0, kink)
    near = np.floor(peak)[:, np.newaxis] + np.array([-1.0, 0.0, 1.0, 2.0])
    j = np.clip(np.concatenate([np.zeros((s.size, 1)), near], axis=1), 0.0, np.ceil(kink)[:, np.newaxis] + 2.0)
    best: pp.Array = product_log_terms(s, k, c, beta, j, total_error).max(axis=1)
    return best


def product_log_terms(
    total: pp.Array, k: int, c: float, beta: float, spans: pp.Array, total_error: float = 0.0
) -> pp.Array:
    """The grid terms ``min{ln b + ln(v + j), ln C} - j beta`` of each row (rows of ``spans``: its j values).

    ``v`` is rounded up to a grid of spacing g (a power of two at least twice its computing error, including
    ``total_error / (2c)``) and the step of j to ``1 + g``, so ``v + j (1 + g)`` is exact and a neighbour's ``v'``
    is at most ``v + 1 + g``: its term j is at most the term j + 1 here plus ``beta_step``. The logs are rounded
    up to the grid of ``order.log_grid`` and ``j beta`` is ``j beta_step`` there, so these sums are exact.
    ``spans`` has shape ``(B, J)`` (or ``(J,)``, shared); the result ``(B, J)``.
    """
    s = np.abs(np.asarray(total, dtype=np.float64))
    grid, g, v = _product_grid(s, k, c, beta, total_error)
    ln_b = math.log(8.0) + 2.0 * math.log(c) - math.log(k) - math.log(k - 1)
    ln_cap = math.log(4.0) + 2.0 * math.log(c) - math.log(k)
    j = np.asarray(spans, dtype=np.float64)
    logs = np.minimum(ln_b + np.log(v[:, np.newaxis] + j * (1.0 + g)), ln_cap)
    terms: pp.Array = grid.quantize(logs) - grid.decay(j)
    return terms


def _product_grid(s: pp.Array, k: int, c: float, beta: float, total_error: float) -> tuple[LogGrid, float, pp.Array]:
    """The log grid, the spacing g of v and v rounded up to it, for ``s = |total|``."""
    ln_b = math.log(8.0) + 2.0 * math.log(c) - math.log(k) - math.log(k - 1)
    ln_cap = math.log(4.0) + 2.0 * math.log(c) - math.log(k)
    grid = log_grid(abs(ln_b) + abs(ln_cap) + math.log(k + 3.0) + 2.0 * (k + 2) * beta + 4.0, beta, _U_LOSS)
    # |computed v - exact v| plus the rounding of adding it; g >= 2 slack, and v + j (1 + g) <= k + 4 is exact.
    slack = total_error / (2.0 * c) + 6.0 * _UNIT_ROUNDOFF * (k + 2)
    g = math.ldexp(1.0, math.ceil(math.log2(max(2.0 * slack, (k + 3) * 2.0**-52))))
    v: pp.Array = np.ceil((s / (2.0 * c) + 0.5 + slack) / g) * g
    return grid, g, v


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
    traits: ClassVar[pp.StatisticTraits] = pp.StatisticTraits(default_mechanisms=NOISE_MECHANISMS)
    kernel: str | Kernel = attrs.field(default="product", validator=_check_kernel)
    degenerate: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    kernel_range: tuple[float, float] | None = attrs.field(default=None, validator=_check_range)

    def __attrs_post_init__(self) -> None:
        if self.kernel != "product" and self.kernel_range is None:
            raise ConfigError("a callable kernel needs its public range (low, high)", path="kernel_range")

    def rate(self, k: int) -> float:
        """``k`` when declared degenerate, else ``sqrt(k)``."""
        return float(k) if self.degenerate else math.sqrt(k)

    def check_shape(self, shape: tuple[int, ...], bounds: Any) -> None:
        """Scalar bounds and one-dimensional data of at least 2 records."""
        if not isinstance(bounds, pp.Bounds):
            raise ConfigError(f"statistic '{self.name}' needs scalar bounds (low, high)", path="bounds")
        if len(shape) != 1:
            raise DataError(f"statistic '{self.name}' needs one-dimensional data", path="x")
        if shape[0] < 2:
            raise DataError(f"statistic '{self.name}' needs at least 2 records", path="x")

    def prepare(self, x: pp.Array, bounds: Any) -> pp.Array:
        """Clip one-dimensional data to the bounds."""
        self.check_shape(x.shape, bounds)
        assert isinstance(bounds, pp.Bounds)
        return bounds.clip(x)

    def evaluate(self, x: pp.Array) -> pp.Array:
        """U on the full data, shape ``(1,)``."""
        value: pp.Array = self.evaluate_batch(x, np.arange(x.shape[0], dtype=np.intp)[np.newaxis, :])[0]
        return value

    def evaluate_batch(self, x: pp.Array, index: pp.IndexMatrix) -> pp.Array:
        """U on B resamples, shape ``(B, 1)``."""
        k = index.shape[1]
        if k < 2:
            raise ConfigError(f"statistic '{self.name}' needs resamples of at least 2 records", path="m")
        rows = np.take(x, index)
        if self.kernel == "product":
            values: pp.Array = _product_u(rows)[:, np.newaxis]
            return values
        general: pp.Array = self._general(rows)[:, np.newaxis]
        return general

    def _general(self, rows: pp.Array) -> pp.Array:
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

    def value_range(self, bounds: Any) -> tuple[float, float]:
        """The kernel's range: its public ``kernel_range``, or ``x y`` over the bounds (extremes at corners)."""
        if self.kernel != "product":
            assert self.kernel_range is not None
            return self.kernel_range
        if not isinstance(bounds, pp.Bounds):
            raise ConfigError(f"statistic '{self.name}' needs scalar bounds (low, high)", path="bounds")
        corners = (bounds.low * bounds.low, bounds.low * bounds.high, bounds.high * bounds.high)
        return (min(corners), max(corners))

    def sensitivity(self, k: int, bounds: Any) -> float:
        """Global L2 sensitivity on k records: ``4 c^2 / k`` (product) or ``2 W / k`` (kernel range width W).

        The product kernel's float rounding is charged too: ``S = sum x`` and ``sum x^2`` carry at most
        ``(k - 1) u sum |x|`` each (u = 2^-53, the recursive-summation bound, whatever the order), so the value
        ``(S^2 - sum x^2) / (k (k - 1))`` is off by at most ``(2 k + 6) u c^2``; both neighbours' errors,
        ``(4 k + 12) u c^2``, are added (a relative ``k^2 u`` of the sensitivity: 2^-13 at k = 2^20).
        """
        if self.kernel == "product":
            c = _half_width(bounds, self.name)
            return 4.0 * c * c / k + (4.0 * k + 12.0) * 2.0**-53 * c * c * 1.01
        assert self.kernel_range is not None
        return 2.0 * (self.kernel_range[1] - self.kernel_range[0]) / k

    def log_smooth_sensitivity(self, x: pp.Array, beta: float, bounds: Any) -> float:
        """``ln SS_beta`` at the (clipped) full data (product kernel only)."""
        self._require_product()
        c = _half_width(bounds, self.name)
        total, error = exact_row_sums(x[np.newaxis, :], c)
        return float(product_log_smooth_sensitivity(total, x.shape[0], c, beta, error)[0])

    def evaluate_log_smooth_batch(
        self, x: pp.Array, index: pp.IndexMatrix, beta: float, bounds: Any
    ) -> tuple[pp.Array, pp.Array]:
        """Values ``(B, 1)`` and ``ln SS_beta`` ``(B,)`` of B resamples (product kernel only)."""
        self._require_product()
        c = _half_width(bounds, self.name)
        k = index.shape[1]
        rows = np.take(x, index)
        total = rows.sum(axis=1)
        squares = np.einsum("ij,ij->i", rows, rows)
        values = ((total * total - squares) / (k * (k - 1)))[:, np.newaxis]
        exact_total, error = exact_row_sums(rows, c)
        return values, product_log_smooth_sensitivity(exact_total, k, c, beta, error)

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
