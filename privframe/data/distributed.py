"""Data that stay where they live: a Dask array at the front door (``docs/cluster.md``).

A Dask array is never converted to numpy on the client. Its shape (n, and d) is public; its values are read
only by tasks on the workers (or the threaded scheduler without a cluster), which return per-resample
partial sums. Only decomposable statistics (:class:`privframe.plugin.DecomposableStatistic`) with a
method whose needs declare ``distributed=True`` accept such data; anything else is a ``ConfigError`` before a
single value is read. Dask is never imported here: an array is recognised by its type's module.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from privframe.errors import DataError

__all__ = ["DistributedData", "as_distributed", "is_dask_array"]


def is_dask_array(x: object) -> bool:
    """Whether ``x`` is a ``dask.array.Array`` (recognised without importing dask)."""
    return any(cls.__name__ == "Array" and cls.__module__.split(".")[0] == "dask" for cls in type(x).__mro__)


@attrs.frozen(eq=False)
class DistributedData:
    """A validated Dask array of records, shape ``(n,)`` or ``(n, d)``; only its shape is read on the client.

    Attributes
    ----------
    array : dask.array.Array
        The records, chunked in any way along the rows.
    """

    array: Any

    @property
    def shape(self) -> tuple[int, ...]:
        """The public shape ``(n,)`` or ``(n, d)``."""
        return tuple(int(size) for size in self.array.shape)

    @property
    def n(self) -> int:
        """Number of records (public)."""
        return self.shape[0]


def as_distributed(x: Any, name: str = "x") -> DistributedData:
    """Check a Dask array's public properties (dtype, shape); its values are checked on the workers.

    Raises ``DataError`` for a non-numeric dtype, a shape that is not ``(n,)`` or ``(n, d)``, an empty array,
    or unknown chunk sizes (n must be known before anything is computed).
    """
    kind = getattr(getattr(x, "dtype", None), "kind", "O")
    if kind not in "biuf":
        raise DataError(f"expected real numbers, got a Dask array of {x.dtype} values", path=name)
    shape = tuple(x.shape)
    if len(shape) not in (1, 2):
        raise DataError(f"expected shape (n,) or (n, d), got {len(shape)} dimensions", path=name)
    if any(isinstance(size, float) and math.isnan(size) for size in shape):
        raise DataError("is a Dask array of unknown length; call x.compute_chunk_sizes() first", path=name)
    if shape[0] == 0 or math.prod(shape) == 0:
        raise DataError("is empty", path=name)
    return DistributedData(x)
