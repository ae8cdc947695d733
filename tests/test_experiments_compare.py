"""Experiments that compare: common random numbers, paired differences against a baseline, rows that
record the pipeline, the width's sd, ``extends``, and failing cells that name their cell and trial.

Every assertion here is exact (seeded runs, hand-built outcomes), so no Monte Carlo tolerance is needed.
"""

from __future__ import annotations

import csv
import io
import json
import math
import statistics
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

import attrs
import numpy as np
import pytest

import privframe as pf
import privframe.plugin as pp
from privframe.cli import main
from privframe.experiments import metrics, trial
from privframe.experiments.cells import Cell, common_seed, data_seed, expand, method_seed
from privframe.experiments.config import load_experiment, parse_experiment
from privframe.experiments.generators import make_generator
from privframe.experiments.output import csv_text

E = pf.experiments


def _toy_config(**experiment: Any) -> dict[str, Any]:
    """Two cr-gs variants (the same pipeline under two labels, and a smaller B) and their reference."""
    base: dict[str, Any] = {
        "name": "toy-compare",
        "trials": 6,
        "seed": 3,
        "data": {"generator": "uniform", "low": -0.5, "high": 0.5},
        "grid": {"n": [200], "budgets": [{"label": "mu=1", "gdp": {"unit": "gdp", "mu": 1.0}}]},
        "defaults": {"statistic": "mean", "bounds": [-0.5, 0.5]},
        "methods": {
            "a": {"method": "cr-gs", "sampler": {"name": "wor", "B": 200}, "budget": "gdp", "reference": "sub"},
            "a-twin": {"method": "cr-gs", "sampler": {"name": "wor", "B": 200}, "budget": "gdp"},
            "a-small-b": {"method": "cr-gs", "sampler": {"name": "wor", "B": 100}, "budget": "gdp"},
            "sub": {"method": "subsampling", "sampler": {"name": "wor", "B": 200}},
        },
    }
    return {"experiment": {**base, **experiment}}


def _row(res: E.ExperimentResult, method: str) -> metrics.CellSummary:
    (row,) = [r for r in res.rows if r.method == method]
    return row


# -- common random numbers ---------------------------------------------------------------------------


def test_common_random_numbers_is_off_in_every_builtin_and_keeps_saved_fingerprints() -> None:
    for name in E.builtin_names():
        assert load_experiment(name).common_random_numbers is False
    task = expand(
        load_experiment("seed1-mean").with_overrides(trials=4, n=[300], methods=["cr-gs-wor"], budgets=["mu=1"])
    )[0]
    assert task.cell.key == "cr-gs-wor|mu=1|n=300"
    # Computed before the setting existed: cells saved by earlier runs still resume.
    assert task.fingerprint("0.0.0") == "c858d205f3ecc5cdc613ed80989ccc474bb2ed16f34bb4c7df179b1f6c8f1d86"
    assert attrs.evolve(task, common_random_numbers=True).fingerprint("0.0.0") != task.fingerprint("0.0.0")


@pytest.mark.parametrize("common", [False, True])
def test_each_trial_runs_with_the_documented_seed(common: bool) -> None:
    spec = parse_experiment(_toy_config(common_random_numbers=common, trials=3))
    task = next(t for t in expand(spec) if t.cell.method == "a")
    outcome = trial.run_cell(task)
    pipe = spec.pipeline(spec.method("a"), spec.levels[0])
    gen = make_generator("uniform", {"low": -0.5, "high": 0.5}, "d")
    expected = []
    for t in range(3):
        data = gen.sample(200, np.random.default_rng(data_seed(3, "toy-compare", 200, t)))
        seed = common_seed(3, "toy-compare", 200, t) if common else method_seed(3, "toy-compare", task.cell.key, t)
        expected.append(pipe.run(data, rng=seed).width)
    assert [r.width for r in outcome.records] == expected


