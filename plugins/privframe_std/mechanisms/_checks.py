"""What the noise mechanisms share: sensitivity checks, and how a lattice plan travels in an event."""

from __future__ import annotations

import math

import attrs
import numpy as np

import privframe.plugin as pp
from privframe._typing import LazyModule
from privframe.errors import BudgetError
from privframe.privacy import noise

special = LazyModule("scipy.special")  # imported on first use (0.2 s the plugins' loading need not pay)

__all__ = [
    "GRID_MARGIN",
    "check_sensitivity",
    "GaussianNoiseLaw",
    "float_event",
    "gaussian_quantile",
    "laplace_quantile",
    "lattice_event",
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


def lattice_event(event: pp.PrivacyEvent, plan: noise.LatticePlan) -> pp.PrivacyEvent:
    """The event with its lattice plan (public numbers) and its noise scale."""
    law = "Gaussian" if plan.kind == "gaussian" else "Laplace"
    text = f"exact discrete {law} on a power-of-two grid; rounding charged in the sensitivity"
    note = f"{event.note}; {text}" if event.note else text
    return attrs.evolve(event, noise_scale=plan.scale, noise=plan, note=note)


def lattice_plan(event: pp.PrivacyEvent, kind: str) -> noise.LatticePlan:
    """The lattice plan an event carries (planned by :func:`lattice_event`)."""
    plan = event.noise
    if not isinstance(plan, noise.LatticePlan) or plan.kind != kind:
        raise BudgetError("the event was not planned by this mechanism", path="event")
    return plan


def float_event(event: pp.PrivacyEvent, kind: str, scale: float) -> pp.PrivacyEvent:
    """The event of a floating-point release, flagged so in its noise plan and note."""
    note = f"{event.note}; {FLOAT_NOTE}" if event.note else FLOAT_NOTE
    return attrs.evolve(event, noise_scale=scale, noise=noise.FloatNoise(kind), note=note)


def gaussian_quantile(sd: float, p: float) -> float:
    """An upper bound on the p-quantile of N(0, sd^2) noise as released on a grid (rounding included)."""
    return sd * (float(special.ndtri(p)) + GRID_MARGIN)


def laplace_quantile(scale: float, p: float) -> float:
    """An upper bound on the p-quantile of Laplace(scale) noise as released on a grid (rounding included)."""
    core = -math.log(2.0 * (1.0 - p)) if p >= 0.5 else math.log(2.0 * p)
    return scale * (core + GRID_MARGIN)


class GaussianNoiseLaw:
    """The :class:`privframe.plugin.DescribedNoise` members of a mechanism whose noise is N(0, scale^2), with
    ``scale`` the event's ``noise_scale``.

    Shared by ``gaussian`` and ``ptr-gdp`` (its release noise). Slot-free, so attrs classes keep their slots.
    """

    __slots__ = ()

    def noise_quantile(self, event: pp.PrivacyEvent, p: float) -> float:
        """An upper bound on the p-quantile of one coordinate's noise (rounding to the grid included)."""
        return gaussian_quantile(event.noise_scale or 0.0, p)

    def noise_sd(self, event: pp.PrivacyEvent) -> float:
        """The event's ``noise_scale`` (the discrete Gaussian's variance is at most its parameter's square)."""
        return event.noise_scale or 0.0

    def noise_draws(self, event: pp.PrivacyEvent, shape: tuple[int, ...], rng: np.random.Generator) -> pp.Array:
        """Draws of the noise's law, for simulation only (floating point; never added to a release)."""
        draws: pp.Array = (event.noise_scale or 0.0) * rng.standard_normal(shape)
        return draws
