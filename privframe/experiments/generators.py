"""Data generators of the built-in experiments, each describing the population it draws from.

A generator draws one dataset from a ``numpy.random.Generator`` (``sample``) and describes its law
(``population``): a frozen scipy distribution for scalar records, or the parameters of a richer model. The
true value of a statistic comes from the statistic itself (``population_value``, the optional
``pp.PopulationStatistic`` capability), from closed forms, quadrature or optimisation, never from
simulation; the harness knows no statistic by name.

Names: ``bernoulli``, ``truncated-normal``, ``uniform``, ``normal``, ``clipped-normal``, ``clipped-lognormal``,
``logistic``.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Mapping
from typing import Any, ClassVar, Protocol

import attrs
import numpy as np
from scipy import integrate, special, stats

from privframe._typing import Array
from privframe.errors import ConfigError

__all__ = [
    "GENERATORS",
    "Bernoulli",
    "ClippedLogNormal",
    "ClippedNormal",
    "Generator",
    "Logistic",
    "Normal",
    "TruncatedNormal",
    "Uniform",
    "make_generator",
]


class Generator(Protocol):
    """A data-generating process that describes its population."""

    name: ClassVar[str]

    def sample(self, n: int, rng: np.random.Generator) -> Array:
        """One dataset of n records."""

    def population(self) -> Any:
        """The law of one record, as statistics' ``population_value`` reads it."""


