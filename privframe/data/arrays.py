"""Input validation for data, and loading data files for the CLI.

Every message names the argument and the rule, never a value: an error that prints a record leaks it.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from privframe._typing import Array
from privframe.errors import ConfigError, DataError

__all__ = ["as_data", "chosen_columns", "load_data"]


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
        if raw.dtype.kind == "O" and any(v is None for v in raw.flat):
            # numpy would read None as NaN; the message says what it was, not "NaN".
            raise DataError("contains missing or non-numeric values (they are never silently dropped)", path=name)
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


def chosen_columns(column: object, columns: object) -> list[str] | None:
    """The column names chosen by ``column`` or ``columns`` (None when neither is given), checked.

    Raises ``ConfigError`` for a non-string ``column``, a ``columns`` that is a string or not a sequence of
    strings, an empty ``columns``, or one that names a column twice; ``DataError`` when both are given.
    """
    if column is not None and columns is not None:
        raise DataError("give either column or columns, not both", path="columns")
    if column is not None:
        if not isinstance(column, str):
            raise ConfigError(f"must be a column name (a str), not {type(column).__name__}", path="column")
        return [column]
    if columns is None:
        return None
    if isinstance(columns, (str, bytes)):
        raise ConfigError("must be a list of column names, not a string (use column= for one column)", path="columns")
    if not isinstance(columns, Sequence):
        raise ConfigError(f"must be a list of column names, not {type(columns).__name__}", path="columns")
    wanted: list[str] = []
    for index, name in enumerate(columns):
        if not isinstance(name, str):
            raise ConfigError(f"must be a column name (a str), not {type(name).__name__}", path=f"columns[{index}]")
        if name in wanted:
            raise ConfigError(f"names a column twice ('{name}')", path="columns")
        wanted.append(name)
    if not wanted:
        raise ConfigError("is empty; name at least one column", path="columns")
    return wanted


def load_data(path: str | os.PathLike[str], column: str | None = None, columns: Sequence[str] | None = None) -> Array:
    """Load a ``.npy`` array, or one column (``column``) or several (``columns``, in order) of a CSV file
    with a header row.

    Parameters
    ----------
    path : str or os.PathLike
        A ``.npy`` file, or a ``.csv`` file: comma-separated, a ``.`` decimal point, UTF-8 (a byte-order
        mark is fine), a header row, and every data row with exactly as many fields as the header (blank
        lines only at the end).
    column : str, optional
        The CSV column to read; required when the file has more than one column.
    columns : sequence of str, optional
        Several CSV columns, in this order, as records of dimension d (instead of ``column``).

    Returns
    -------
    numpy.ndarray
        The records as float64, shape ``(n,)`` or ``(n, d)``.

    Raises
    ------
    DataError
        The file is missing or unreadable, or a row has more or fewer fields than the header (a ``,``
        decimal separator splits a number in two), a cell is non-numeric or missing, or the header names
        a chosen column more than once. Messages name the column and line number, never a cell's content.
    ConfigError
        ``column`` or ``columns`` is malformed (``columns`` a string, or naming a column twice).
    """
    if not isinstance(path, (str, os.PathLike)):
        raise DataError(f"expected a file path (str or os.PathLike), not {type(path).__name__}", path="data")
    try:
        file = Path(path)
    except TypeError:  # an os.PathLike whose path is bytes
        raise DataError("expected a file path (str or os.PathLike) naming a text path", path="data") from None
    if not str(path):
        raise DataError("the file path is empty; give a .csv or .npy file", path="data")
    label = file.name or str(path)  # "." and "/" have no name: show the path as given
    wanted = chosen_columns(column, columns)
    if file.is_dir():
        raise DataError(f"{label} is a directory; give a .csv or .npy file", path="data")
    if not file.is_file():
        raise DataError(f"no such file {label}", path="data")
    if file.suffix.lower() == ".npy":
        try:
            arr = np.load(file, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise DataError(f"{label} is not a readable .npy array", path="data") from exc
        if wanted is not None:
            raise DataError("only meaningful for CSV data", path="column" if column is not None else "columns")
        return as_data(arr, "data")
    if file.suffix.lower() != ".csv":
        raise DataError("expected a .csv or .npy file", path="data")
    choice = "column" if column is not None else "columns"
    with io.StringIO(_utf8_text(file, label), newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None:
            raise DataError(f"{label} is empty", path="data")
        header = [h.strip() for h in header]
        if wanted is None:
            if len(header) != 1:
                raise DataError(f"{label} has {len(header)} columns; choose one with --column", path="column")
            wanted = header
        missing = [name for name in wanted if name not in header]
        if missing:
            raise DataError(f"no column named '{missing[0]}' in {label}; {_header_hint(header)}", path=choice)
        for name in wanted:
            if header.count(name) > 1:  # which of them is meant would be a silent choice
                raise DataError(
                    f"the header of {label} names the column '{name}' {header.count(name)} times", path=choice
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
            if len(row) != len(header):  # an extra field is never ignored, a missing one never guessed
                hint = (
                    " (a ',' decimal separator splits a number into two fields; privframe reads '.' decimals)"
                    if len(row) > len(header)
                    else ""
                )
                raise DataError(
                    f"line {row_number} of {label} has {len(row)} field{'s' if len(row) != 1 else ''} but its "
                    f"header has {len(header)}{hint}",
                    path="data",
                )
            values: list[float] = []
            for position in positions:
                try:
                    cell = row[position]
                    if "_" in cell:  # float() reads "1_000" as 1000; a CSV number has no digit separators
                        raise ValueError
                    values.append(float(cell))
                except ValueError:
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


def _utf8_text(file: Path, label: str) -> str:
    """The file's text; a line that is not UTF-8 raises ``DataError`` naming the line, never its bytes."""
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read {label} ({exc.strerror})", path="data") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    for number, line in enumerate(raw.split(b"\n"), start=1):
        try:
            line.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError:
            raise DataError(f"{label} is not UTF-8 text: line {number} cannot be decoded", path="data") from None
    raise DataError(f"{label} is not UTF-8 text", path="data")  # pragma: no cover - a split never heals
