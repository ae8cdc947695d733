"""What the noise mechanisms share: sensitivity checks, and how a lattice plan travels in an event."""

from __future__ import annotations

import math

import attrs
import numpy as np
from scipy.special import ndtri

import privframe as pf
from privframe.errors import BudgetError
from privframe.privacy import noise

__all__ = [
    "GRID_MARGIN",
    "check_sensitivity",
    "float_event",
    "GaussianNoiseLaw",
    "gaussian_quantile",
    "laplace_quantile",
    "lattice_details",
    "lattice_plan",
]

GRID_MARGIN = 2.0**-18
"""Relative margin for quantiles of exact noise: half a grid step of rounding plus two steps of the
discrete law's tail beyond the continuous one's, each step at most ``2^-20`` of the scale."""

FLOAT_NOTE = "float noise: for simulations only, not safe against floating-point attacks"


def check_sensitivity(sensitivity: float) -> float:
    """A finite, non-negative sensitivity."""
    value = float(sensitivity)
    if not math.isfinite(value) or value < 0:
        raise BudgetError("must be a finite number >= 0", path="sensitivity")
    return value


def lattice_details(event: pf.PrivacyEvent, plan: noise.LatticePlan) -> pf.PrivacyEvent:
    """The event with the lattice plan in its details (public numbers) and its noise scale."""
    details = {
        **event.details,
        "grid": plan.grid,
        "t": float(plan.t),
        "q": float(plan.q),
        "sensitivity_units": plan.sensitivity,
    }
    if plan.kind == "gaussian":
        details["mu_effective"] = plan.mu
        text = "exact discrete Gaussian on a power-of-two grid; rounding charged in the sensitivity"
    else:
        details["epsilon_effective"] = plan.epsilon
        text = "exact discrete Laplace on a power-of-two grid; rounding charged in the sensitivity"
    note = f"{event.note}; {text}" if event.note else text
    return attrs.evolve(event, noise_scale=plan.scale, details=details, note=note)


def lattice_plan(event: pf.PrivacyEvent, kind: str) -> noise.LatticePlan:
    """The lattice plan an event carries (planned by :func:`lattice_details`)."""
    details = event.details
    try:
        return noise.LatticePlan(
            kind, details["grid"], int(details["t"]), int(details["q"]), details["sensitivity_units"]
        )
    except KeyError:
        raise BudgetError("the event was not planned by this mechanism", path="event") from None


def float_event(event: pf.PrivacyEvent, scale: float) -> pf.PrivacyEvent:
    """The event of a floating-point release, flagged so in its details and note."""
    note = f"{event.note}; {FLOAT_NOTE}" if event.note else FLOAT_NOTE
    return attrs.evolve(event, noise_scale=scale, details={**event.details, "float_noise": 1.0}, note=note)


def gaussian_quantile(sd: float, p: float) -> float:
    """An upper bound on the p-quantile of N(0, sd^2) noise as released on a grid (rounding included)."""
    return sd * (float(ndtri(p)) + GRID_MARGIN)


def laplace_quantile(scale: float, p: float) -> float:
    """An upper bound on the p-quantile of Laplace(scale) noise as released on a grid (rounding included)."""
    core = -math.log(2.0 * (1.0 - p)) if p >= 0.5 else math.log(2.0 * p)
    return scale * (core + GRID_MARGIN)


class GaussianNoiseLaw:
    """The :class:`privframe.DescribedNoise` members of a mechanism whose noise is N(0, noise_scale^2).

    Shared by ``gaussian`` and ``ptr-gdp`` (its release noise). Slot-free, so attrs classes keep their slots.
    """

    __slots__ = ()

    def noise_quantile(self, noise_scale: float, p: float) -> float:
        """An upper bound on the p-quantile of one coordinate's noise (rounding to the grid included)."""
        return gaussian_quantile(noise_scale, p)

    def noise_sd(self, noise_scale: float) -> float:
        """``noise_scale`` (the discrete Gaussian's variance is at most its parameter's square)."""
        return noise_scale

    def noise_draws(self, noise_scale: float, shape: tuple[int, ...], rng: np.random.Generator) -> pf.Array:
        """Draws of the noise's law, for simulation only (floating point; never added to a release)."""
        draws: pf.Array = noise_scale * rng.standard_normal(shape)
        return draws
