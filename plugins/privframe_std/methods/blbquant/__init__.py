"""The BLBQuant family: bag of little bootstraps with a private median search (pure eps-DP)."""

from __future__ import annotations

from privframe_std.methods.blbquant.method import BLBQuant, blb_blocks, blb_replicates, default_bin_width

__all__ = ["BLBQuant", "blb_blocks", "blb_replicates", "default_bin_width"]
