"""The law of one release's noise, for methods that must account for it: described, or drawn from the mechanism.

The noise-aware one-shot radii convolve roots with draws of the noise, and PrivBoot removes the noise's
variance. A mechanism that implements :class:`~privframe.plugin.DescribedNoise` states the law exactly; any
other additive mechanism serves as well: its own ``apply`` on a public input (zeros) returns draws of its
noise, and releasing a function of public constants is privacy-free. Those draws come from the method's
simulation stream, never from a release's.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from privframe._typing import Array
from privframe.errors import ConfigError, PrivframeError
from privframe.plugin.evaluation import guarded
from privframe.plugin.protocols import DescribedNoise, Mechanism
from privframe.privacy.events import PrivacyEvent

__all__ = ["QUANTILE_DRAWS", "SD_DRAWS", "NoiseLaw", "noise_law"]

QUANTILE_DRAWS = 2**16
"""Draws behind a sampled upper quantile."""

SD_DRAWS = 2**18
"""Draws behind a sampled standard deviation (its relative error is about ``1 / sqrt(2 SD_DRAWS)``, 0.14%)."""

_QUANTILE_Z = 4.0
"""A sampled quantile is the order statistic ``z`` binomial SDs above ``N p``: an upper bound except with
probability about 3e-5."""


@attrs.frozen
class NoiseLaw:
    """The noise law of one event: draws for simulation, an upper bound on a quantile, the standard deviation.

    Built by :func:`noise_law`. ``described`` is True when the mechanism states the law
    (:class:`~privframe.plugin.DescribedNoise`), False when the law is drawn from the mechanism itself.
    """

    mechanism: Mechanism | DescribedNoise
    event: PrivacyEvent
    described: bool

    @property
    def name(self) -> str:
        """The mechanism's registered name (or its type's, for an unregistered one)."""
        return str(getattr(self.mechanism, "name", type(self.mechanism).__name__))

    def draws(self, shape: tuple[int, ...], rng: np.random.Generator) -> Array:
        """Independent draws of the noise, ``shape`` ``(rows,)`` for a scalar release or ``(rows, d)``."""
        if isinstance(self.mechanism, DescribedNoise):
            return self.mechanism.noise_draws(self.event, shape, rng)
        return self._sampled(shape, rng)

    def quantile(self, p: float, rng: np.random.Generator) -> float:
        """An upper bound on the p-quantile of one coordinate's noise."""
        if isinstance(self.mechanism, DescribedNoise):
            return float(self.mechanism.noise_quantile(self.event, p))
        draws = np.sort(self._sampled((QUANTILE_DRAWS,), rng))
        count = draws.shape[0]
        rank = math.ceil(count * p + _QUANTILE_Z * math.sqrt(count * p * (1.0 - p)))
        return float(draws[min(rank, count - 1)])

    def sd(self, rng: np.random.Generator) -> float:
        """The standard deviation of one coordinate's noise (an upper bound when described)."""
        if isinstance(self.mechanism, DescribedNoise):
            return float(self.mechanism.noise_sd(self.event))
        return float(np.std(self._sampled((SD_DRAWS,), rng)))

    def _sampled(self, shape: tuple[int, ...], rng: np.random.Generator) -> Array:
        """Draws from the mechanism's ``apply`` on zeros (a public input): one call for a scalar release, one
        call per row for a vector release (whose coordinates may be dependent)."""
        mechanism = self.mechanism
        assert isinstance(mechanism, Mechanism)
        name = mechanism.name
        try:
            with guarded("mechanism", name, "apply"):
                if len(shape) == 1:
                    out = np.asarray(mechanism.apply(np.zeros(shape[0]), self.event, rng), dtype=np.float64)
                else:
                    rows, width = shape
                    out = np.stack(
                        [
                            np.asarray(mechanism.apply(np.zeros(width), self.event, rng), dtype=np.float64)
                            for _ in range(rows)
                        ]
                    )
        except PrivframeError as exc:
            raise ConfigError(
                f"mechanism '{name}' does not describe its noise (pp.DescribedNoise) and drawing it on a public "
                f"input failed ({exc.message}); implement noise_draws, noise_quantile and noise_sd",
                path="mechanism",
            ) from exc
        if out.shape != shape or not np.all(np.isfinite(out)):
            raise ConfigError(
                f"mechanism '{name}' does not describe its noise (pp.DescribedNoise), and its apply on zeros "
                f"returned {'non-finite values' if out.shape == shape else f'shape {out.shape}, not {shape}'}; "
                "implement noise_draws, noise_quantile and noise_sd",
                path="mechanism",
            )
        return out


def noise_law(mechanism: object, event: PrivacyEvent) -> NoiseLaw:
    """The law of the noise ``mechanism`` adds under ``event``: stated if it describes it, else drawn from it.

    Data-independent: the answer depends on the mechanism and the (public) event only. A mechanism that
    neither describes its noise nor adds it (``apply``) is a ``ConfigError`` naming what to implement.
    """
    if isinstance(mechanism, DescribedNoise):
        return NoiseLaw(mechanism, event, described=True)
    if isinstance(mechanism, Mechanism):
        return NoiseLaw(mechanism, event, described=False)
    name = getattr(mechanism, "name", type(mechanism).__name__)
    raise ConfigError(
        f"the noise of mechanism '{name}' can be neither described nor drawn (it is not an additive mechanism)",
        path="mechanism",
    )
