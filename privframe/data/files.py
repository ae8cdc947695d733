"""Reading many files as one Dask array for the CLI: ``privframe run --data 'path/*.parquet' --column v``.

Each file is one chunk, read where the tasks run (the workers of a ``distributed`` client, or threads of
this process), never gathered: a CSV file by :func:`privframe.data.load_data`, with its messages that name
the column and line but never a value; a Parquet file by pyarrow. Only the row counts come back first (n is
public). Needs the ``dask`` extra (and pyarrow for Parquet); dask is imported only when called.
"""

from __future__ import annotations

import contextlib
import glob
import importlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from privframe._typing import Array
from privframe.data.arrays import as_data, chosen_columns, load_data
from privframe.errors import ConfigError, DataError, PrivframeError

__all__ = ["connect", "is_distributed_path", "load_distributed"]

_SUFFIXES = (".csv", ".parquet")


def is_distributed_path(path: str) -> bool:
    """Whether ``--data`` names a glob or Parquet data, read through Dask (other paths load in memory)."""
    return any(char in path for char in "*?[") or Path(path).suffix.lower() == ".parquet"


def _import(module: str, what: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ConfigError(
            f"{what} needs the {module.split('.')[0]} package: pip install 'privframe[dask]'", path="data"
        ) from None


@contextlib.contextmanager
def connect(address: str | None) -> Iterator[None]:
    """Within the block, Dask computes on the scheduler at ``address`` (``tcp://host:8786``); None: nothing."""
    if address is None:
        yield
        return
    distributed = _import("distributed", "--scheduler")
    with distributed.Client(address):
        yield


def load_distributed(pattern: str, column: str | None = None, columns: Sequence[str] | None = None) -> Any:
    """A Dask array of the records of every file matching ``pattern``, in sorted file order, one chunk per file.

    Files must all be ``.csv`` (with a header row) or all ``.parquet``. ``column`` or ``columns`` choose as
    in :func:`privframe.data.load_data`. Reading the row counts is a first pass over the files (on the
    workers); the values are read again, where they are used.
    """
    if not isinstance(pattern, str):
        raise DataError(f"expected a file path or glob (a str), not {type(pattern).__name__}", path="data")
    chosen = chosen_columns(column, columns)  # columns="ab" is not ["a", "b"]; ["a", "a"] is refused
    dask = _import("dask", "reading a glob or Parquet data")
    dask_array = _import("dask.array", "reading a glob or Parquet data")
    files = sorted(glob.glob(pattern))
    if not files:
        raise DataError(f"no file matches {Path(pattern).name or pattern}", path="data")
    suffixes = {Path(file).suffix.lower() for file in files}
    if len(suffixes) != 1 or not suffixes <= set(_SUFFIXES):
        raise DataError("expected files that are all .csv or all .parquet", path="data")
    if suffixes == {".parquet"}:
        _import("pyarrow.parquet", "reading Parquet data")
        read, count = _read_parquet, _parquet_rows
    else:
        read, count = _read_csv, _csv_rows
    wanted = None if columns is None else chosen
    parts = [dask.delayed(read, pure=True)(file, column, wanted) for file in files]
    counted = dask.compute(*[dask.delayed(_rows_or_error, pure=True)(count, file, column, wanted) for file in files])
    for result in counted:  # the first file's error in sorted order, whichever worker finished first
        if isinstance(result, PrivframeError):
            raise result
    lengths = [int(result) for result in counted]
    tail = () if wanted is None or len(wanted) == 1 else (len(wanted),)
    arrays = [
        dask_array.from_delayed(part, shape=(int(rows), *tail), dtype=np.float64)
        for part, rows in zip(parts, lengths, strict=True)
    ]
    return dask_array.concatenate(arrays)


def _rows_or_error(
    count: Callable[[str, str | None, list[str] | None], int], file: str, column: str | None, columns: list[str] | None
) -> int | PrivframeError:
    """``count(file, ...)``, or the error it raised: the files are counted in parallel, and the error reported
    is the first file's in sorted order, the same on every run."""
    try:
        return count(file, column, columns)
    except PrivframeError as exc:
        return exc


def _read_csv(file: str, column: str | None, columns: list[str] | None) -> Array:
    return load_data(file, column, columns)


def _csv_rows(file: str, column: str | None, columns: list[str] | None) -> int:
    return int(load_data(file, column, columns).shape[0])


def _parquet_names(file: str, column: str | None, columns: list[str] | None) -> list[str]:
    """The chosen columns of a Parquet file, checked against its schema (names are schema, not data)."""
    parquet = importlib.import_module("pyarrow.parquet")
    types = importlib.import_module("pyarrow.types")
    schema = parquet.read_schema(file)
    available = list(schema.names)
    wanted = [column] if column is not None else columns
    name = Path(file).name
    if wanted is None:
        if len(available) != 1:
            raise DataError(f"{name} has {len(available)} columns; choose one with --column", path="column")
        wanted = available
    for chosen in wanted:
        if chosen not in available:
            raise DataError(f"no column named '{chosen}' in {name}", path="column" if column else "columns")
        if available.count(chosen) > 1:  # which of them is meant would be a silent choice
            raise DataError(
                f"the schema of {name} names the column '{chosen}' {available.count(chosen)} times",
                path="column" if column else "columns",
            )
        kind = schema.field(chosen).type
        if not (types.is_integer(kind) or types.is_floating(kind)):
            raise DataError(f"column '{chosen}' of {name} is not numeric", path="data")
    return wanted


def _parquet_rows(file: str, column: str | None, columns: list[str] | None) -> int:
    _parquet_names(file, column, columns)
    rows: int = importlib.import_module("pyarrow.parquet").ParquetFile(file).metadata.num_rows
    return rows


def _read_parquet(file: str, column: str | None, columns: list[str] | None) -> Array:
    names = _parquet_names(file, column, columns)
    table = importlib.import_module("pyarrow.parquet").read_table(file, columns=names)
    values = np.column_stack([table.column(name).to_numpy(zero_copy_only=False).astype(np.float64) for name in names])
    return as_data(values[:, 0] if len(names) == 1 else values, "data")
