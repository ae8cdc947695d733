"""Tables at the front door: columns of a pandas DataFrame or a numpy structured array as plain data.

pandas stays optional: a DataFrame is recognised by its interface (``columns``, ``dtypes``, ``to_numpy``),
never imported. Column names are schema, not data, so errors may list them; they never quote a value.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from privframe._typing import Array
from privframe.errors import ConfigError, DataError

__all__ = ["columns_with_label", "select_columns", "table_columns"]


def _names(columns: object) -> list[str]:
    if isinstance(columns, str) or not isinstance(columns, Sequence) or not columns:
        raise ConfigError("expected a non-empty list of column names", path="columns")
    names = list(columns)
    if not all(isinstance(name, str) and name for name in names):
        raise ConfigError("column names must be non-empty strings", path="columns")
    if len(set(names)) != len(names):
        raise ConfigError("names a column twice", path="columns")
    return names


def _listing(available: Sequence[str]) -> str:
    shown = ", ".join(repr(str(name)) for name in list(available)[:20])
    return shown + (", ..." if len(available) > 20 else "")


def _chosen(names: list[str] | None, available: list[str], noun: str, where: str) -> list[str]:
    """The requested names (all when None), or a ``ConfigError`` listing what ``where`` has."""
    chosen = available if names is None else names
    missing = [name for name in chosen if name not in available]
    if missing:
        raise ConfigError(
            f"no {noun} {missing[0]!r} in {where}; it has {len(available)}: {_listing(available)}", path="columns"
        )
    return chosen


def _is_frame(x: object) -> bool:
    return all(hasattr(x, attribute) for attribute in ("columns", "dtypes", "to_numpy", "iloc"))


def _numeric_kind(kind: str) -> bool:
    """Integers and floats; booleans are labels, not numbers, and are refused like text."""
    return kind in "iuf"


def _why(kind: str) -> str:
    """What to do about a refused column kind (booleans have an obvious numeric coding, chosen by the user)."""
    if kind == "b":
        return " (it is boolean: pass it as 0/1 with .astype(int), e.g. as a logistic-slope label)"
    return ""


def select_columns(x: Any, columns: Sequence[str] | None) -> Any:
    """The chosen columns of a table, in order, as a float array (one column gives shape ``(n,)``).

    ``x`` may be a pandas DataFrame or Series, or a numpy structured array; ``columns=None`` takes every
    column (a Series or a one-column table gives ``(n,)``). Anything else passes through unchanged when
    ``columns`` is None (plain arrays are validated later), and is a ``ConfigError`` otherwise.
    Non-numeric or boolean columns are a ``DataError`` naming the column; missing values stay NaN and are
    refused by the data check (they are never dropped: n is public).
    """
    names = None if columns is None else _names(columns)
    if _is_frame(x):
        available = [str(name) for name in x.columns]
        if len(set(available)) != len(available):
            raise DataError("the table has duplicate column names", path="x")
        chosen = _chosen(names, available, "column", "the table")
        positions = [available.index(name) for name in chosen]
        for name, position in zip(chosen, positions, strict=True):
            kind = str(getattr(x.dtypes.iloc[position], "kind", "O"))
            if not _numeric_kind(kind):  # extension dtypes too
                raise DataError(f"column {name!r} is not numeric{_why(kind)}", path="x")
        values: Array = x.iloc[:, positions].to_numpy(dtype=np.float64, na_value=np.nan)
        return values[:, 0] if values.shape[1] == 1 else values
    if hasattr(x, "to_numpy") and hasattr(x, "dtype") and getattr(x, "ndim", None) == 1:  # a pandas Series
        if names is not None:
            raise ConfigError("a Series is one column; columns= selects columns of a table", path="columns")
        kind = str(getattr(x.dtype, "kind", "O"))
        if not _numeric_kind(kind):
            raise DataError(f"the Series is not numeric{_why(kind)}", path="x")
        series: Array = x.to_numpy(dtype=np.float64, na_value=np.nan)
        return series
    if isinstance(x, np.ndarray) and x.dtype.names is not None:
        available = list(x.dtype.names)
        chosen = _chosen(names, available, "field", "the structured array")
        for name in chosen:
            kind = x.dtype.fields[name][0].kind
            if not _numeric_kind(kind):
                raise DataError(f"field {name!r} is not numeric{_why(kind)}", path="x")
        stacked = np.column_stack([np.asarray(x[name], dtype=np.float64) for name in chosen])
        return stacked[:, 0] if stacked.shape[1] == 1 else stacked
    if names is not None:
        raise ConfigError(
            "columns= selects columns of a table (a pandas DataFrame or a numpy structured array)", path="columns"
        )
    return x


def table_columns(x: Any) -> list[str] | None:
    """The column (or field) names of a table, None for anything else (an array's columns have no names)."""
    if _is_frame(x):
        return [str(name) for name in x.columns]
    if isinstance(x, np.ndarray) and x.dtype.names is not None:
        return list(x.dtype.names)
    return None


def columns_with_label(x: Any, columns: Sequence[str] | None, label: str) -> list[str]:
    """The columns to select for a statistic whose last column is a label named ``label``: the features
    (``columns``, or every other column of the table) followed by the label."""
    available = table_columns(x)
    if available is None:
        raise ConfigError(
            "label= names a column of a table; for an array, put the label in the last column and leave label unset",
            path="statistic.label",
        )
    if label not in available:
        raise ConfigError(f"no column {label!r} in the table (it has {_listing(available)})", path="statistic.label")
    features = [name for name in (_names(columns) if columns is not None else available) if name != label]
    if not features:
        raise ConfigError("no feature column besides the label", path="columns")
    return [*features, label]
