"""Running the one-shot methods on a Dask array: partial sums on the workers, releases on the client."""

from __future__ import annotations

__all__: list[str] = []
