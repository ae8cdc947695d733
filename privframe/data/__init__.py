"""Data at the front door: arrays and tables validated once, files, and Dask arrays that stay on the workers."""

from __future__ import annotations

from privframe.data.arrays import as_data, load_data

__all__ = ["as_data", "load_data"]
