"""Data generators of the built-in experiments, each describing the population it draws from.

A generator draws one dataset from a ``numpy.random.Generator`` (``sample``) and describes its law
(``population``): a frozen scipy distribution for scalar records, or the parameters of a richer model. The
true value of a statistic comes from the statistic itself (``population_value``, the optional
``pp.PopulationStatistic`` capability), from closed forms, quadrature or optimisation, never from
simulation; the harness knows no statistic by name.

Names: ``bernoulli``, ``truncated-normal``, ``uniform``, ``normal``, ``clipped-normal``, ``clipped-lognormal``,
``clipped-t``, ``clipped-mixture``, ``clipped-poisson``, ``shape`` and ``logistic``.

``shape`` names the data shapes of the method map (``privframe/experiments/configs/method-map.toml``): a law
(``lognormal``, ``normal``, ``bimodal``, ``t3``, ``poisson``, ``bernoulli``) clipped to public bounds ``width``
standard deviations (of the unclipped law) wide, from 0 for the non-negative laws and centred at the mean for
the others (:data:`SHAPES`). Every clipped law is exposed with ``mean``, ``ppf`` and ``cdf`` of the *clipped*
law: the mean in closed form or by quadrature (discrete laws: a finite sum of the pmf), the q-quantile as
``inf{x : F(x) >= q}`` (a root finder for the mixture).
"""

from __future__ import annotations

import abc
import math
from collections.abc import Mapping
from typing import Any, ClassVar, Protocol

import attrs
import numpy as np
from scipy import integrate, optimize, special, stats

from privframe._typing import Array
from privframe.errors import ConfigError