def test_common_random_numbers_make_identical_pipelines_release_identical_sets() -> None:
    shared = E.run(_toy_config(common_random_numbers=True, compare="a"))
    own = E.run(_toy_config(compare="a"))
    for res in (shared, own):
        assert res.meta["compare"] == "a"
    key = Cell("a", "mu=1", 200).key, Cell("a-twin", "mu=1", 200).key

    def released(res: E.ExperimentResult, key: str) -> list[tuple[bool | None, float | None]]:
        return [(r.covered, r.width) for r in res.outcomes[key].records]

    assert released(shared, key[0]) == released(shared, key[1])
    assert [r.width for r in own.outcomes[key[0]].records] != [r.width for r in own.outcomes[key[1]].records]
    twin = _row(shared, "a-twin")
    assert (twin.width_diff, twin.width_diff_se, twin.coverage_diff, twin.coverage_diff_se) == (0.0, 0.0, 0.0, 0.0)
    assert twin.compare_pairs == 6
    own_se = _row(own, "a-twin").width_diff_se
    assert own_se is not None
    assert own_se > 0
    assert shared.meta["common_random_numbers"] is True
    assert own.meta["common_random_numbers"] is False


# -- paired differences ------------------------------------------------------------------------------


def test_paired_differences_and_their_se_from_hand_built_trials() -> None:
    rec = trial.TrialRecord
    g = trial.guarantee_of(pf.GDP(1.0), 1e-6)
    outcome = trial.CellOutcome(
        Cell("v", "mu=1", 10),
        (
            rec(0, None, True, 3.0, 1.0),
            rec(1, None, False, 5.0, 1.0),
            rec(2, None, True, 4.0, 1.0),
            rec(3, "PTRFailed", None, None, 0.0),
        ),
        g,
        {},
        0.1,
    )
    baseline = trial.CellOutcome(
        Cell("b", "mu=1", 10),
        (
            rec(0, None, True, 2.0, 1.0),
            rec(1, None, True, 2.0, 1.0),
            rec(2, "PTRFailed", None, None, 0.0),
            rec(3, None, True, 1.0, 1.0),
        ),
        g,
        {},
        0.1,
    )
    task = expand(parse_experiment(_toy_config()))[0]
    row = metrics.summarise(task, outcome, None, baseline=baseline)
    # Trials 0 and 1 released in both: width differences 1 and 3, coverage differences 0 and -1.
    assert row.compare == "b"
    assert row.compare_pairs == 2
    assert row.width_diff == 2.0
    assert row.width_diff_se == pytest.approx(statistics.stdev([1.0, 3.0]) / math.sqrt(2))
    assert row.coverage_diff == -0.5
    assert row.coverage_diff_se == pytest.approx(statistics.stdev([0.0, -1.0]) / math.sqrt(2))
    assert row.width_sd == pytest.approx(statistics.stdev([3.0, 5.0, 4.0]))
    alone = metrics.summarise(task, outcome, None)
    assert (alone.compare, alone.width_diff, alone.width_diff_se) == (None, None, None)


def test_compare_pairs_each_cell_with_the_baseline_at_its_level_and_n() -> None:
    res = E.run(
        _toy_config(
            compare="a",
            common_random_numbers=True,
            grid={
                "n": [200, 300],
                "budgets": [
                    {"label": "mu=1", "gdp": {"unit": "gdp", "mu": 1.0}},
                    {"label": "mu=2", "gdp": {"unit": "gdp", "mu": 2.0}},
                ],
            },
            trials=3,
        )
    )
    for row in res.rows:
        if row.method == "a" or row.budget == E.NON_PRIVATE:
            assert row.compare is None
            assert row.width_diff is None
            continue
        base = res.outcomes[Cell("a", row.budget, row.n).key]
        mine = res.outcomes[Cell(row.method, row.budget, row.n).key]
        diffs = [m.width - b.width for m, b in zip(mine.records, base.records, strict=True)]  # type: ignore[operator]
        assert row.compare == "a"
        assert row.width_diff == pytest.approx(math.fsum(diffs) / 3, rel=1e-12)
    table = res.table()
    assert "Δwidth" in table.splitlines()[0]
    assert "Δcov" in table.splitlines()[0]
    assert "paired differences method - a over the trials in which both released" in table


def test_compare_must_name_a_method_and_is_kept_by_a_method_selection() -> None:
    with pytest.raises(pf.ConfigError, match=r"^experiment\.compare: expected a method label"):
        parse_experiment(_toy_config(compare="nope"))
    spec = parse_experiment(_toy_config(compare="a")).with_overrides(methods=["a-small-b"])
    assert spec.labels() == ("a", "a-small-b", "sub")


# -- rows that record the pipeline -------------------------------------------------------------------


