"""Data generators of the built-in experiments, each with the true value of the statistics it supports.

A generator draws one dataset from a ``numpy.random.Generator`` (``sample``) and knows the population
value a statistic estimates (``truth``). Truths come from closed forms, scipy distributions,
quadrature or optimisation (see :mod:`privframe.experiments.truths`), never from simulation.

Names: ``bernoulli``, ``truncated-normal``, ``uniform``, ``normal``, ``clipped-normal``, ``logistic``.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Protocol

import attrs
import numpy as np
from scipy import integrate, special, stats

from privframe.errors import ConfigError
from privframe.experiments.truths import ks_distance, logistic_penalised_coefficients
from privframe.types import Array

__all__ = [
    "GENERATORS",
    "Bernoulli",
    "ClippedNormal",
    "Generator",
    "Logistic",
    "Normal",
    "TruncatedNormal",
    "Uniform",
    "make_generator",
]


class Generator(Protocol):
    """A data-generating process with known population values."""

    name: ClassVar[str]

    def sample(self, n: int, rng: np.random.Generator) -> Array:
        """One dataset of n records."""

    def truth(self, statistic: str, options: Mapping[str, Any]) -> float:
        """The population value the statistic (with its options) estimates; ``ConfigError`` if unknown."""


def _finite(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"{attribute.name}: must be a finite number")


def _positive(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    _finite(_, attribute, value)
    if value <= 0:
        raise ConfigError(f"{attribute.name}: must be > 0")


def _unknown_truth(generator: str, statistic: str) -> ConfigError:
    return ConfigError(
        f"truth: generator '{generator}' has no known population value for statistic '{statistic}' "
        "(give the method's truth explicitly)"
    )


def _quantile_level(options: Mapping[str, Any]) -> float:
    q = options.get("q", 0.5)
    if isinstance(q, bool) or not isinstance(q, (int, float)) or not 0 < q < 1:
        raise ConfigError("q: must be a number in (0, 1)")
    return float(q)


def _reference_cdf(options: Mapping[str, Any]) -> Callable[[Array], Array]:
    reference = options.get("reference")
    cdf = getattr(reference, "cdf", reference)
    if not callable(cdf):
        raise ConfigError("reference: the ks statistic needs a reference distribution to compute its truth")
    return lambda x: np.asarray(cdf(x), dtype=np.float64)


class _ScalarDistribution(abc.ABC):
    """Truths of scalar statistics from a frozen scipy distribution (``mean``, ``median``, ``quantile``,
    ``u-statistic`` with the product kernel, ``ks``)."""

    name: ClassVar[str]

    @abc.abstractmethod
    def distribution(self) -> Any:
        """The frozen scipy distribution of one record."""

    def truth(self, statistic: str, options: Mapping[str, Any]) -> float:
        """The population value of a scalar statistic."""
        dist = self.distribution()
        if statistic == "mean":
            return float(dist.mean())
        if statistic == "median":
            # The lower median; equal to the population median for a continuous distribution.
            return float(dist.ppf(0.5))
        if statistic == "quantile":
            return float(dist.ppf(_quantile_level(options)))
        if statistic == "u-statistic":
            if options.get("kernel", "product") != "product":
                raise _unknown_truth(self.name, "u-statistic with a custom kernel")
            return float(dist.mean()) ** 2
        if statistic == "ks":
            low, high = (float(v) for v in dist.ppf([1e-12, 1 - 1e-12]))
            span = high - low
            return ks_distance(dist.cdf, _reference_cdf(options), low - 2 * span, high + 2 * span)
        raise _unknown_truth(self.name, statistic)


@attrs.frozen
class Bernoulli(_ScalarDistribution):
    """Bernoulli(p) records (0.0 or 1.0)."""

    name: ClassVar[str] = "bernoulli"
    p: float = attrs.field(default=0.05, validator=_finite)

    def __attrs_post_init__(self) -> None:
        if not 0 < self.p < 1:
            raise ConfigError("p: must be in (0, 1)")

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
            raise ConfigError("low: must be smaller than high")

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
            raise ConfigError("low: must be smaller than high")

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
            raise ConfigError("low: must be smaller than high")

    def sample(self, n: int, rng: np.random.Generator) -> Array:
        """n clipped normal draws."""
        return np.clip(rng.normal(self.loc, self.scale, size=n), self.low, self.high)

    def truth(self, statistic: str, options: Mapping[str, Any]) -> float:
        """Mean (by quadrature over the normal part plus the two atoms), median and quantiles."""
        norm = stats.norm(loc=self.loc, scale=self.scale)
        if statistic == "mean":
            inside, _ = integrate.quad(lambda x: x * norm.pdf(x), self.low, self.high, epsabs=1e-13)
            return float(self.low * norm.cdf(self.low) + inside + self.high * norm.sf(self.high))
        if statistic in ("median", "quantile"):
            q = 0.5 if statistic == "median" else _quantile_level(options)
            return float(np.clip(norm.ppf(q), self.low, self.high))
        raise _unknown_truth(self.name, statistic)


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
            raise ConfigError("low: must be smaller than high")
        if max(abs(self.low), abs(self.high)) > 1:
            raise ConfigError("high: features (1, x)/sqrt(2) need |x| <= 1 to have norm <= 1")

    def sample(self, n: int, rng: np.random.Generator) -> Array:
        """An ``(n, 3)`` array: the two features and the label."""
        x = rng.uniform(self.low, self.high, size=n)
        positive = rng.uniform(size=n) < special.expit(self.intercept + self.slope * x)
        y = np.where(positive, 1.0, -1.0)
        return np.column_stack((np.full(n, 1.0 / math.sqrt(2.0)), x / math.sqrt(2.0), y))

    def truth(self, statistic: str, options: Mapping[str, Any]) -> float:
        """The chosen coefficient (``coef``, default the last feature) of the penalised population minimiser."""
        if statistic != "logistic-slope":
            raise _unknown_truth(self.name, statistic)
        penalty = options.get("penalty", 0.01)
        coef = options.get("coef", -1)
        if isinstance(penalty, bool) or not isinstance(penalty, (int, float)):
            raise ConfigError("penalty: must be a number > 0")
        if isinstance(coef, bool) or not isinstance(coef, int) or not -2 <= coef <= 1:
            raise ConfigError("coef: must be a feature index (0, 1, or -1 for the last)")
        b = logistic_penalised_coefficients(self.intercept, self.slope, self.low, self.high, float(penalty))
        return float(b[coef])


GENERATORS: Mapping[str, type[Any]] = {
    cls.name: cls for cls in (Bernoulli, TruncatedNormal, Uniform, Normal, ClippedNormal, Logistic)
}


def make_generator(name: object, options: Mapping[str, Any], path: str) -> Generator:
    """Instantiate a generator by name; errors name ``path`` (``experiment.data``)."""
    if not isinstance(name, str) or name not in GENERATORS:
        raise ConfigError(f"{path}.generator: expected one of {', '.join(GENERATORS)}")
    cls = GENERATORS[name]
    known = [field.name for field in attrs.fields(cls)]
    for key in options:
        if key not in known:
            raise ConfigError(f"{path}.{key}: unknown option for generator '{name}' (known: {', '.join(known)})")
    try:
        generator: Generator = cls(**options)
    except ConfigError as exc:
        raise ConfigError(f"{path}.{exc}") from exc
    return generator
