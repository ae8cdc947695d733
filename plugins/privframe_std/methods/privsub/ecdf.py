"""The empirical CDF of PrivSub's rescaled subsample releases, and the intervals read from it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

import privframe.plugin as pp
from privframe.errors import ConfigError

__all__ = ["INTERVAL_KINDS", "QUANTILE_METHODS", "SubsampleECDF"]

QUANTILE_METHODS = ("weibull", "linear", "inverted_cdf", "averaged_inverted_cdf", "closest_observation", "hazen")
"""numpy quantile methods accepted for reading interval end points from the ECDF."""

INTERVAL_KINDS = ("basic", "percentile")
"""How an interval is read from the ECDF (``PrivSub``'s ``interval`` option)."""


def _sorted_readonly(values: npt.ArrayLike) -> pp.Array:
    arr = np.sort(np.array(values, dtype=np.float64).reshape(-1))
    arr.flags.writeable = False
    return arr


@attrs.frozen(eq=False)
class SubsampleECDF:
    """The empirical CDF of ``Z_t = theta_n + (tau_m / tau_n)(theta_{m,t} - theta_n)``, t = 1..T.

    Every ``Z_t`` is post-processing of private releases, so any number of levels can be read from one
    run at no extra privacy cost.

    Attributes
    ----------
    values : ndarray
        The T values ``Z_t``, sorted, read-only.
    center : float
        The private full-data release ``theta_n``.
    quantile_method : str
        The numpy quantile method used for end points (default ``"weibull"``, plotting positions p (T + 1)).
    kind : {"basic", "percentile"}
        The interval :meth:`interval` reads by default: the one the method released (default ``"basic"``).
    """

    values: pp.Array = attrs.field(converter=_sorted_readonly)
    center: float
    quantile_method: str = "weibull"
    kind: str = "basic"

    def __attrs_post_init__(self) -> None:
        if self.values.shape[0] < 2:
            raise ConfigError("an empirical CDF needs at least 2 subsample releases", path="T")
        if self.quantile_method not in QUANTILE_METHODS:
            raise ConfigError(f"must be one of {', '.join(QUANTILE_METHODS)}", path="quantile_method")
        if self.kind not in INTERVAL_KINDS:
            raise ConfigError(f"must be one of {', '.join(INTERVAL_KINDS)}", path="interval")

    @property
    def count(self) -> int:
        """T, the number of subsample releases."""
        return int(self.values.shape[0])

    def cdf(self, t: npt.ArrayLike) -> Any:
        """``#{Z_s <= t} / T`` (a float for a scalar ``t``, else an array)."""
        result = np.searchsorted(self.values, np.asarray(t, dtype=np.float64), side="right") / self.count
        return float(result) if np.ndim(result) == 0 else result

    def quantile(self, p: npt.ArrayLike) -> Any:
        """Empirical quantile(s) of the ``Z_t`` with :attr:`quantile_method`."""
        levels = np.asarray(p, dtype=np.float64)
        if not np.all((levels >= 0) & (levels <= 1)):
            raise ConfigError("quantile levels must lie in [0, 1]", path="p")
        result = np.quantile(self.values, levels, method=self.quantile_method)  # type: ignore[call-overload]
        return float(result) if np.ndim(result) == 0 else result

    def interval(self, confidence: float, kind: str | None = None) -> tuple[float, float]:
        """The ``confidence`` interval from this ECDF.

        Parameters
        ----------
        confidence : float
            Nominal coverage, in (0, 1).
        kind : {"basic", "percentile"}, optional
            ``"basic"``: ``[theta_n - q_hi / tau_n, theta_n - q_lo / tau_n]`` with q the quantiles of
            ``tau_m (theta_{m,t} - theta_n) = tau_n (Z_t - theta_n)``, i.e. ``[2 theta_n - Z_(1-alpha/2),
            2 theta_n - Z_(alpha/2)]``; ``"percentile"``: ``[Z_(alpha/2), Z_(1-alpha/2)]``. Unset, the
            ECDF's :attr:`kind` (the interval the method released).

        Returns
        -------
        tuple of float
            The end points ``(low, high)``.
        """
        if not 0 < confidence < 1:
            raise ConfigError("must satisfy 0 < confidence < 1", path="confidence")
        kind = self.kind if kind is None else kind
        alpha = 1.0 - confidence
        low, high = (float(v) for v in self.quantile([alpha / 2, 1 - alpha / 2]))
        if kind == "percentile":
            return low, high
        if kind == "basic":
            return 2 * self.center - high, 2 * self.center - low
        raise ConfigError(f"must be one of {', '.join(INTERVAL_KINDS)}", path="interval")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready table (how a saved result keeps it; :meth:`from_dict` rebuilds the ECDF).

        Examples
        --------
        >>> from privframe_std.methods.privsub.ecdf import SubsampleECDF
        >>> ecdf = SubsampleECDF([0.3, 0.1, 0.2], center=0.2)
        >>> ecdf.to_dict()
        {'values': [0.1, 0.2, 0.3], 'center': 0.2, 'quantile_method': 'weibull', 'kind': 'basic'}
        >>> SubsampleECDF.from_dict(ecdf.to_dict()).interval(0.5) == ecdf.interval(0.5)
        True
        """
        return {
            "values": self.values.tolist(),
            "center": float(self.center),
            "quantile_method": self.quantile_method,
            "kind": self.kind,
        }

    @classmethod
    def from_dict(cls, table: Mapping[str, Any]) -> SubsampleECDF:
        """The ECDF a :meth:`to_dict` table describes (e.g. ``diagnostics["ecdf"]`` of a loaded result)."""
        try:
            return cls(
                values=table["values"],
                center=float(table["center"]),
                quantile_method=str(table.get("quantile_method", "weibull")),
                kind=str(table.get("kind", "basic")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError("expected a table with 'values' and 'center'", path="ecdf") from exc