def test_rows_name_every_part_and_its_resolved_options(tmp_path: Path) -> None:
    res = E.run(_toy_config(trials=2), out=tmp_path)
    row = _row(res, "a-small-b")
    assert (row.sampler, row.mechanism, row.accountant) == ("wor", "gaussian", "gdp")
    assert row.pipeline["method"]["name"] == "cr-gs"
    assert row.pipeline["method"]["radius"] == "noise-aware"  # the method's default, resolved
    assert row.pipeline["sampler"]["B"] == 100
    assert row.pipeline["mechanism"] == {"name": "gaussian", "exact": True}
    assert row.pipeline["budget"] == {"unit": "gdp", "mu": 1.0}
    assert row.parameters["B"] == 100
    assert row.parameters["m"] > 0
    ref = _row(res, "sub")
    assert (ref.sampler, ref.mechanism, ref.accountant) == ("wor", None, None)
    assert set(ref.pipeline) == {"method", "statistic", "sampler", "bounds", "confidence"}
    saved = json.loads((tmp_path / "toy-compare" / "results.json").read_text(encoding="utf-8"))
    assert [r["pipeline"] for r in saved["rows"]] == [r.pipeline for r in res.rows]
    text = (tmp_path / "toy-compare" / "results.csv").read_text(encoding="utf-8")
    assert text == csv_text(res.rows)
    by_method = {r["method"]: r for r in csv.DictReader(io.StringIO(text))}
    assert json.loads(by_method["a-small-b"]["pipeline"]) == row.pipeline
    assert by_method["a-small-b"]["mechanism"] == "gaussian"
    assert by_method["sub"]["mechanism"] == ""
    assert float(by_method["a"]["width_sd"]) == pytest.approx(
        statistics.stdev([r.width for r in res.outcomes[Cell("a", "mu=1", 200).key].records])  # type: ignore[type-var]
    )
    assert "sd(width)" in res.table().splitlines()[0]


def test_option_values_are_written_without_object_addresses() -> None:
    from scipy import stats

    assert metrics._plain(stats.norm(scale=1.5)) == {"scipy": "norm", "args": [], "scale": 1.5}
    assert metrics._plain(object()) == "object"
    assert metrics._plain((1, math.inf, None)) == [1, "inf", None]


# -- extends -----------------------------------------------------------------------------------------


def test_extends_starts_from_a_builtin_and_overrides_methods_and_budgets() -> None:
    spec = parse_experiment(
        {
            "experiment": {
                "extends": "seed1-mean",
                "name": "seed1-mean-b200",
                "compare": "cr-gs-wor",
                "grid": {
                    "budgets": [
                        {"label": "mu=1", "gdp": {"unit": "gdp", "mu": 2.0}},
                        {"label": "mu=4", "gdp": {"unit": "gdp", "mu": 4.0}},
                    ]
                },
                "methods": {
                    "cr-gs-wor": {"sampler": {"name": "wor", "B": 200}},  # merged key by key
                    "cr-gs-wor-b100": {"method": "cr-gs", "sampler": {"name": "wor", "B": 100}, "budget": "gdp"},
                },
            }
        }
    )
    builtin = load_experiment("seed1-mean")
    assert spec.extends == "seed1-mean"
    assert spec.name == "seed1-mean-b200"
    assert spec.labels() == (*builtin.labels(), "cr-gs-wor-b100")
    assert spec.n == builtin.n
    assert spec.trials == builtin.trials
    assert dict(spec.data) == dict(builtin.data)
    changed = spec.method("cr-gs-wor")
    assert changed.pipeline["sampler"] == {"name": "wor", "B": 200}
    assert changed.pipeline["method"] == builtin.method("cr-gs-wor").pipeline["method"]  # kept
    assert (changed.budget, changed.reference) == ("gdp", "subsampling-wor")
    assert [level.label for level in spec.levels] == ["mu=8", "mu=1", "mu=4"]
    assert spec.levels[1].slots == {"gdp": pf.GDP(2.0)}
    spec.with_overrides(methods=["cr-gs-wor-b100"], budgets=["mu=4"], n=[300], trials=1).validate()


@pytest.mark.parametrize(
    ("experiment", "path"),
    [
        ({"extends": "seed9", "name": "x"}, "experiment.extends"),
        ({"extends": "seed1-mean"}, "experiment.name"),
        ({"extends": "seed1-mean", "name": "x", "grid": {"m": [1]}}, "experiment.grid.m"),
        (
            {"extends": "seed1-mean", "name": "x", "methods": {"cr-gs-wor": {"radius": 1}}},
            "experiment.methods.cr-gs-wor.radius",
        ),
    ],
)
def test_extends_errors_name_their_path(experiment: dict[str, Any], path: str) -> None:
    with pytest.raises(pf.ConfigError) as info:
        parse_experiment({"experiment": experiment})
    assert str(info.value).startswith(f"{path}: ")


