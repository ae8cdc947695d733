"""Strict CSV reading, typed errors for malformed ``load_data`` arguments, and clean CLI input errors.

Every data row has exactly as many fields as the header (a ',' decimal separator is never half-read); a
chosen column named twice is refused; messages name lines, counts and columns, never a cell's content.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

import privframe as pf
from privframe.cli import main
from privframe.data.arrays import as_data, load_data

CONFIG = """
[pipeline]
method = "cr-gs"
statistic = "mean"
bounds = [0.0, 1.0]

[pipeline.budget]
unit = "gdp"
mu = 1.0
"""


def write(directory: Path, text: str, name: str = "data.csv") -> Path:
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


# -- every row has the header's number of fields ---------------------------------------------------------------


def test_a_comma_decimal_file_is_refused_with_a_hint_not_read_as_integers(tmp_path: Path) -> None:
    data = write(tmp_path, "value\n1,5\n2,5\n")
    with pytest.raises(pf.DataError) as info:
        pf.load_data(data)
    error = info.value
    assert error.path == "data"
    assert "line 2" in error.message
    assert "has 2 fields but its header has 1" in error.message
    assert "',' decimal separator" in error.message
    assert "'.' decimals" in error.message
    assert "1,5" not in str(error)
    assert ",5" not in str(error)


@pytest.mark.parametrize(
    ("text", "line", "fields", "extra"),
    [
        ("a,b\n101,202\n303\n404,505\n", 3, 1, False),  # fewer fields than the header
        ("a,b\n101,202\n404,505,606\n", 3, 3, True),  # more fields than the header
        ("a,b\n101,202\n303,404,\n", 3, 3, True),  # a trailing comma is an empty extra field
    ],
)
def test_ragged_rows_are_refused_even_when_the_chosen_column_exists(
    tmp_path: Path, text: str, line: int, fields: int, extra: bool
) -> None:
    data = write(tmp_path, text)
    with pytest.raises(pf.DataError) as info:
        load_data(data, column="a")
    message = info.value.message
    assert info.value.path == "data"
    assert f"line {line} of data.csv has {fields} field" in message
    assert "its header has 2" in message
    assert ("decimal separator" in message) is extra
    for value in ("101", "303", "404", "505", "606"):
        assert value not in message


def test_duplicate_header_names_of_a_chosen_column_are_refused(tmp_path: Path) -> None:
    data = write(tmp_path, "a,a,b\n1,2,3\n4,5,6\n")
    with pytest.raises(pf.DataError) as info:
        load_data(data, column="a")
    assert info.value.path == "column"
    assert "names the column 'a' 2 times" in info.value.message
    with pytest.raises(pf.DataError) as info:
        load_data(data, columns=["b", "a"])
    assert info.value.path == "columns"
    assert "'a'" in info.value.message
    # A duplicate that is not chosen is no ambiguity.
    assert load_data(data, column="b").tolist() == [3.0, 6.0]


def test_columns_naming_a_column_twice_is_a_config_error(tmp_path: Path) -> None:
    data = write(tmp_path, "a,b\n1,2\n3,4\n")
    with pytest.raises(pf.ConfigError) as info:
        load_data(data, columns=["a", "a"])
    assert info.value.path == "columns"
    assert "names a column twice" in info.value.message


def test_what_the_strict_reader_keeps(tmp_path: Path) -> None:
    # Trailing blank lines, a byte-order mark and whitespace around the header names are all fine.
    data = tmp_path / "kept.csv"
    data.write_bytes("\ufeff a , b \n0.5,1\n0.25,2\n\n\n".encode())
    assert load_data(data, column="a").tolist() == [0.5, 0.25]
    assert load_data(data, columns=["b", "a"]).tolist() == [[1.0, 0.5], [2.0, 0.25]]
    # A quoted field holding a comma is one field.
    quoted = write(tmp_path, 'name,value\n"x,y",0.5\n"z",0.75\n', "quoted.csv")
    assert load_data(quoted, column="value").tolist() == [0.5, 0.75]
    # A blank line inside the data is still a missing value.
    with pytest.raises(pf.DataError, match="missing cell in column 'a' at line 3"):
        load_data(write(tmp_path, "a\n1\n\n2\n", "gap.csv"))


def test_the_csv_files_of_the_tests_and_docs_still_load(tmp_path: Path) -> None:
    """The shapes of the CSV files written in tests/ and docs/ (one column, several, a BOM, an id column)."""
    rng = np.random.default_rng(0)
    values = rng.uniform(size=50)
    write(tmp_path, "id,value\n" + "".join(f"{i},{float(v)!r}\n" for i, v in enumerate(values)), "ids.csv")
    assert load_data(tmp_path / "ids.csv", column="value").shape == (50,)
    write(tmp_path, "value\n" + "".join(f"{float(v)!r}\n" for v in values), "one.csv")
    assert load_data(tmp_path / "one.csv").shape == (50,)
    rows = "".join(f"{20 + i % 50},{60 + i % 30}\n" for i in range(40))
    write(tmp_path, "\ufeffage,weight\n" + rows, "bom.csv")
    assert load_data(tmp_path / "bom.csv", column="age").shape == (40,)
    lines = ["x2,malignant,x1", *(f"{0.5 * i!r},{i % 2},{0.25 * i!r}" for i in range(30))]
    write(tmp_path, "\n".join(lines) + "\n", "cancer.csv")
    assert load_data(tmp_path / "cancer.csv", columns=["x1", "x2", "malignant"]).shape == (30, 3)
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame({"radius": values, "malignant": (values > 0.5).astype(int)})
    frame.to_csv(tmp_path / "pandas.csv", index=False)
    assert load_data(tmp_path / "pandas.csv", columns=["radius", "malignant"]).shape == (50, 2)


# -- the arguments of load_data and as_data --------------------------------------------------------------------


def test_a_path_without_a_name_is_shown_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(pf.DataError) as info:
        load_data(".")
    assert info.value.path == "data"
    assert info.value.message.startswith(". is a directory")
    with pytest.raises(pf.DataError) as info:
        load_data("")
    assert info.value.path == "data"
    assert "empty" in info.value.message


def test_a_npy_file_of_the_wrong_shape_is_reported_under_data(tmp_path: Path) -> None:
    for name, array in (("cube.npy", np.zeros((2, 2, 2))), ("scalar.npy", np.float64(1.0))):
        np.save(tmp_path / name, array)
        with pytest.raises(pf.DataError) as info:
            load_data(tmp_path / name)
        assert info.value.path == "data", name


def test_columns_given_as_a_string_is_refused(tmp_path: Path) -> None:
    data = write(tmp_path, "value,v\n1,2\n")
    with pytest.raises(pf.ConfigError) as info:
        load_data(data, columns="value")  # a str is a Sequence[str]: only the run-time check catches it
    assert info.value.path == "columns"
    assert "not a string" in info.value.message
    assert "column=" in info.value.message
    with pytest.raises(pf.ConfigError) as info:
        load_data(data, columns=[])
    assert info.value.path == "columns"
    with pytest.raises(pf.ConfigError) as info:
        load_data(data, columns=["value", 1])  # type: ignore[list-item]  # deliberately wrong
    assert info.value.path == "columns[1]"
    with pytest.raises(pf.ConfigError) as info:
        load_data(data, column=1)  # type: ignore[arg-type]  # deliberately wrong
    assert info.value.path == "column"


@pytest.mark.parametrize("bad", [1, None, 2.5, b"data.csv", ["data.csv"]])
def test_a_non_path_argument_is_a_typed_error(bad: object) -> None:
    with pytest.raises(pf.DataError) as info:
        load_data(bad)  # type: ignore[arg-type]  # deliberately wrong
    assert info.value.path == "data"


def test_a_path_like_object_loads(tmp_path: Path) -> None:
    class Where(os.PathLike[str]):
        def __fspath__(self) -> str:
            return str(tmp_path / "one.csv")

    write(tmp_path, "value\n0.5\n", "one.csv")
    assert load_data(Where()).tolist() == [0.5]


def test_none_in_an_object_array_is_not_called_nan() -> None:
    missing: list[Any] = [[1.0, None, 2.0], np.array([[1.0, None]], dtype=object)]
    for data in missing:
        with pytest.raises(pf.DataError) as info:
            as_data(data, "data")
        assert info.value.path == "data"
        assert "missing or non-numeric values" in info.value.message
        assert "NaN" not in info.value.message
    real: list[npt.ArrayLike] = [[1.0, float("nan")], np.array([1.0, np.nan], dtype=object), [1.0, np.inf]]
    for data in real:
        with pytest.raises(pf.DataError, match="NaN or infinite"):
            as_data(data)


# -- the command line ------------------------------------------------------------------------------------------


def test_cli_refuses_a_comma_decimal_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write(tmp_path, CONFIG, "pipe.toml")
    data = write(tmp_path, "value\n0,5\n0,25\n")
    assert main(["run", str(config), "--data", str(data)]) == 2
    err = capsys.readouterr().err
    assert "--data: line 2 of data.csv has 2 fields but its header has 1" in err
    assert "decimal separator" in err
    assert "0,5" not in err
    assert "0,25" not in err
    assert main(["run", str(config), "--data", str(write(tmp_path, "a,b\n0.5,1\n", "ab.csv")), "--columns", "a,a"]) == 2
    assert "--columns: names a column twice" in capsys.readouterr().err


def test_cli_a_config_that_is_not_utf8_is_a_clean_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("latin1.toml", "latin1.json"):
        config = tmp_path / name
        body = '[pipeline]\nmethod = "cr-gs" # Jos\xe9\n' if name.endswith(".toml") else '{"pipeline": "Jos\xe9"}'
        config.write_bytes(body.encode("latin-1"))
        assert main(["run", str(config), "--demo"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("privframe: error: CONFIG: ")
        assert f"{name} is not UTF-8 text: line {2 if name.endswith('.toml') else 1}" in err
        assert "Jos" not in err
        assert "Traceback" not in err


def test_cli_a_session_that_is_a_directory_is_a_clean_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, CONFIG, "pipe.toml")
    for session, expected in ((".", ". is a directory"), (str(tmp_path), "is a directory"), ("", "is empty")):
        assert main(["run", "pipe.toml", "--demo", "--session", session, "--session-budget", "mu=2"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("privframe: error: --session: "), session
        assert expected in err


@pytest.mark.parametrize("command", [["run", "pipe.toml", "--demo"], ["demo"]])
def test_cli_a_negative_seed_names_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, CONFIG, "pipe.toml")
    assert main([*command, "--seed", "-3"]) == 2
    err = capsys.readouterr().err
    assert "--seed: " in err
    assert "rng" not in err


def test_cli_budget_with_delta_zero_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["budget", "--epsilon", "1", "--delta", "0"]) == 2
    err = capsys.readouterr().err
    assert "--delta: must be > 0 to convert to GDP" in err
    assert "< 1" not in err  # the limit is pf.MAX_DELTA, not 1; and 0 is pure DP
    assert main(["budget", "--epsilon", "1", "--json"]) == 0  # the pure-DP conversion it points to
    assert json.loads(capsys.readouterr().out)["delta"] == 0.0
    assert main(["budget", "--mu", "1", "--delta", "0"]) == 2
    assert "--delta: must satisfy 0 < delta <= 0.1" in capsys.readouterr().err


def test_a_glob_of_csv_files_reads_them_as_strictly(tmp_path: Path) -> None:
    pytest.importorskip("dask")
    from privframe.data.files import load_distributed

    write(tmp_path, "a,b\n0.5,1\n", "part-0.csv")
    write(tmp_path, "a,b\n0,5,1\n", "part-1.csv")
    pattern = str(tmp_path / "part-*.csv")
    with pytest.raises(pf.DataError) as info:
        load_distributed(pattern, column="a")
    assert info.value.path == "data"
    assert "line 2 of part-1.csv has 3 fields but its header has 2" in info.value.message
    with pytest.raises(pf.ConfigError) as config_info:
        load_distributed(pattern, columns="ab")
    assert config_info.value.path == "columns"
    with pytest.raises(pf.ConfigError, match="names a column twice"):
        load_distributed(pattern, columns=["a", "a"])
    with pytest.raises(pf.DataError) as info:
        load_distributed(1)  # type: ignore[arg-type]  # deliberately wrong
    assert info.value.path == "data"


def test_a_parquet_file_naming_a_chosen_column_twice_is_refused(tmp_path: Path) -> None:
    pytest.importorskip("dask")
    pa = pytest.importorskip("pyarrow")
    parquet = pytest.importorskip("pyarrow.parquet")
    from privframe.data.files import load_distributed

    table = pa.Table.from_arrays([pa.array([0.5, 0.25]), pa.array([1.0, 2.0]), pa.array([3.0, 4.0])], ["a", "a", "b"])
    parquet.write_table(table, tmp_path / "dup.parquet")
    with pytest.raises(pf.DataError) as info:
        load_distributed(str(tmp_path / "dup.parquet"), column="a")
    assert info.value.path == "column"
    assert "names the column 'a' 2 times" in info.value.message
    assert load_distributed(str(tmp_path / "dup.parquet"), column="b").compute().tolist() == [3.0, 4.0]


def test_a_config_that_is_not_utf8_is_a_config_error_naming_the_line(tmp_path: Path) -> None:
    config = tmp_path / "latin1.toml"
    config.write_bytes(b'[pipeline]\nstatistic = "m\xe9an"\n')
    with pytest.raises(pf.ConfigError, match=r"^config: latin1\.toml is not UTF-8 text: line 2 cannot be decoded$"):
        pf.Pipeline.from_config(config)
