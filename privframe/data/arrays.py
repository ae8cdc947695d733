"""Input validation for data, and loading data files for the CLI.

Every message names the argument and the rule, never a value: an error that prints a record leaks it.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from privframe._typing import Array
from privframe.errors import DataError

__all__ = ["as_data", "load_data"]


def as_data(x: npt.ArrayLike, name: str = "x") -> Array:
    """Validate data and return it as a float64 array of shape ``(n,)`` or ``(n, d)``.

    Raises ``DataError`` for non-numeric, scalar, empty, more than two-dimensional, or non-finite data.
    NaN and inf are never dropped: dropping would change n, which is public.
    """
    if isinstance(x, (str, bytes)):
        raise DataError("expected numeric array data, not a string", path=name)
    if isinstance(x, np.ma.MaskedArray) and np.ma.is_masked(x):
        # Using the values under the mask, or dropping them, would both be silent choices (n is public).
        raise DataError(
            "is a masked array with masked entries; pass x.compressed() or x.filled(value) explicitly", path=name
        )
    try:
        raw = np.asarray(x)
        if np.iscomplexobj(raw):  # casting would silently drop the imaginary parts
            raise DataError("expected real numbers, got complex values", path=name)
        if raw.dtype.kind in "USMmV" or (
            raw.dtype.kind == "O" and any(isinstance(v, (str, bytes, np.str_, np.bytes_)) for v in raw.flat)
        ):
            # numpy would parse "1.5" and count datetimes from the epoch: neither is numeric data.
            raise DataError(f"expected real numbers, got {raw.dtype.name} values", path=name)
        arr = np.asarray(raw, dtype=np.float64)
    except DataError:
        raise
    except (TypeError, ValueError):
        raise DataError("expected numeric array data", path=name) from None
    if arr.ndim == 0:
        raise DataError("expected an array of records, got a scalar", path=name)
    if arr.ndim > 2:
        raise DataError(f"expected shape (n,) or (n, d), got {arr.ndim} dimensions", path=name)
    if arr.shape[0] == 0 or arr.size == 0:
        raise DataError("is empty", path=name)
    if not np.all(np.isfinite(arr)):
        raise DataError("contains NaN or infinite values (they are never silently dropped)", path=name)
    return arr


def load_data(path: str | Path, column: str | None = None, columns: Sequence[str] | None = None) -> Array:
    """Load a ``.npy`` array, or one column (``column``) or several (``columns``, in order) of a CSV file
    with a header row.

    A CSV file with more than one column needs ``column`` or ``columns``. Non-numeric cells raise
    ``DataError`` naming the column and row number, never the cell's content.
    """
    if column is not None and columns is not None:
        raise DataError("give either column or columns, not both", path="columns")
    file = Path(path)
    if file.is_dir():
        raise DataError(f"{file.name} is a directory; give a .csv or .npy file", path="data")
    if not file.is_file():
        raise DataError(f"no such file {file.name}", path="data")
    if file.suffix.lower() == ".npy":
        try:
            arr = np.load(file, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise DataError(f"{file.name} is not a readable .npy array", path="data") from exc
        if column is not None or columns is not None:
            raise DataError("only meaningful for CSV data", path="column" if column is not None else "columns")
        return as_data(arr, "data")
    if file.suffix.lower() != ".csv":
        raise DataError("expected a .csv or .npy file", path="data")
    with io.StringIO(_utf8_text(file), newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None:
            raise DataError(f"{file.name} is empty", path="data")
        header = [h.strip() for h in header]
        wanted = [column] if column is not None else list(columns) if columns is not None else None
        if wanted is None:
            if len(header) != 1:
                raise DataError(f"{file.name} has {len(header)} columns; choose one with --column", path="column")
            wanted = header
        missing = [name for name in wanted if name not in header]
        if missing:
            raise DataError(
                f"no column named '{missing[0]}' in {file.name}; {_header_hint(header)}",
                path="column" if column is not None else "columns",
            )
        positions = [header.index(name) for name in wanted]
        rows: list[list[float]] = []
        blank: int | None = None  # first blank line: tolerated only at the end of the file
        for row_number, row in enumerate(reader, start=2):
            if not row:
                blank = blank or row_number
                continue
            if blank is not None:  # a blank line inside the data is a missing value; dropping it would change n
                raise DataError(f"missing cell in column '{header[positions[0]]}' at line {blank}", path="data")
            values: list[float] = []
            for position in positions:
                try:
                    cell = row[position]
                    if "_" in cell:  # float() reads "1_000" as 1000; a CSV number has no digit separators
                        raise ValueError
                    values.append(float(cell))
                except (ValueError, IndexError):
                    raise DataError(
                        f"non-numeric or missing cell in column '{header[position]}' at line {row_number}",
                        path="data",
                    ) from None
            rows.append(values)
    table = np.asarray(rows, dtype=np.float64).reshape(len(rows), len(positions))
    return as_data(table[:, 0] if len(positions) == 1 else table, "data")


def _header_hint(header: list[str]) -> str:
    """What the header holds (column names are schema, not data), and a delimiter hint when it looks like
    another separator than the comma privframe reads."""
    shown = ", ".join(repr(name) for name in header[:20]) + (", ..." if len(header) > 20 else "")
    hint = f"its header has {len(header)} column{'s' if len(header) != 1 else ''}: {shown}"
    if len(header) == 1:
        for separator, label in ((";", "semicolons"), ("\t", "tabs"), ("|", "bars")):
            if separator in header[0]:
                hint += (
                    f" (the header is separated by {label}; privframe reads comma-separated CSV with a '.' "
                    "decimal point: convert the file first)"
                )
                break
    return hint


def _utf8_text(file: Path) -> str:
    """The file's text; a line that is not UTF-8 raises ``DataError`` naming the line, never its bytes."""
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read {file.name} ({exc.strerror})", path="data") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    for number, line in enumerate(raw.split(b"\n"), start=1):
        try:
            line.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError:
            raise DataError(f"{file.name} is not UTF-8 text: line {number} cannot be decoded", path="data") from None
    raise DataError(f"{file.name} is not UTF-8 text", path="data")  # pragma: no cover - a split never heals
