"""Input validation for data, and loading data files for the CLI.

Every message names the argument and the rule, never a value: an error that prints a record leaks it.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import numpy.typing as npt

from privframe.errors import DataError
from privframe.types import Array

__all__ = ["as_data", "load_data"]


def as_data(x: npt.ArrayLike, name: str = "x") -> Array:
    """Validate data and return it as a float64 array of shape ``(n,)`` or ``(n, d)``.

    Raises ``DataError`` for non-numeric, scalar, empty, more than two-dimensional, or non-finite data.
    NaN and inf are never dropped: dropping would change n, which is public.
    """
    if isinstance(x, (str, bytes)):
        raise DataError(f"{name}: expected numeric array data, not a string")
    try:
        raw = np.asarray(x)
        if np.iscomplexobj(raw):  # casting would silently drop the imaginary parts
            raise DataError(f"{name}: expected real numbers, got complex values")
        arr = np.asarray(raw, dtype=np.float64)
    except DataError:
        raise
    except (TypeError, ValueError):
        raise DataError(f"{name}: expected numeric array data") from None
    if arr.ndim == 0:
        raise DataError(f"{name}: expected an array of records, got a scalar")
    if arr.ndim > 2:
        raise DataError(f"{name}: expected shape (n,) or (n, d), got {arr.ndim} dimensions")
    if arr.shape[0] == 0 or arr.size == 0:
        raise DataError(f"{name}: is empty")
    if not np.all(np.isfinite(arr)):
        raise DataError(f"{name}: contains NaN or infinite values (they are never silently dropped)")
    return arr


def load_data(path: str | Path, column: str | None = None) -> Array:
    """Load a ``.npy`` array or one column of a CSV file with a header row.

    ``column`` is required for a CSV file with more than one column. Non-numeric cells raise
    ``DataError`` naming the column and row number, never the cell's content.
    """
    file = Path(path)
    if not file.is_file():
        raise DataError(f"data: no such file {file.name}")
    if file.suffix.lower() == ".npy":
        try:
            arr = np.load(file, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise DataError(f"data: {file.name} is not a readable .npy array") from exc
        if column is not None:
            raise DataError("column: only meaningful for CSV data")
        return as_data(arr, "data")
    if file.suffix.lower() != ".csv":
        raise DataError("data: expected a .csv or .npy file")
    with file.open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None:
            raise DataError(f"data: {file.name} is empty")
        header = [h.strip() for h in header]
        if column is None:
            if len(header) != 1:
                raise DataError(f"column: {file.name} has {len(header)} columns; choose one with --column")
            position = 0
        elif column in header:
            position = header.index(column)
        else:
            raise DataError(f"column: no column named '{column}' in {file.name}")
        values: list[float] = []
        blank: int | None = None  # first blank line: tolerated only at the end of the file
        for row_number, row in enumerate(reader, start=2):
            if not row:
                blank = blank or row_number
                continue
            if blank is not None:  # a blank line inside the data is a missing value; dropping it would change n
                raise DataError(f"data: missing cell in column '{header[position]}' at line {blank}")
            try:
                values.append(float(row[position]))
            except (ValueError, IndexError):
                raise DataError(
                    f"data: non-numeric or missing cell in column '{header[position]}' at line {row_number}"
                ) from None
    return as_data(np.asarray(values, dtype=np.float64), "data")
