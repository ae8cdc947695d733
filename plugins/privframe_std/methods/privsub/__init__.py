"""The PrivSub family: the method, its budget calibration and plan, and the ECDF of its releases."""

from __future__ import annotations

from privframe_std.methods.privsub.calibration import (
    SubsampledCalibration,
    calibrate_subsampled,
    compose_subsampled,
)
from privframe_std.methods.privsub.ecdf import SubsampleECDF
from privframe_std.methods.privsub.method import PrivSub

__all__ = ["PrivSub", "SubsampleECDF", "SubsampledCalibration", "calibrate_subsampled", "compose_subsampled"]
