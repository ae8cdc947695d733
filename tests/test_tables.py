"""Tables at the front door: DataFrame and structured-array columns (issue 16)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import privframe as pf
from privframe.data.tables import select_columns

RNG = np.random.default_rng(0)
FRAME = pd.DataFrame(
    {
        "age": RNG.uniform(20, 80, size=600),
        "bmi": RNG.uniform(18, 40, size=600),
        "sex": RNG.choice(["f", "m"], size=600),
        "smoker": RNG.choice([True, False], size=600),
    }
)


def test_a_dataframe_column_gives_the_same_interval_as_its_array() -> None:
    options = {"method": "cr-gs", "budget": pf.GDP(1.0), "bounds": (18, 40), "rng": 3}
    from_frame = pf.confidence_interval(FRAME, "mean", columns=["bmi"], **options)
    from_array = pf.confidence_interval(FRAME["bmi"].to_numpy(), "mean", **options)
    from_series = pf.confidence_interval(FRAME["bmi"], "mean", **options)
    assert (from_frame.low, from_frame.high) == (from_array.low, from_array.high) == (from_series.low, from_series.high)


def test_columns_are_taken_in_the_order_given() -> None:
    values = select_columns(FRAME, ["bmi", "age"])
    assert values.shape == (600, 2)
    np.testing.assert_array_equal(values[:, 0], FRAME["bmi"].to_numpy())
    np.testing.assert_array_equal(values[:, 1], FRAME["age"].to_numpy())


def test_a_structured_array_works_like_a_table() -> None:
    records = np.zeros(600, dtype=[("age", "f8"), ("bmi", "f8")])
    records["bmi"] = FRAME["bmi"].to_numpy()
    np.testing.assert_array_equal(select_columns(records, ["bmi"]), FRAME["bmi"].to_numpy())
    session = pf.Session(pf.GDP(2.0))
    res = session.confidence_interval(
        records, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(18, 40), rng=3, columns=["bmi"]
    )
    assert res.low < res.high


@pytest.mark.parametrize(
    ("x", "columns", "error", "message"),
    [
        (FRAME, ["weight"], pf.ConfigError, r"^columns: no column 'weight' in the table; it has 4: 'age', 'bmi'"),
        (FRAME, ["sex"], pf.DataError, r"^x: column 'sex' is not numeric"),
        (FRAME, ["smoker"], pf.DataError, r"^x: column 'smoker' is not numeric"),
        (FRAME, "bmi", pf.ConfigError, r"^columns: expected a non-empty list"),
        (FRAME, ["bmi", "bmi"], pf.ConfigError, r"^columns: names a column twice"),
        (np.zeros(5), ["bmi"], pf.ConfigError, r"^columns: columns= selects columns of a table"),
        (FRAME["bmi"], ["bmi"], pf.ConfigError, r"^columns: a Series is one column"),
    ],
)
def test_bad_columns_are_typed_errors(x: object, columns: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        select_columns(x, columns)  # type: ignore[arg-type]


def test_missing_values_are_refused_never_dropped() -> None:
    frame = FRAME.copy()
    frame.loc[7, "bmi"] = np.nan
    with pytest.raises(pf.DataError, match="NaN"):
        pf.confidence_interval(frame, "mean", columns=["bmi"], method="cr-gs", budget=pf.GDP(1.0), bounds=(18, 40))
