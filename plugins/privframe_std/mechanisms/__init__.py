"""Standard mechanisms."""

from __future__ import annotations

import privframe.plugin as pp
from privframe_std.mechanisms.exponential import ExponentialMechanism
from privframe_std.mechanisms.gaussian import GaussianMechanism
from privframe_std.mechanisms.laplace import LaplaceMechanism
from privframe_std.mechanisms.ptr_gdp import PTRGDP

__all__ = ["PTRGDP", "ExponentialMechanism", "GaussianMechanism", "LaplaceMechanism"]


@pp.hookimpl
def privframe_register_mechanisms(registry: pp.MechanismRegistry) -> None:
    """Register the standard mechanisms (their guarantees are privframe's own claims)."""
    registry.add(GaussianMechanism, asserts_privacy=True)
    registry.add(LaplaceMechanism, asserts_privacy=True)
    registry.add(PTRGDP, asserts_privacy=True)
    registry.add(ExponentialMechanism, asserts_privacy=True)