def test_a_toml_file_can_extend_a_builtin(tmp_path: Path) -> None:
    file = tmp_path / "mine.toml"
    file.write_text('[experiment]\nextends = "seed1-mean"\nname = "mine"\ntrials = 7\n', encoding="utf-8")
    spec = load_experiment(file)
    assert (spec.name, spec.trials, spec.extends, spec.source) == ("mine", 7, "seed1-mean", str(file))


# -- a failing cell names its cell and trial ---------------------------------------------------------


@attrs.frozen
class BoomMethod:
    """Raises on trial data: a ``ValueError`` quoting a data value, or a ``ConfigError``."""

    name: ClassVar[str] = "boom-test"
    needs: ClassVar[pp.MethodNeeds] = pp.MethodNeeds(sampler=None, mechanism=None, private=False)
    typed: bool = False

    def defaults(self, budget: pf.Budget | None, confidence: float) -> Mapping[str, object]:
        return {}

    def run(self, ctx: pp.RunContext) -> pf.IntervalResult:
        if self.typed:
            raise pf.ConfigError("must be odd", path="method.k")
        raise ValueError(f"bad value {float(np.asarray(ctx.data).flat[0])!r}")


class BoomPlugin:
    @pp.hookimpl
    def privframe_register_methods(self, registry: pp.MethodRegistry) -> None:
        registry.add(BoomMethod)


@pytest.fixture
def boom() -> Iterator[str]:
    name = pf.registry.register(BoomPlugin(), name="test-boom")
    try:
        yield name
    finally:
        pf.registry.unregister(name)


