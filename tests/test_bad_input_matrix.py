"""The bad-input matrix: every public entry point, every kind of bad input, one parametrised test.

Entry points: ``pf.confidence_interval``, ``pf.confidence_region``, ``pf.Pipeline.from_dict`` /
``from_config`` (and ``run``), and the command line ``privframe.cli.main``. Each case must raise the
documented ``PrivframeError`` subclass with a message that starts with (or names) the parameter's path and
never contains a data value: every dataset carries the sentinel 0.123456789, whose digits must not appear.
On the command line the same error is printed as ``privframe: error: <message>`` with exit status 2.

``tests/test_bad_input.py`` (the older module) covers the basic front-door cases for scalar data; this
module covers what it lacks: vector data and regions, configs and config files with wrong types, the CLI,
budgets at the edges, sampler options, huge B under a memory budget, clipping of out-of-bounds data, and
plugins that fail inside their hooks.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest

import privframe as pf
import privframe.plugin as pp
from privframe import cli
from privframe.resampling.blocks import draw

SENTINEL = 0.123456789  # planted in every dataset; its digits must never appear in a message
SENTINEL_TEXT = "123456"
N = 200


def _scalars(n: int = N) -> np.ndarray:
    x = np.random.default_rng(0).uniform(0.0, 1.0, size=n)
    x[7] = SENTINEL
    return x


def _vectors(n: int = N) -> np.ndarray:
    X = np.random.default_rng(1).normal(0.0, 0.2, size=(n, 3))
    X[7, 1] = SENTINEL
    return X


def _with(x: np.ndarray, value: Any, index: tuple[int, ...] = (3,)) -> np.ndarray:
    out = np.array(x, dtype=np.float64)
    out[index] = value
    return out


def interval(x: Any = None, **overrides: Any) -> Any:
    kwargs: dict[str, Any] = {"method": "cr-gs", "budget": pf.GDP(1.0), "bounds": (0.0, 1.0), "rng": 0, "B": 50}
    kwargs.update(overrides)
    return pf.confidence_interval(_scalars() if x is None else x, "mean", **kwargs)


def region(x: Any = None, **overrides: Any) -> Any:
    kwargs: dict[str, Any] = {"method": "cr-gs", "budget": pf.GDP(1.0), "bounds": pf.L2Ball(1.0), "rng": 0, "B": 50}
    kwargs.update(overrides)
    return pf.confidence_region(_vectors() if x is None else x, "mean", **kwargs)


BASE: dict[str, Any] = {
    "method": "cr-gs",
    "statistic": "mean",
    "bounds": [0.0, 1.0],
    "budget": {"unit": "gdp", "mu": 1.0},
    "sampler": {"name": "wor", "B": 50},
}


def from_dict(**changes: Any) -> Any:
    """Build from BASE with top-level keys replaced (None removes a key); run it on the sentinel data."""
    config = {k: v for k, v in {**BASE, **changes}.items() if v is not None}
    return pf.Pipeline.from_dict({"pipeline": config}).run(_scalars(), rng=0)


def sampler(**options: Any) -> Any:
    return from_dict(sampler={"name": "wor", "B": 50, **options})


def budget(**table: Any) -> Any:
    return from_dict(budget=table)


# ---------------------------------------------------------------------------------------------------------
# The command line: each case writes its files into a fresh directory and calls main(argv)

CONFIG = """[pipeline]
method = {method}
statistic = "mean"
bounds = {bounds}
confidence = {confidence}
{budget}
[pipeline.sampler]
name = {sampler}
{sampler_options}
"""


def write_config(directory: Path, **fields: str) -> str:
    values = {
        "method": '"cr-gs"',
        "bounds": "[0.0, 1.0]",
        "confidence": "0.9",
        "budget": '[pipeline.budget]\nunit = "gdp"\nmu = 1.0',
        "sampler": '"wor"',
        "sampler_options": "B = 50",
    }
    values.update(fields)
    path = directory / "pipe.toml"
    path.write_text(CONFIG.format(**values), encoding="utf-8")
    return str(path)


def write_csv(directory: Path, cells: list[str] | None = None, header: str = "value", name: str = "data.csv") -> str:
    rows = cells if cells is not None else [repr(float(v)) for v in _scalars()]
    path = directory / name
    path.write_text(header + "\n" + "".join(f"{c}\n" for c in rows), encoding="utf-8")
    return str(path)


def csv_with(cell: str, line: int = 5) -> list[str]:
    rows = [repr(float(v)) for v in _scalars()]
    rows[line] = cell
    return rows


def write_npy(directory: Path, array: np.ndarray) -> str:
    path = directory / "data.npy"
    np.save(path, array, allow_pickle=True)
    return str(path)


def run_cli(argv: list[str]) -> None:
    """Run ``privframe argv``: it must exit with status 2 and print exactly ``privframe: error: <message>``.

    The command's own PrivframeError is then re-raised (the command is called again without ``main``'s
    handler, to see its class).
    """
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = cli.main(argv)
    args = cli.build_parser().parse_args(argv)
    with pytest.raises(pf.PrivframeError) as info, contextlib.redirect_stdout(io.StringIO()):
        cli._COMMANDS[args.command](args)
    assert status == 2
    assert err.getvalue() == f"privframe: error: {info.value}\n"
    raise info.value


def cli_run(directory: Path, config: dict[str, str] | None = None, data: str | None = None, *extra: str) -> None:
    argv = ["run", write_config(directory, **(config or {}))]
    argv += ["--data", data if data is not None else write_csv(directory), "--seed", "1", *extra]
    run_cli(argv)


# ---------------------------------------------------------------------------------------------------------
# The matrix


@attrs.frozen
class Case:
    id: str
    call: Callable[[Path], Any]
    error: type[pf.PrivframeError]
    name: str  # the parameter (path) the message must name


def api(id: str, call: Callable[[], Any], error: type[pf.PrivframeError], name: str) -> Case:
    return Case(id, lambda _: call(), error, name)


CASES: list[Case] = [
    # -- data: NaN, inf, empty, scalar, wrong dimension, non-numeric ----------------------------------------
    api("region nan", lambda: region(_with(_vectors(), np.nan, (4, 2))), pf.DataError, "x"),
    api("region inf", lambda: region(_with(_vectors(), np.inf, (4, 0))), pf.DataError, "x"),
    api("region -inf", lambda: region(_with(_vectors(), -np.inf, (4, 0))), pf.DataError, "x"),
    api("region empty rows", lambda: region(np.zeros((0, 3))), pf.DataError, "x"),
    api("region empty columns", lambda: region(np.zeros((N, 0))), pf.DataError, "x"),
    api("region scalar", lambda: region(SENTINEL), pf.DataError, "x"),
    api("region 3-d", lambda: region(np.full((5, 4, 3), SENTINEL)), pf.DataError, "x"),
    api("region 1-d data with L2Ball", lambda: region(_scalars()), pf.DataError, "x"),
    api("region 2-d data with scalar bounds", lambda: region(bounds=(0.0, 1.0)), pf.DataError, "x"),
    api("interval 2-d data", lambda: interval(_vectors()), pf.DataError, "x"),
    api("interval (n, 1) column", lambda: interval(_scalars()[:, None]), pf.DataError, "x"),
    api("interval one record", lambda: interval([SENTINEL]), pf.DataError, "x"),
    api("interval two records", lambda: interval([SENTINEL, 0.5]), pf.DataError, "x"),
    api("interval complex", lambda: interval(_scalars() + 1j), pf.DataError, "x"),
    api("interval ragged", lambda: interval([[SENTINEL, 1.0], [2.0]]), pf.DataError, "x"),
    api("interval None cell", lambda: interval([SENTINEL, None, 0.5, 0.25]), pf.DataError, "x"),
    api("interval object cell", lambda: interval([SENTINEL, object(), 0.5]), pf.DataError, "x"),
    api("region strings", lambda: region([[str(SENTINEL), "a", "b"]] * 10), pf.DataError, "x"),
    api("pipeline.run nan", lambda: pf.Pipeline.from_dict(BASE).run(_with(_scalars(), np.nan)), pf.DataError, "x"),
    # -- bounds: reversed, infinite, malformed ------------------------------------------------------------
    api("bounds low nan", lambda: interval(bounds=(math.nan, 1.0)), pf.ConfigError, "bounds.low"),
    api("bounds -inf", lambda: interval(bounds=(-math.inf, 1.0)), pf.ConfigError, "bounds.low"),
    api("bounds both inf", lambda: interval(bounds=(math.inf, math.inf)), pf.ConfigError, "bounds.low"),
    api("bounds reversed by a hair", lambda: interval(bounds=(1.0, np.nextafter(1.0, 0))), pf.ConfigError, "bounds"),
    api("bounds three numbers", lambda: interval(bounds=(0.0, 0.5, 1.0)), pf.ConfigError, "bounds"),
    api("bounds strings", lambda: interval(bounds=("low", "high")), pf.ConfigError, "bounds"),
    # a number is a norm bound (pf.L2Ball), which the scalar mean cannot use with 1-d data
    api("bounds a number", lambda: interval(bounds=1.0), pf.DataError, "x"),
    api("L2Ball radius 0", lambda: region(bounds=pf.L2Ball(0.0)), pf.ConfigError, "bounds.radius"),
    api("L2Ball radius nan", lambda: region(bounds=pf.L2Ball(math.nan)), pf.ConfigError, "bounds.radius"),
    api("L2Ball radius inf", lambda: region(bounds={"radius": math.inf}), pf.ConfigError, "bounds.radius"),
    api("L2Ball radius < 0", lambda: region(bounds={"radius": -1.0}), pf.ConfigError, "bounds.radius"),
    api(
        "config bounds reversed", lambda: from_dict(bounds={"low": 1.0, "high": 0.0}), pf.ConfigError, "pipeline.bounds"
    ),
    api("config bounds inf", lambda: from_dict(bounds=[0.0, math.inf]), pf.ConfigError, "pipeline.bounds.high"),
    api("config bounds string", lambda: from_dict(bounds="0,1"), pf.ConfigError, "pipeline.bounds"),
    api("config bounds 3 numbers", lambda: from_dict(bounds=[0, 1, 2]), pf.ConfigError, "pipeline.bounds"),
    api("config radius < 0", lambda: from_dict(bounds={"radius": -1}), pf.ConfigError, "pipeline.bounds.radius"),
    # -- confidence 0 / 1 / > 1 and wrong types ------------------------------------------------------------
    api("region confidence 1", lambda: region(confidence=1.0), pf.ConfigError, "confidence"),
    api("region confidence 0", lambda: region(confidence=0), pf.ConfigError, "confidence"),
    api("confidence < 0", lambda: interval(confidence=-0.1), pf.ConfigError, "confidence"),
    api("confidence inf", lambda: interval(confidence=math.inf), pf.ConfigError, "confidence"),
    api("confidence string", lambda: interval(confidence="0.9"), pf.ConfigError, "confidence"),
    api("confidence bool", lambda: interval(confidence=True), pf.ConfigError, "confidence"),
    api("confidence None", lambda: interval(confidence=None), pf.ConfigError, "confidence"),
    api("config confidence 1", lambda: from_dict(confidence=1), pf.ConfigError, "pipeline.confidence"),
    api("config confidence > 1", lambda: from_dict(confidence=90), pf.ConfigError, "pipeline.confidence"),
    api("config confidence string", lambda: from_dict(confidence="0.9"), pf.ConfigError, "pipeline.confidence"),
    api("config confidence bool", lambda: from_dict(confidence=True), pf.ConfigError, "pipeline.confidence"),
    # -- budgets <= 0 or NaN, delta >= 1, wrong types ---------------------------------------------------
    api("GDP mu inf", lambda: interval(budget=pf.GDP(math.inf)), pf.BudgetError, "mu"),
    api("GDP mu string", lambda: interval(budget=pf.GDP("one")), pf.BudgetError, "mu"),
    api("GDP mu bool", lambda: interval(budget=pf.GDP(True)), pf.BudgetError, "mu"),
    api("GDP delta nan", lambda: pf.GDP(1.0, delta=math.nan), pf.BudgetError, "delta"),
    api("GDP delta < 0", lambda: pf.GDP(1.0, delta=-1e-9), pf.BudgetError, "delta"),
    api("GDP delta 1", lambda: pf.GDP(1.0, delta=1), pf.BudgetError, "delta"),
    api("ApproxDP delta 1", lambda: pf.ApproxDP(1.0, 1.0), pf.BudgetError, "delta"),
    api("ApproxDP delta 0.5 (meaningless)", lambda: pf.ApproxDP(1.0, 0.5), pf.BudgetError, "delta"),
    api("ApproxDP delta just over 0.1", lambda: pf.ApproxDP(1.0, 0.1000001), pf.BudgetError, "delta"),
    api("GDP delta 0.5 (meaningless)", lambda: pf.GDP(1.0, delta=0.5), pf.BudgetError, "delta"),
    api("GDP to (eps, 0.5)-DP", lambda: pf.GDP(1.0).to_approx_dp(0.5), pf.BudgetError, "delta"),
    api(
        "config delta 0.5",
        lambda: budget(unit="approx-dp", epsilon=1.0, delta=0.5),
        pf.ConfigError,
        "pipeline.budget.delta",
    ),
    api("ApproxDP delta nan", lambda: pf.ApproxDP(1.0, math.nan), pf.BudgetError, "delta"),
    api("ApproxDP epsilon nan", lambda: pf.ApproxDP(math.nan, 1e-6), pf.BudgetError, "epsilon"),
    api("ApproxDP epsilon inf", lambda: pf.ApproxDP(math.inf, 1e-6), pf.BudgetError, "epsilon"),
    api("ApproxDP epsilon < 0", lambda: pf.ApproxDP(-1.0, 1e-6), pf.BudgetError, "epsilon"),
    api("PureDP epsilon 0", lambda: pf.PureDP(0.0), pf.BudgetError, "epsilon"),
    api("PureDP epsilon nan", lambda: pf.PureDP(math.nan), pf.BudgetError, "epsilon"),
    api("budget a float", lambda: interval(budget=1.0), pf.ConfigError, "budget"),
    api("budget a string", lambda: region(budget="gdp"), pf.ConfigError, "budget"),
    api(
        "ApproxDP delta 0 with Gaussian noise",
        lambda: interval(budget=pf.ApproxDP(1.0, 0.0), mechanism="gaussian"),
        pf.BudgetError,
        "budget.delta",
    ),
    api("config mu 0", lambda: budget(unit="gdp", mu=0), pf.ConfigError, "pipeline.budget.mu"),
    api("config mu nan", lambda: budget(unit="gdp", mu=math.nan), pf.ConfigError, "pipeline.budget.mu"),
    api("config mu list", lambda: budget(unit="gdp", mu=[1.0]), pf.ConfigError, "pipeline.budget.mu"),
    api("config gdp delta 1", lambda: budget(unit="gdp", mu=1.0, delta=1.0), pf.ConfigError, "pipeline.budget.delta"),
    api(
        "config approx delta 1",
        lambda: budget(unit="approx-dp", epsilon=1.0, delta=1),
        pf.ConfigError,
        "pipeline.budget.delta",
    ),
    api(
        "config pure eps bool", lambda: budget(unit="pure-dp", epsilon=True), pf.ConfigError, "pipeline.budget.epsilon"
    ),
    api("config unit a number", lambda: budget(unit=3, mu=1.0), pf.ConfigError, "pipeline.budget.unit"),
    api("config budget a string", lambda: from_dict(budget="1.0"), pf.ConfigError, "pipeline.budget"),
    # -- m >= n, m < 2, B < 1, and wrong types for sampler options ----------------------------------------
    api("m = n by rule", lambda: interval(m="n^1"), pf.ConfigError, "sampler.m"),
    api("m float", lambda: interval(m=10.5), pf.ConfigError, "sampler.m"),
    api("m bool", lambda: interval(m=True), pf.ConfigError, "sampler.m"),
    api("m rule above n", lambda: interval(m="n^2"), pf.ConfigError, "sampler.m"),
    api("wr m >= n", lambda: interval(sampler="wr", m=N), pf.ConfigError, "sampler.m"),
    api("wr m < 2", lambda: interval(sampler="wr", m=1), pf.ConfigError, "sampler.m"),
    api("region m >= n", lambda: region(m=N + 5), pf.ConfigError, "sampler.m"),
    api("B float", lambda: interval(B=2.5), pf.ConfigError, "sampler.B"),
    api("B string", lambda: interval(B="1000"), pf.ConfigError, "sampler.B"),
    api("B bool", lambda: interval(B=True), pf.ConfigError, "sampler.B"),
    api("B < 0", lambda: region(B=-3), pf.ConfigError, "sampler.B"),
    api("wr B 0", lambda: interval(sampler="wr", B=0), pf.ConfigError, "sampler.B"),
    api("rho 0", lambda: interval(sampler="wr", rho=0.0), pf.ConfigError, "sampler.rho"),
    api("rho 1", lambda: interval(sampler="wr", rho=1.0), pf.ConfigError, "sampler.rho"),
    api("rho nan", lambda: interval(sampler="wr", rho=math.nan), pf.ConfigError, "sampler.rho"),
    api("on_reject number", lambda: interval(sampler="wr", on_reject=3), pf.ConfigError, "sampler.on_reject"),
    api("memory budget tiny", lambda: interval(memory_budget=1024), pf.ConfigError, "memory_budget"),
    api("config m >= n at run time", lambda: sampler(m=N), pf.ConfigError, "pipeline.sampler.m"),
    api("config m < 2", lambda: sampler(m=1), pf.ConfigError, "pipeline.sampler.m"),
    api("config m float", lambda: sampler(m=1e3), pf.ConfigError, "pipeline.sampler.m"),
    api("config B string", lambda: sampler(B="1000"), pf.ConfigError, "pipeline.sampler.B"),
    api("config B null", lambda: sampler(B=None), pf.ConfigError, "pipeline.sampler.B"),
    api("config B float", lambda: sampler(B=2.5), pf.ConfigError, "pipeline.sampler.B"),
    # -- unknown names and wrong part types ------------------------------------------------------------
    api("unknown accountant", lambda: interval(accountant="gpd"), pf.ConfigError, "accountant"),
    api(
        "unknown region statistic",
        lambda: pf.confidence_region(_vectors(), "meen", method="cr-gs", budget=pf.GDP(1.0), bounds=pf.L2Ball(1.0)),
        pf.ConfigError,
        "statistic",
    ),
    api(
        "statistic a number",
        lambda: pf.confidence_interval(_scalars(), 3, method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1)),  # type: ignore[arg-type]
        pf.ConfigError,
        "statistic",
    ),
    api("method table without name", lambda: interval(method={"fpc": True}), pf.ConfigError, "method.name"),
    api("sampler a number", lambda: interval(sampler=3), pf.ConfigError, "sampler"),
    api("option for no part", lambda: interval(rhoo=0.1), pf.ConfigError, "rhoo"),
    api("config method a number", lambda: from_dict(method=3), pf.ConfigError, "pipeline.method"),
    api("config statistic a list", lambda: from_dict(statistic=["mean"]), pf.ConfigError, "pipeline.statistic"),
    api("config sampler a number", lambda: from_dict(sampler=5), pf.ConfigError, "pipeline.sampler"),
    api(
        "config sampler name a number", lambda: from_dict(sampler={"name": 3}), pf.ConfigError, "pipeline.sampler.name"
    ),
    api("config unknown accountant", lambda: from_dict(accountant="gpd"), pf.ConfigError, "pipeline.accountant"),
    api("config not a table", lambda: pf.Pipeline.from_dict([BASE]), pf.ConfigError, "pipeline"),  # type: ignore[arg-type]
    api("rng float", lambda: interval(rng=1.5), pf.ConfigError, "rng"),
    api("rng string", lambda: interval(rng="seed"), pf.ConfigError, "rng"),
    api("rng bool", lambda: interval(rng=True), pf.ConfigError, "rng"),
    # -- config files with wrong types ------------------------------------------------------------------
    Case(
        "toml B string",
        lambda d: pf.Pipeline.from_config(write_config(d, sampler_options='B = "1000"')),
        pf.ConfigError,
        "pipeline.sampler.B",
    ),
    Case(
        "toml confidence bool",
        lambda d: pf.Pipeline.from_config(write_config(d, confidence="true")),
        pf.ConfigError,
        "pipeline.confidence",
    ),
    Case(
        "toml mu nan",
        lambda d: pf.Pipeline.from_config(write_config(d, budget='[pipeline.budget]\nunit = "gdp"\nmu = nan')),
        pf.ConfigError,
        "pipeline.budget.mu",
    ),
    Case(
        "toml method a number",
        lambda d: pf.Pipeline.from_config(write_config(d, method="3")),
        pf.ConfigError,
        "pipeline.method",
    ),
    Case(
        "toml on_reject a number",
        lambda d: pf.Pipeline.from_config(write_config(d, sampler='"wr"', sampler_options="on_reject = 1")),
        pf.ConfigError,
        "pipeline.sampler.on_reject",
    ),
    Case(
        "json confidence NaN",
        lambda d: pf.Pipeline.from_config(_json(d, {**BASE, "confidence": math.nan})),
        pf.ConfigError,
        "pipeline.confidence",
    ),
    Case(
        "json B null",
        lambda d: pf.Pipeline.from_config(_json(d, {**BASE, "sampler": {"name": "wor", "B": None}})),
        pf.ConfigError,
        "pipeline.sampler.B",
    ),
    Case(
        "json bounds with a string",
        lambda d: pf.Pipeline.from_config(_json(d, {**BASE, "bounds": [0, "one"]})),
        pf.ConfigError,
        "pipeline.bounds",
    ),
    # -- the command line -----------------------------------------------------------------------------
    Case("cli csv empty cell", lambda d: cli_run(d, data=write_csv(d, csv_with(""))), pf.DataError, "--data"),
    Case(
        "cli csv word cell", lambda d: cli_run(d, data=write_csv(d, csv_with("0.123456789abc"))), pf.DataError, "--data"
    ),
    Case("cli csv nan cell", lambda d: cli_run(d, data=write_csv(d, csv_with("nan"))), pf.DataError, "--data"),
    Case("cli csv inf cell", lambda d: cli_run(d, data=write_csv(d, csv_with("-inf"))), pf.DataError, "--data"),
    Case(
        "cli csv short row",
        lambda d: cli_run(
            d, None, write_csv(d, [f"{v},1" for v in _scalars()[:-1]] + ["0.5"], header="value,w"), "--column", "w"
        ),
        pf.DataError,
        "--data",
    ),
    Case("cli csv header only", lambda d: cli_run(d, data=write_csv(d, [])), pf.DataError, "--data"),
    Case(
        "cli csv two columns", lambda d: cli_run(d, data=write_csv(d, ["1,2"], header="a,b")), pf.DataError, "--column"
    ),
    Case(
        "cli csv unknown column",
        lambda d: cli_run(d, None, write_csv(d), "--column", "vaule"),
        pf.DataError,
        "--column",
    ),
    Case("cli npy nan", lambda d: cli_run(d, data=write_npy(d, _with(_scalars(), np.nan))), pf.DataError, "--data"),
    Case("cli npy 3-d", lambda d: cli_run(d, data=write_npy(d, np.full((3, 3, 3), SENTINEL))), pf.DataError, "--data"),
    Case(
        "cli npy objects", lambda d: cli_run(d, data=write_npy(d, np.array([SENTINEL, None]))), pf.DataError, "--data"
    ),
    Case(
        "cli npy with column",
        lambda d: cli_run(d, None, write_npy(d, _scalars()), "--column", "x"),
        pf.DataError,
        "--column",
    ),
    Case("cli missing data file", lambda d: cli_run(d, data=str(d / "nope.csv")), pf.DataError, "--data"),
    Case("cli data not csv", lambda d: cli_run(d, data=write_csv(d, name="data.txt")), pf.DataError, "--data"),
    Case("cli bounds reversed", lambda d: cli_run(d, {"bounds": "[1.0, 0.0]"}), pf.ConfigError, "pipeline.bounds"),
    Case("cli bounds infinite", lambda d: cli_run(d, {"bounds": "[-inf, 1.0]"}), pf.ConfigError, "pipeline.bounds.low"),
    Case("cli confidence 1", lambda d: cli_run(d, {"confidence": "1.0"}), pf.ConfigError, "pipeline.confidence"),
    Case("cli confidence > 1", lambda d: cli_run(d, {"confidence": "1.5"}), pf.ConfigError, "pipeline.confidence"),
    Case(
        "cli mu negative",
        lambda d: cli_run(d, {"budget": '[pipeline.budget]\nunit = "gdp"\nmu = -1.0'}),
        pf.ConfigError,
        "pipeline.budget.mu",
    ),
    Case(
        "cli delta 1",
        lambda d: cli_run(d, {"budget": '[pipeline.budget]\nunit = "approx-dp"\nepsilon = 1.0\ndelta = 1.0'}),
        pf.ConfigError,
        "pipeline.budget.delta",
    ),
    Case("cli m >= n", lambda d: cli_run(d, {"sampler_options": f"m = {N}"}), pf.ConfigError, "pipeline.sampler.m"),
    Case("cli m < 2", lambda d: cli_run(d, {"sampler_options": "m = 1"}), pf.ConfigError, "pipeline.sampler.m"),
    Case("cli B 0", lambda d: cli_run(d, {"sampler_options": "B = 0"}), pf.ConfigError, "pipeline.sampler.B"),
    Case("cli B float", lambda d: cli_run(d, {"sampler_options": "B = 2.5"}), pf.ConfigError, "pipeline.sampler.B"),
    Case("cli unknown method", lambda d: cli_run(d, {"method": '"cr-sg"'}), pf.ConfigError, "pipeline.method"),
    Case("cli unknown sampler", lambda d: cli_run(d, {"sampler": '"wqr"'}), pf.ConfigError, "pipeline.sampler"),
    Case(
        "cli column without data",
        lambda d: run_cli(["run", write_config(d), "--demo", "--column", "v"]),
        pf.PrivframeError,
        "--column",
    ),
    Case("cli budget mu nan", lambda d: run_cli(["budget", "--mu", "nan"]), pf.BudgetError, "--mu"),
    Case("cli budget mu 0", lambda d: run_cli(["budget", "--mu", "0"]), pf.BudgetError, "--mu"),
    Case(
        "cli budget delta 1", lambda d: run_cli(["budget", "--epsilon", "1", "--delta", "1"]), pf.BudgetError, "--delta"
    ),
    Case(
        "cli budget target delta 0",
        lambda d: run_cli(["budget", "--mu", "1", "--delta", "0"]),
        pf.BudgetError,
        "--delta",
    ),
    Case(
        "cli audit unknown mechanism", lambda d: run_cli(["audit", "gausian", "--mu", "1"]), pf.ConfigError, "MECHANISM"
    ),
    Case("cli audit mu 0", lambda d: run_cli(["audit", "gaussian", "--mu", "0"]), pf.BudgetError, "--mu"),
    Case(
        "cli audit epsilon nan",
        lambda d: run_cli(["audit", "laplace", "--epsilon", "nan"]),
        pf.BudgetError,
        "--epsilon",
    ),
    Case(
        "cli audit delta 1",
        lambda d: run_cli(["audit", "laplace", "--epsilon", "1", "--delta", "1"]),
        pf.BudgetError,
        "--delta",
    ),
    Case("cli audit no budget", lambda d: run_cli(["audit", "gaussian"]), pf.PrivframeError, "--mu/--epsilon"),
    Case(
        "cli audit two budgets",
        lambda d: run_cli(["audit", "gaussian", "--mu", "1", "--epsilon", "1"]),
        pf.PrivframeError,
        "--mu --epsilon",
    ),
    Case(
        "cli audit samples",
        lambda d: run_cli(["audit", "gaussian", "--mu", "1", "--samples", "5"]),
        pf.PrivframeError,
        "--samples",
    ),
    Case("cli audit wrong unit", lambda d: run_cli(["audit", "laplace", "--mu", "1"]), pf.BudgetError, "--mu"),
]


def _json(directory: Path, config: dict[str, Any]) -> str:
    path = directory / "pipe.json"
    path.write_text(json.dumps({"pipeline": config}), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case: Case, tmp_path: Path) -> None:
    with pytest.raises(case.error) as info:
        case.call(tmp_path)
    message = str(info.value)
    assert message.startswith(f"{case.name}:") or message.startswith(f"{case.name}."), message
    assert SENTINEL_TEXT not in message, message


def test_case_ids_are_unique() -> None:
    assert len({c.id for c in CASES}) == len(CASES)


# ---------------------------------------------------------------------------------------------------------
# Data outside the bounds are clipped (documented behaviour), never rejected and never leaked


def test_vectors_outside_the_ball_are_projected_onto_it() -> None:
    X = _vectors()
    X[:20] *= 50.0  # rows far outside the unit ball
    res = pf.confidence_region(X, "mean", method="subsampling", budget=None, bounds=pf.L2Ball(1.0), B=50, rng=0)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    shrunk = 1.0 - 2.0**-20  # the mean projects onto a ball a hair smaller, so its rounded rows stay inside
    projected = X * np.minimum(1.0, shrunk / norms)
    # each coordinate is then rounded to the mean's public grid, 2^-31 of the radius
    assert res.center == pytest.approx(projected.mean(axis=0), abs=2.0**-31)


def test_extreme_values_are_clipped_before_the_private_release() -> None:
    """Values of +-1e300 outside [0, 1] are clipped, so the released centre is the clipped mean plus noise of
    scale nu_n (here ~0.007): nowhere near the raw values, and the interval is finite."""
    x = _scalars()
    x[:10] = 1e300
    x[10:20] = -1e300
    res = interval(x)
    clipped = np.clip(x, 0.0, 1.0).mean()
    assert math.isfinite(res.low)
    assert math.isfinite(res.high)
    assert abs(res.center - clipped) < 8 * res.diagnostics["nu_n"]


def test_cli_clips_out_of_bounds_csv_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    values = _scalars()
    values[:5] = [-3.0, 7.5, 12.0, -0.5, 1.25]
    config = write_config(tmp_path, method='"subsampling"', budget="")
    data = write_csv(tmp_path, [repr(float(v)) for v in values])
    assert cli.main(["run", config, "--data", data, "--seed", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # the mean rounds each record to its public grid (2^-31 of the bounds' magnitude), then sums exactly
    assert out["center"] == pytest.approx(np.clip(values, 0.0, 1.0).mean(), abs=2.0**-31)


# ---------------------------------------------------------------------------------------------------------
# Huge B: chunks stay under the memory budget


def test_huge_b_is_chunked_under_the_memory_budget() -> None:
    """B = 50 000 resamples of m = 100: the full index matrix alone would be 40 MB (and the gathered values as
    much again). With a 1 MiB budget only O(B) results (16 bytes a row) and one chunk are alive at a time.
    A small call first, so that what the first call imports (scipy.special, read lazily) is not counted."""
    x = _scalars(1000)
    interval(x, sampler="wr", on_reject="redraw", B=10, m=100, memory_budget=2**20)
    tracemalloc.start()
    try:
        res = interval(x, sampler="wr", on_reject="redraw", B=50_000, m=100, memory_budget=2**20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert res.parameters["B"] == 50_000
    full_matrix = 50_000 * 100 * 8
    assert peak < full_matrix / 4, f"peak {peak / 2**20:.1f} MiB"


class _GuardedSeed(np.random.SeedSequence):
    """A SeedSequence that refuses to spawn a giant number of children (instead of exhausting memory)."""

    def spawn(self, n_children: int) -> Any:
        if n_children > 10**6:
            raise MemoryError(f"asked to spawn {n_children} seeds")
        return super().spawn(n_children)


@pytest.mark.parametrize("name", ["wor", "wr"])
def test_absurd_b_fails_fast_with_a_config_error(name: str) -> None:
    sampler = pf.registry.create("sampler", name, {"B": 10**12})
    rng = np.random.Generator(np.random.PCG64(_GuardedSeed(0)))
    with pytest.raises(pf.ConfigError, match=r"^B:"):
        draw(sampler, 1000, rng)


# ---------------------------------------------------------------------------------------------------------
# A plugin that raises inside a hook


class FlakyPlugin:
    """Registers a statistic on the first load and raises on every later one (as after a reload)."""

    def __init__(self) -> None:
        self.loads = 0

    @pp.hookimpl
    def privframe_register_statistics(self, registry: pp.StatisticRegistry) -> None:
        self.loads += 1
        if self.loads > 1:
            raise RuntimeError("registration service unavailable")


@pytest.fixture
def flaky_plugin() -> Iterator[FlakyPlugin]:
    plugin = FlakyPlugin()
    name = pf.registry.register(plugin, name="test-flaky")
    try:
        yield plugin
    finally:
        pf.registry.unregister(name)


def _expect_plugin_error(call: Callable[[], Any]) -> str:
    with pytest.raises(pf.PluginError) as info:
        call()
    message = str(info.value)
    assert "plugin 'test-flaky' raised RuntimeError in privframe_register_statistics" in message
    assert SENTINEL_TEXT not in message
    return message


def test_plugin_raising_in_a_hook_fails_every_entry_point(flaky_plugin: FlakyPlugin, tmp_path: Path) -> None:
    pf.registry.reload()  # the next load calls the hook again, and it raises
    _expect_plugin_error(lambda: interval())
    _expect_plugin_error(lambda: region())
    _expect_plugin_error(lambda: pf.Pipeline.from_dict(BASE))
    _expect_plugin_error(lambda: pf.registry.names("statistic"))
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        assert cli.main(["run", write_config(tmp_path), "--data", write_csv(tmp_path)]) == 2
    assert err.getvalue().startswith("privframe: error: plugin 'test-flaky' raised RuntimeError")
    assert SENTINEL_TEXT not in err.getvalue()
    assert flaky_plugin.loads >= 5


def test_the_registry_recovers_once_the_failing_plugin_is_removed() -> None:
    name = pf.registry.register(FlakyPlugin(), name="test-flaky")
    try:
        pf.registry.reload()
        _expect_plugin_error(lambda: interval())
    finally:
        pf.registry.unregister(name)
    assert interval().low <= interval().high
    assert "mean" in pf.registry.names("statistic")