def _finite(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError("must be a finite number", path=attribute.name)


def _positive(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    _finite(_, attribute, value)
    if value <= 0:
        raise ConfigError("must be > 0", path=attribute.name)


class _ScalarDistribution(abc.ABC):
    """A generator of scalar records whose law is a frozen scipy distribution."""

    name: ClassVar[str]

    @abc.abstractmethod
    def distribution(self) -> Any:
        """The frozen scipy distribution of one record."""

    def population(self) -> Any:
        """The law of one record: the frozen scipy distribution."""
        return self.distribution()


@attrs.frozen
class Bernoulli(_ScalarDistribution):
    """Bernoulli(p) records (0.0 or 1.0)."""

    name: ClassVar[str] = "bernoulli"
    p: float = attrs.field(default=0.05, validator=_finite)

    def __attrs_post_init__(self) -> None:
        if not 0 < self.p < 1:
            raise ConfigError("must be in (0, 1)", path="p")

    def distribution(self) -> Any:
        """scipy's Bernoulli(p)."""
        return stats.bernoulli(self.p)

    def sample(self, n: int, rng: np.random.Generator) -> Array:
        """n Bernoulli(p) draws as floats."""
        return rng.binomial(1, self.p, size=n).astype(np.float64)


@attrs.frozen
class TruncatedNormal(_ScalarDistribution):
    """N(loc, scale^2) truncated to [low, high] (seed1-median: N(0, 2^2) on [-6, 4])."""

    name: ClassVar[str] = "truncated-normal"
    loc: float = attrs.field(default=0.0, validator=_finite)
    scale: float = attrs.field(default=2.0, validator=_positive)
    low: float = attrs.field(default=-6.0, validator=_finite)
    high: float = attrs.field(default=4.0, validator=_finite)

    def __attrs_post_init__(self) -> None:
        if not self.low < self.high:
            raise ConfigError("must be smaller than high", path="low")

    def distribution(self) -> Any:
        """scipy's ``truncnorm`` with standardised limits."""
        a, b = (self.low - self.loc) / self.scale, (self.high - self.loc) / self.scale
        return stats.truncnorm(a=a, b=b, loc=self.loc, scale=self.scale)

    def sample(self, n: int, rng: np.random.Generator) -> Array:
        """n draws (inverse-CDF sampling, vectorised)."""
        return np.asarray(self.distribution().rvs(size=n, random_state=rng), dtype=np.float64)


@attrs.frozen
class Uniform(_ScalarDistribution):
    """Unif[low, high] (seed1-ustat: Unif[-1/2, 1/2])."""

    name: ClassVar[str] = "uniform"
    low: float = attrs.field(default=-0.5, validator=_finite)
    high: float = attrs.field(default=0.5, validator=_finite)

    def __attrs_post_init__(self) -> None:
        if not self.low < self.high:
            raise ConfigError("must be smaller than high", path="low")

    def distribution(self) -> Any:
        """scipy's uniform on [low, high]."""
        return stats.uniform(loc=self.low, scale=self.high - self.low)

    def sample(self, n: int, rng: np.random.Generator) -> Array:
        """n uniform draws."""
        return rng.uniform(self.low, self.high, size=n)


@attrs.frozen
class Normal(_ScalarDistribution):
    """N(loc, scale^2) (seed2-ks: N(0, 1))."""

    name: ClassVar[str] = "normal"
    loc: float = attrs.field(default=0.0, validator=_finite)
    scale: float = attrs.field(default=1.0, validator=_positive)

    def distribution(self) -> Any:
        """scipy's normal."""
        return stats.norm(loc=self.loc, scale=self.scale)

    def sample(self, n: int, rng: np.random.Generator) -> Array:
        """n normal draws."""
        return rng.normal(self.loc, self.scale, size=n)


@attrs.frozen
class ClippedNormal:
    """clip(N(loc, scale^2), [low, high]) (privboot-mean: clip(N(0.5, 1), [0, 1]))."""

    name: ClassVar[str] = "clipped-normal"
    loc: float = attrs.field(default=0.5, validator=_finite)
    scale: float = attrs.field(default=1.0, validator=_positive)
    low: float = attrs.field(default=0.0, validator=_finite)
    high: float = attrs.field(default=1.0, validator=_finite)

    def __attrs_post_init__(self) -> None:
        if not self.low < self.high:
            raise ConfigError("must be smaller than high", path="low")

    def sample(self, n: int, rng: np.random.Generator) -> Array:
        """n clipped normal draws."""
        return np.clip(rng.normal(self.loc, self.scale, size=n), self.low, self.high)

    def population(self) -> Any:
        """The law of one record: a normal clipped to ``[low, high]`` (atoms at both ends)."""
        return ClippedNormalLaw(self.loc, self.scale, self.low, self.high)


@attrs.frozen
class ClippedNormalLaw:
    """``clip(N(loc, scale^2), [low, high])``: scipy-style ``mean``, ``ppf`` and ``cdf``."""

    loc: float
    scale: float
    low: float
    high: float

    def _normal(self) -> Any:
        return stats.norm(loc=self.loc, scale=self.scale)

    def mean(self) -> float:
        """By quadrature over the normal part plus the two atoms."""
        norm = self._normal()
        inside, _ = integrate.quad(lambda x: x * norm.pdf(x), self.low, self.high, epsabs=1e-13)
        return float(self.low * norm.cdf(self.low) + inside + self.high * norm.sf(self.high))

    def ppf(self, q: Any) -> Any:
        """The normal quantile clipped to the range."""
        return np.clip(self._normal().ppf(q), self.low, self.high)

    def cdf(self, x: Any) -> Any:
        """0 below ``low``, 1 from ``high`` on, the normal CDF between."""
        x = np.asarray(x, dtype=np.float64)
        return np.where(x < self.low, 0.0, np.where(x >= self.high, 1.0, self._normal().cdf(x)))


@attrs.frozen
class ClippedLogNormal:
    """clip(LogNormal(meanlog, sdlog), [low, high]): skewed records on public bounds (method-map).

    With the defaults (``exp(N(0, 1))`` on [0, 20]) 0.14% of the records sit at the upper bound.
    """

    name: ClassVar[str] = "clipped-lognormal"
    meanlog: float = attrs.field(default=0.0, validator=_finite)
    sdlog: float = attrs.field(default=1.0, validator=_positive)
    low: float = attrs.field(default=0.0, validator=_finite)
    high: float = attrs.field(default=20.0, validator=_finite)

    def __attrs_post_init__(self) -> None:
        if not self.low < self.high:
            raise ConfigError("must be smaller than high", path="low")

    def sample(self, n: int, rng: np.random.Generator) -> Array:
        """n clipped log-normal draws."""
        return np.clip(np.exp(rng.normal(self.meanlog, self.sdlog, size=n)), self.low, self.high)

    def population(self) -> Any:
        """The law of one record: a log-normal clipped to ``[low, high]`` (atoms at the ends it reaches)."""
        return ClippedLaw(stats.lognorm(s=self.sdlog, scale=math.exp(self.meanlog)), self.low, self.high)


@attrs.frozen
class ClippedLaw:
    """A continuous scipy law clipped to ``[low, high]``: scipy-style ``mean``, ``ppf`` and ``cdf``."""

    law: Any
    low: float
    high: float

    def mean(self) -> float:
        """By quadrature over the part inside the range plus the two atoms."""
        low, high = self.low, self.high
        inside, _ = integrate.quad(lambda x: x * self.law.pdf(x), low, high, epsabs=1e-13, limit=200)
        return float(low * self.law.cdf(low) + inside + high * self.law.sf(high))

    def ppf(self, q: Any) -> Any:
        """The law's quantile clipped to the range."""
        return np.clip(self.law.ppf(q), self.low, self.high)

    def cdf(self, x: Any) -> Any:
        """0 below ``low``, 1 from ``high`` on, the law's CDF between."""
        x = np.asarray(x, dtype=np.float64)
        return np.where(x < self.low, 0.0, np.where(x >= self.high, 1.0, self.law.cdf(x)))


@attrs.frozen
class Logistic:
    """Logistic-regression records ``(z_1, z_2, y)``: ``z = (1, x) / sqrt(2)``, ``x ~ Unif[low, high]``,
    ``P(y = +1 | x) = 1 / (1 + exp(-(intercept + slope x)))``, labels in {-1, +1} (seed2-logistic)."""

    name: ClassVar[str] = "logistic"
    intercept: float = attrs.field(default=0.5, validator=_finite)
    slope: float = attrs.field(default=2.0, validator=_finite)
    low: float = attrs.field(default=-1.0, validator=_finite)
    high: float = attrs.field(default=1.0, validator=_finite)

    def __attrs_post_init__(self) -> None:
        if not self.low < self.high:
            raise ConfigError("must be smaller than high", path="low")
        if max(abs(self.low), abs(self.high)) > 1:
            raise ConfigError("features (1, x)/sqrt(2) need |x| <= 1 to have norm <= 1", path="high")

    def sample(self, n: int, rng: np.random.Generator) -> Array:
        """An ``(n, 3)`` array: the two features and the label."""
        x = rng.uniform(self.low, self.high, size=n)
        positive = rng.uniform(size=n) < special.expit(self.intercept + self.slope * x)
        y = np.where(positive, 1.0, -1.0)
        return np.column_stack((np.full(n, 1.0 / math.sqrt(2.0)), x / math.sqrt(2.0), y))

    def population(self) -> Any:
        """The model itself: ``intercept``, ``slope``, ``low`` and ``high`` describe the records' law."""
        return self


GENERATORS: Mapping[str, type[Any]] = {
    cls.name: cls for cls in (Bernoulli, TruncatedNormal, Uniform, Normal, ClippedNormal, ClippedLogNormal, Logistic)
}


def make_generator(name: object, options: Mapping[str, Any], path: str) -> Generator:
    """Instantiate a generator by name; errors name ``path`` (``experiment.data``)."""
    if not isinstance(name, str) or name not in GENERATORS:
        raise ConfigError(f"expected one of {', '.join(GENERATORS)}", path=f"{path}.generator")
    cls = GENERATORS[name]
    known = [field.name for field in attrs.fields(cls)]
    for key in options:
        if key not in known:
            raise ConfigError(
                f"unknown option for generator '{name}' (known: {', '.join(known)})", path=f"{path}.{key}"
            )
    try:
        generator: Generator = cls(**options)
    except ConfigError as exc:
        raise ConfigError(f"{path}.{exc}") from exc
    return generator