@pytest.mark.parametrize("typed", [False, True])
def test_a_failing_cell_names_the_experiment_cell_and_trial_on_the_terminal(
    boom: str, typed: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _toy_config(trials=2)
    config["experiment"]["methods"] = {"boom": {"method": {"name": "boom-test", "typed": typed}}}
    file = tmp_path / "boom.json"
    file.write_text(json.dumps(config), encoding="utf-8")
    status = main(["experiment", str(file), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    where = (
        "privframe: error in experiment 'toy-compare', cell boom|non-private|n=200 "
        "(method 'boom', budget level 'non-private', n = 200), trial 0: "
    )
    if typed:
        assert status == 2
        assert err == where + "ConfigError: experiment.methods.boom.method.k: must be odd\n"
    else:
        assert status == 1
        assert err.startswith(where + "ValueError (message withheld")
        assert "bad value" not in err
    with pytest.raises(ValueError, match="bad value" if not typed else "must be odd") as info:
        E.run(config)
    assert info.value.__notes__ == [where.removeprefix("privframe: error ").removesuffix(": ")]


# -- acceptance: a staircase-like variant against seed1-mean's cr-gs ----------------------------------


@attrs.frozen
class Staircase:
    """The staircase mechanism (Geng and Viswanath) as a researcher's plugin: pure eps-DP, float noise.

    Under a GDP budget it runs at the pure eps that implies it. A test double, not a safe release.
    """

    name: ClassVar[str] = "test-staircase"
    accepts: ClassVar[Mapping[pp.BudgetKind, pp.BudgetKind]] = MappingProxyType(
        {pf.GDP: pf.GDP, pf.ApproxDP: pf.PureDP, pf.PureDP: pf.PureDP}
    )
    gamma: float = attrs.field(default=0.5, validator=pp.validators.probability)

    def plan(self, sensitivity: float, budget: pf.Budget, *, label: str, dimension: int = 1) -> pf.PrivacyEvent:
        if isinstance(budget, pf.GDP):
            epsilon, recorded = pp.accounting.gdp_pure_epsilon(budget.mu), pf.GDP(budget.mu)
        else:
            epsilon, recorded = budget.epsilon, pf.PureDP(budget.epsilon)
        return pf.PrivacyEvent(
            label=label,
            mechanism=self.name,
            budget=recorded,
            sensitivity=sensitivity,
            noise_scale=sensitivity / epsilon,
            details={"epsilon": epsilon / dimension, "gamma": self.gamma},
        )

    def apply(self, value: pp.Array, event: pf.PrivacyEvent, rng: np.random.Generator) -> pp.Array:
        shape = np.shape(value)
        b = math.exp(-event.details["epsilon"])
        gamma = event.details["gamma"]
        sign = rng.choice([-1.0, 1.0], size=shape)
        geometric = rng.geometric(1 - b, size=shape) - 1.0
        uniform = rng.uniform(size=shape)
        upper = rng.uniform(size=shape) >= gamma / (gamma + (1 - gamma) * b)
        step = np.where(upper, geometric + gamma + (1 - gamma) * uniform, geometric + gamma * uniform)
        noisy: pp.Array = np.asarray(value, dtype=np.float64) + sign * step * (event.sensitivity or 0.0)
        return noisy


class StaircasePlugin:
    @pp.hookimpl
    def privframe_register_mechanisms(self, registry: pp.MechanismRegistry) -> None:
        registry.add(Staircase, asserts_privacy=True)


@pytest.fixture
def staircase() -> Iterator[None]:
    name = pf.registry.register(StaircasePlugin(), name="test-staircase-plugin")
    try:
        yield
    finally:
        pf.registry.unregister(name)


def test_a_staircase_variant_extending_seed1_mean_reports_paired_differences(
    staircase: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's acceptance: extend seed1-mean by a staircase variant of cr-gs, compare it with the
    built-in cr-gs on common random numbers from the command line, and read the mechanism off the rows."""
    config = tmp_path / "stair.toml"
    config.write_text(
        '[experiment]\nextends = "seed1-mean"\nname = "seed1-stair"\n\n'
        '[experiment.methods.cr-gs-stair]\nmethod = { name = "cr-gs", radius = "paper" }\nsampler = "wor"\n'
        'mechanism = { name = "test-staircase", gamma = 0.3 }\nbudget = "gdp"\nreference = "subsampling-wor"\n',
        encoding="utf-8",
    )
    status = main(
        [
            "experiment", str(config), "--methods", "cr-gs-stair", "--compare", "cr-gs-wor",
            "--common-random-numbers", "--budget", "mu=1", "--n", "2000", "--trials", "5", "--out", str(tmp_path),
        ]
    )  # fmt: skip
    assert status == 0
    out = capsys.readouterr().out
    assert "Δwidth" in out
    assert "--compare cr-gs-wor --common-random-numbers" in out  # the reproducing command keeps them
    saved = json.loads((tmp_path / "seed1-stair" / "results.json").read_text(encoding="utf-8"))
    rows = {(r["method"], r["budget"]): r for r in saved["rows"]}
    stair, base = rows[("cr-gs-stair", "mu=1")], rows[("cr-gs-wor", "mu=1")]
    assert stair["mechanism"] == "test-staircase"
    assert stair["pipeline"]["mechanism"] == {"name": "test-staircase", "gamma": 0.3}
    assert base["pipeline"]["mechanism"]["name"] == "gaussian"
    assert stair["compare"] == "cr-gs-wor"
    assert stair["compare_pairs"] == 5
    assert stair["width_diff"] == pytest.approx(stair["mean_width"] - base["mean_width"], rel=1e-9)
    assert stair["width_diff_se"] > 0  # different noise on the same resamples: the differences vary
    assert set(stair["noise_scale"]) == {"center", "radius"}
    assert min(stair["noise_scale"].values()) > 0
    assert saved["common_random_numbers"] is True
    text = (tmp_path / "seed1-stair" / "results.csv").read_text(encoding="utf-8")
    by_method = {r["method"]: r for r in csv.DictReader(io.StringIO(text)) if r["budget"] == "mu=1"}
    assert by_method["cr-gs-stair"]["mechanism"] == "test-staircase"
    assert json.loads(by_method["cr-gs-stair"]["pipeline"])["mechanism"]["gamma"] == 0.3


def test_compare_and_common_random_numbers_can_be_set_as_overrides() -> None:
    spec = parse_experiment(_toy_config()).with_overrides(compare="a", common_random_numbers=True)
    assert (spec.compare, spec.common_random_numbers) == ("a", True)
    assert "a" in spec.with_overrides(methods=["a-small-b"], compare="a").labels()
    with pytest.raises(pf.ConfigError, match=r"^compare: expected a method label"):
        parse_experiment(_toy_config()).with_overrides(compare="nope")