__all__ = [
    "GENERATORS",
    "SHAPES",
    "Bernoulli",
    "ClippedDiscreteLaw",
    "ClippedLaw",
    "ClippedLogNormal",
    "ClippedMixture",
    "ClippedMixtureLaw",
    "ClippedNormal",
    "ClippedNormalLaw",
    "ClippedPoisson",
    "ClippedT",
    "Generator",
    "Logistic",
    "Normal",
    "Shape",
    "ShapeSpec",
    "TruncatedNormal",
    "Uniform",
    "make_generator",
    "record_bounds",
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

    def record_bounds(self) -> tuple[float, float]:
        """Records are 0 or 1."""
        return (0.0, 1.0)


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

    def record_bounds(self) -> tuple[float, float]:
        """The range the records lie in."""
        return (self.low, self.high)


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

    def record_bounds(self) -> tuple[float, float]:
        """The range the records lie in."""
        return (self.low, self.high)


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

    def record_bounds(self) -> tuple[float, float]:
        """The range the records lie in."""
        return (self.low, self.high)


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

    def record_bounds(self) -> tuple[float, float]:
        """The range the records lie in."""
        return (self.low, self.high)


@attrs.frozen
class _ClippedScipyLaw:
    """A scipy law clipped to ``[low, high]``: its ``ppf`` and ``cdf`` (a subclass gives the ``mean``).

    The q-quantile ``inf{x : F(x) >= q}`` of the clipped law is the law's own clipped to the range (scipy's
    ``ppf`` is that infimum, for a discrete law too).
    """

    law: Any
    low: float
    high: float

    def ppf(self, q: Any) -> Any:
        """The law's quantile clipped to the range."""
        return np.clip(self.law.ppf(q), self.low, self.high)

    def cdf(self, x: Any) -> Any:
        """0 below ``low``, 1 from ``high`` on, the law's CDF between."""
        x = np.asarray(x, dtype=np.float64)
        return np.where(x < self.low, 0.0, np.where(x >= self.high, 1.0, self.law.cdf(x)))


@attrs.frozen
class ClippedLaw(_ClippedScipyLaw):
    """A continuous scipy law clipped to ``[low, high]``: scipy-style ``mean``, ``ppf`` and ``cdf``."""

    def mean(self) -> float:
        """By quadrature over the part inside the range plus the two atoms."""
        low, high = self.low, self.high
        inside, _ = integrate.quad(lambda x: x * self.law.pdf(x), low, high, epsabs=1e-13, limit=200)
        return float(low * self.law.cdf(low) + inside + high * self.law.sf(high))


@attrs.frozen
class ClippedDiscreteLaw(_ClippedScipyLaw):
    """A discrete scipy law on the integers clipped to ``[low, high]``: scipy-style ``mean``, ``ppf`` and ``cdf``.

    The mean is a finite sum of the pmf over the integers inside the range plus the two atoms at the ends;
    the q-quantile ``inf{x : F(x) >= q}`` of the clipped law is the law's own (scipy's discrete ``ppf`` is that
    infimum) clipped to the range.
    """

    def mean(self) -> float:
        """``sum k p(k)`` over the integers in ``[low, high]``, plus ``low P(X < low) + high P(X > high)``."""
        first, last = math.ceil(self.low), math.floor(self.high)
        ks = np.arange(first, last + 1, dtype=np.float64)
        inside = math.fsum((ks * self.law.pmf(ks)).tolist())
        below = float(self.law.cdf(first - 1))
        above = float(self.law.sf(last))
        return math.fsum([inside, self.low * below, self.high * above])


@attrs.frozen
class ClippedMixtureLaw:
    """An equal mixture of normals ``N(m_i, scale^2)`` clipped to ``[low, high]``: ``mean``, ``ppf`` and ``cdf``.

    The mean in closed form (each clipped component contributes ``a Phi(alpha) + b (1 - Phi(beta)) + m (Phi(beta)
    - Phi(alpha)) + s (phi(alpha) - phi(beta))``, alpha and beta the standardised ends); the q-quantile
    ``inf{x : F(x) >= q}`` by Brent's root finder on the mixture CDF (continuous and strictly increasing inside
    the range), ``low`` or ``high`` where the atom at that end holds it.
    """

    locs: tuple[float, ...]
    scale: float
    low: float
    high: float

    def _raw_cdf(self, x: float) -> float:
        return math.fsum(float(special.ndtr((x - m) / self.scale)) for m in self.locs) / len(self.locs)

    def mean(self) -> float:
        """Closed form: the mean of the clipped components."""
        a, b, s = self.low, self.high, self.scale
        parts = []
        for m in self.locs:
            alpha, beta = (a - m) / s, (b - m) / s
            lo, hi = float(special.ndtr(alpha)), float(special.ndtr(beta))
            dens = (math.exp(-0.5 * alpha * alpha) - math.exp(-0.5 * beta * beta)) / math.sqrt(2.0 * math.pi)
            parts.append(math.fsum([a * lo, b * (1.0 - hi), m * (hi - lo), s * dens]))
        return math.fsum(parts) / len(self.locs)

    def _ppf_one(self, q: float) -> float:
        if not 0.0 <= q <= 1.0:
            return math.nan
        if q <= self._raw_cdf(self.low):
            return self.low
        if q > self._raw_cdf(self.high):
            return self.high
        root = optimize.brentq(lambda x: self._raw_cdf(x) - q, self.low, self.high, xtol=1e-14, rtol=1e-15)
        return float(root)

    def ppf(self, q: Any) -> Any:
        """``inf{x : F(x) >= q}`` of the clipped mixture (a float for a scalar ``q``, else an array)."""
        values = np.asarray(q, dtype=np.float64)
        out = np.array([self._ppf_one(float(v)) for v in values.ravel()], dtype=np.float64).reshape(values.shape)
        return float(out) if out.ndim == 0 else out

    def cdf(self, x: Any) -> Any:
        """0 below ``low``, 1 from ``high`` on, the mixture CDF between."""
        x = np.asarray(x, dtype=np.float64)
        raw = np.mean([special.ndtr((x - m) / self.scale) for m in self.locs], axis=0)
        return np.where(x < self.low, 0.0, np.where(x >= self.high, 1.0, raw))


def _ordered(low: float, high: float) -> None:
    if not low < high:
        raise ConfigError("must be smaller than high", path="low")


@attrs.frozen
class ClippedT:
    """clip(loc + scale t_df, [low, high]): heavy-tailed records on public bounds (method-map: t_3)."""

    name: ClassVar[str] = "clipped-t"
    df: float = attrs.field(default=3.0, validator=_positive)
    loc: float = attrs.field(default=0.0, validator=_finite)
    scale: float = attrs.field(default=1.0, validator=_positive)
    low: float = attrs.field(default=-10.0, validator=_finite)
    high: float = attrs.field(default=10.0, validator=_finite)

    def __attrs_post_init__(self) -> None:
        _ordered(self.low, self.high)

    def sample(self, n: int, rng: np.random.Generator) -> Array:
        """n clipped Student t draws."""
        return np.clip(self.loc + self.scale * rng.standard_t(self.df, size=n), self.low, self.high)

    def population(self) -> Any:
        """The law of one record: Student's t clipped to ``[low, high]`` (mean by quadrature)."""
        return ClippedLaw(stats.t(self.df, loc=self.loc, scale=self.scale), self.low, self.high)

    def record_bounds(self) -> tuple[float, float]:
        """The range the records are clipped to."""
        return (self.low, self.high)


@attrs.frozen
class ClippedMixture:
    """clip of an equal mixture of ``N(loc - separation, scale^2)`` and ``N(loc + separation, scale^2)``
    to ``[low, high]``: bimodal records (method-map: modes at -2 and 2, scale 0.5)."""

    name: ClassVar[str] = "clipped-mixture"
    loc: float = attrs.field(default=0.0, validator=_finite)
    separation: float = attrs.field(default=2.0, validator=_positive)
    scale: float = attrs.field(default=0.5, validator=_positive)
    low: float = attrs.field(default=-10.0, validator=_finite)
    high: float = attrs.field(default=10.0, validator=_finite)

    def __attrs_post_init__(self) -> None:
        _ordered(self.low, self.high)

    def sample(self, n: int, rng: np.random.Generator) -> Array:
        """n clipped mixture draws: a fair coin picks the component, then a normal draw."""
        sign = 2.0 * rng.integers(0, 2, size=n) - 1.0
        draws = self.loc + self.separation * sign + self.scale * rng.standard_normal(size=n)
        return np.clip(draws, self.low, self.high)

    def population(self) -> Any:
        """The law of one record: the clipped mixture (closed-form mean, root-found quantiles)."""
        locs = (self.loc - self.separation, self.loc + self.separation)
        return ClippedMixtureLaw(locs, self.scale, self.low, self.high)

    def record_bounds(self) -> tuple[float, float]:
        """The range the records are clipped to."""
        return (self.low, self.high)


@attrs.frozen
class ClippedPoisson:
    """clip(Poisson(lam), [low, high]) as floats: discrete records with heavy ties (method-map: Poisson(3))."""

    name: ClassVar[str] = "clipped-poisson"
    lam: float = attrs.field(default=3.0, validator=_positive)
    low: float = attrs.field(default=0.0, validator=_finite)
    high: float = attrs.field(default=20.0, validator=_finite)

    def __attrs_post_init__(self) -> None:
        _ordered(self.low, self.high)

    def sample(self, n: int, rng: np.random.Generator) -> Array:
        """n clipped Poisson draws as floats."""
        return np.clip(rng.poisson(self.lam, size=n).astype(np.float64), self.low, self.high)

    def population(self) -> Any:
        """The law of one record: Poisson clipped to ``[low, high]`` (mean: a finite sum of the pmf)."""
        return ClippedDiscreteLaw(stats.poisson(self.lam), self.low, self.high)

    def record_bounds(self) -> tuple[float, float]:
        """The range the records are clipped to."""
        return (self.low, self.high)


@attrs.frozen
class ShapeSpec:
    """One data shape of the method map: the unclipped law's mean and standard deviation, and whether it is
    non-negative (bounds from 0) or not (bounds centred at the mean)."""

    description: str
    mean: float
    sd: float
    non_negative: bool


SHAPES: Mapping[str, ShapeSpec] = {
    "lognormal": ShapeSpec(
        "skewed: exp(N(0, 1))", math.exp(0.5), math.sqrt((math.e - 1.0) * math.e), non_negative=True
    ),
    "normal": ShapeSpec("symmetric: N(0, 1)", 0.0, 1.0, non_negative=False),
    "bimodal": ShapeSpec(
        "bimodal: equal mixture of N(-2, 0.5^2) and N(2, 0.5^2)", 0.0, math.sqrt(4.25), non_negative=False
    ),
    "t3": ShapeSpec("heavy-tailed: Student t, 3 df", 0.0, math.sqrt(3.0), non_negative=False),
    "poisson": ShapeSpec("discrete with heavy ties: Poisson(3)", 3.0, math.sqrt(3.0), non_negative=True),
    "bernoulli": ShapeSpec("rare proportion: Bernoulli(0.02), on [0, 1]", 0.02, math.sqrt(0.02 * 0.98), True),
}
"""The shapes of the ``shape`` generator, by name."""


def _shape_name(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    if value not in SHAPES:
        raise ConfigError(f"expected one of {', '.join(SHAPES)}", path=attribute.name)


@attrs.frozen
class Shape:
    """A data shape of the method map clipped to bounds ``width`` standard deviations wide.

    ``shape`` is one of :data:`SHAPES`. The bounds are ``[0, width sd]`` for the non-negative laws (lognormal,
    poisson) and ``[mean - width sd / 2, mean + width sd / 2]`` for the others, sd the standard deviation of
    the unclipped law; ``bernoulli`` (p = 0.02) is always on ``[0, 1]`` and takes no width. The records are
    drawn by the concrete generator (``clipped-lognormal``, ``clipped-normal``, ``clipped-mixture``,
    ``clipped-t``, ``clipped-poisson``, ``bernoulli``), whose law gives the truths.
    """

    name: ClassVar[str] = "shape"
    shape: str = attrs.field(default="lognormal", validator=_shape_name)
    width: float | None = attrs.field(default=None)

    def __attrs_post_init__(self) -> None:
        if self.shape == "bernoulli":
            if self.width is not None:
                raise ConfigError("the bernoulli shape is always on [0, 1] and takes no width", path="width")
            return
        if self.width is None:
            raise ConfigError("needed: the width of the bounds in standard deviations", path="width")
        if not (math.isfinite(self.width) and self.width > 0):
            raise ConfigError("must be a finite number > 0", path="width")

    def record_bounds(self) -> tuple[float, float]:
        """The public bounds of the shape (the records are clipped to them)."""
        spec = SHAPES[self.shape]
        if self.shape == "bernoulli":
            return (0.0, 1.0)
        assert self.width is not None
        span = self.width * spec.sd
        if spec.non_negative:
            return (0.0, span)
        return (spec.mean - span / 2.0, spec.mean + span / 2.0)

    def generator(self) -> Generator:
        """The concrete generator that draws the records."""
        low, high = self.record_bounds()
        if self.shape == "lognormal":
            return ClippedLogNormal(0.0, 1.0, low, high)
        if self.shape == "normal":
            return ClippedNormal(0.0, 1.0, low, high)
        if self.shape == "bimodal":
            return ClippedMixture(0.0, 2.0, 0.5, low, high)
        if self.shape == "t3":
            return ClippedT(3.0, 0.0, 1.0, low, high)
        if self.shape == "poisson":
            return ClippedPoisson(3.0, low, high)
        return Bernoulli(0.02)

    def sample(self, n: int, rng: np.random.Generator) -> Array:
        """n records of the shape."""
        return self.generator().sample(n, rng)

    def population(self) -> Any:
        """The law of one record (the concrete generator's)."""
        return self.generator().population()


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
    cls.name: cls
    for cls in (
        Bernoulli,
        TruncatedNormal,
        Uniform,
        Normal,
        ClippedNormal,
        ClippedLogNormal,
        ClippedT,
        ClippedMixture,
        ClippedPoisson,
        Shape,
        Logistic,
    )
}


def record_bounds(generator: Generator) -> tuple[float, float] | None:
    """The range a generator's records lie in, when it states one (its ``record_bounds()``), else None.

    A variant of an experiment without explicit bounds uses these as its public bounds.
    """
    method = getattr(generator, "record_bounds", None)
    if method is None:
        return None
    low, high = method()
    return (float(low), float(high))


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
