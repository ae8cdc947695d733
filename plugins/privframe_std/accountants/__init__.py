"""Standard accountants."""

from __future__ import annotations

import privframe.plugin as pp
from privframe_std.accountants.approx_dp import ApproxDPAccountant
from privframe_std.accountants.gdp import GDPAccountant

__all__ = ["ApproxDPAccountant", "GDPAccountant"]


@pp.hookimpl
def privframe_register_accountants(registry: pp.AccountantRegistry) -> None:
    """Register the standard accountants."""
    registry.add(GDPAccountant)
    registry.add(ApproxDPAccountant)
