"""The PrivBoot family: the private n-out-of-n bootstrap, its exact accountant and its deconvolution."""

from __future__ import annotations

from privframe_std.methods.privboot.accounting import PrivBootPLD, calibrate_mu0, privboot_pld
from privframe_std.methods.privboot.method import PrivBoot, privboot_resamples

__all__ = ["PrivBoot", "PrivBootPLD", "calibrate_mu0", "privboot_pld", "privboot_resamples"]
