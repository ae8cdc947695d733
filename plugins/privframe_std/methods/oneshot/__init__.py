"""The one-shot family: CR-GS, CR-SS and their non-private reference, m-out-of-n subsampling."""

from __future__ import annotations

from privframe_std.methods.oneshot.cr_gs import CRGS
from privframe_std.methods.oneshot.cr_ss import CRSS, cr_ss_beta, cr_ss_budget, noise_optimal_beta
from privframe_std.methods.oneshot.subsampling import Subsampling

__all__ = ["CRGS", "CRSS", "Subsampling", "cr_ss_beta", "cr_ss_budget", "noise_optimal_beta"]
