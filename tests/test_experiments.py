"""The experiment harness: configs, truths, budget matching, metrics, executors, resume, outputs, CLI.

Statistical tolerances are 3 Monte Carlo standard errors, derived next to each assertion.
"""

from __future__ import annotations

import io
import json
import math
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import attrs
import numpy as np
import pytest
from scipy import stats

import privframe as pf
import privframe.plugin as pp
from privframe.cli import main
from privframe.experiments import levels, metrics, trial
from privframe.experiments.cells import Cell, CellTask, data_seed, expand, method_seed
from privframe.experiments.config import load_experiment, parse_experiment
from privframe.experiments.generators import make_generator
from privframe.experiments.output import csv_text, markdown_table
from privframe.experiments.plots import matplotlib_available
from privframe_std.statistics.ks import ks_distance
from privframe_std.statistics.logistic_slope import logistic_penalised_coefficients

E = pf.experiments

# A small slice of seed1-mean: 2 private methods x 2 budget levels x 2 n, plus 2 references x 2 n = 12 cells.
SLICE: dict[str, Any] = {"trials": 4, "n": [300, 500], "methods": ["cr-gs-wor", "cr-gs-wr"]}

# Smoke-run sizes: one trial, small n. blbquant at (1, 1e-6)-DP needs n >= ~500 for its blocks.
SMOKE_N = {"scale-mean": [2000], "seed2-median": [500]}


def _config(**changes: Any) -> dict[str, Any]:
    """A valid config mapping using only the parts the foundation registers."""
    config: dict[str, Any] = {
        "experiment": {
            "name": "toy",
            "trials": 3,
            "seed": 7,
            "data": {"generator": "uniform", "low": -0.5, "high": 0.5},
            "grid": {"n": [200], "budgets": [{"label": "mu=1", "gdp": {"unit": "gdp", "mu": 1.0}}]},
            "defaults": {"statistic": "mean", "bounds": [-0.5, 0.5]},
            "methods": {
                "cr-gs-wor": {"method": "cr-gs", "sampler": "wor", "budget": "gdp", "reference": "sub"},
                "sub": {"method": "subsampling", "sampler": "wor"},
            },
        }
    }
    exp = config["experiment"]
    for dotted, value in changes.items():
        *parents, last = dotted.split("/")
        target = exp
        for key in parents:
            target = target[key]
        if value is _DELETE:
            del target[last]
        else:
            target[last] = value
    return config


_DELETE = object()


# -- truths and generators ----------------------------------------------------------------------------


def _truth(gen: Any, statistic: str, **options: Any) -> float:
    """The statistic's own population value under the generator's law (what experiments use)."""
    return float(pf.registry.create("statistic", statistic, options).population_value(gen.population()))


def test_truncated_normal_truths_match_experiments_md() -> None:
    gen = make_generator("truncated-normal", {}, "experiment.data")
    assert _truth(gen, "median") == pytest.approx(-0.0536489, abs=5e-8)
    assert _truth(gen, "mean") == pytest.approx(-0.1015660, abs=5e-8)
    assert _truth(gen, "quantile", q=0.5) == pytest.approx(-0.0536489, abs=5e-8)


def test_ks_truth_matches_experiments_md_and_a_closed_form_maximiser() -> None:
    gen = make_generator("normal", {}, "experiment.data")
    assert _truth(gen, "ks", reference=stats.norm(scale=1.5)) == pytest.approx(0.0967900, abs=5e-8)
    # Closed form: phi(x) = phi(x / 1.5) / 1.5 at x^2 = 2 ln(1.5) / (1 - 1 / 1.5^2); the sup is there.
    x = math.sqrt(2 * math.log(1.5) / (1 - 1 / 1.5**2))
    assert x == pytest.approx(1.2082, abs=5e-5)
    exact = stats.norm.cdf(x) - stats.norm.cdf(x / 1.5)
    assert ks_distance(stats.norm.cdf, stats.norm(scale=1.5).cdf, -15, 15) == pytest.approx(exact, abs=1e-12)


def _logistic_oracle(penalty: float, nodes: int = 400) -> np.ndarray:
    """Independent oracle: Gauss-Legendre nodes on [-1, 1] and Newton's method on the gradient."""
    x, w = np.polynomial.legendre.leggauss(nodes)
    w = w / 2.0  # Unif[-1, 1] density
    z = np.column_stack((np.ones_like(x), x)) / math.sqrt(2.0)
    p = 1.0 / (1.0 + np.exp(-(0.5 + 2.0 * x)))
    b = np.zeros(2)
    for _ in range(50):
        s = 1.0 / (1.0 + np.exp(-(z @ b)))
        grad = z.T @ (w * (s - p)) + 2 * penalty * b
        hess = (z * (w * s * (1 - s))[:, None]).T @ z + 2 * penalty * np.eye(2)
        b = b - np.linalg.solve(hess, grad)
    return b


def test_logistic_truth_matches_an_independent_quadrature_and_newton_solve() -> None:
    gen = make_generator("logistic", {}, "experiment.data")
    truth = _truth(gen, "logistic-slope", penalty=0.01)
    assert truth == pytest.approx(_logistic_oracle(0.01)[1], abs=1e-9)
    assert truth == pytest.approx(1.6484934, abs=5e-8)  # the value quoted in the seed2-logistic config


def test_logistic_truth_without_penalty_recovers_the_true_coefficients() -> None:
    # The model is well specified: as c -> 0 the minimiser is (0.5, 2) sqrt(2) in z-coordinates.
    b = logistic_penalised_coefficients(0.5, 2.0, -1.0, 1.0, 1e-9)
    np.testing.assert_allclose(b, np.array([0.5, 2.0]) * math.sqrt(2.0), atol=1e-6)


def test_clipped_normal_mean_matches_the_closed_form() -> None:
    loc, scale, lo, hi = 0.2, 1.0, 0.0, 1.0
    gen = make_generator("clipped-normal", {"loc": loc, "scale": scale, "low": lo, "high": hi}, "experiment.data")
    a, b = (lo - loc) / scale, (hi - loc) / scale
    exact = (
        lo * stats.norm.cdf(a)
        + hi * stats.norm.sf(b)
        + loc * (stats.norm.cdf(b) - stats.norm.cdf(a))
        + scale * (stats.norm.pdf(a) - stats.norm.pdf(b))
    )
    assert _truth(gen, "mean") == pytest.approx(exact, abs=1e-10)
    assert _truth(make_generator("clipped-normal", {}, "experiment.data"), "mean") == pytest.approx(0.5, abs=1e-12)


@pytest.mark.parametrize(
    ("name", "options", "statistic"),
    [
        ("bernoulli", {"p": 0.05}, "mean"),
        ("truncated-normal", {}, "mean"),
        ("uniform", {}, "mean"),
        ("clipped-normal", {}, "mean"),
        ("clipped-lognormal", {}, "mean"),
        ("normal", {"loc": 1.0, "scale": 2.0}, "mean"),
    ],
)
def test_generators_draw_from_the_distribution_their_truth_describes(
    name: str, options: dict[str, Any], statistic: str
) -> None:
    gen = make_generator(name, options, "experiment.data")
    x = gen.sample(200_000, np.random.default_rng(3))
    assert x.shape == (200_000,)
    # The sample mean has SE sd / sqrt(N); allow 3 SE.
    assert abs(x.mean() - _truth(gen, statistic)) <= 3 * x.std() / math.sqrt(x.size)


def test_clipped_lognormal_truths_match_experiments_md() -> None:
    gen = make_generator("clipped-lognormal", {}, "experiment.data")
    # Median exp(0) = 1 and 0.9-quantile exp(z_0.9), both below the clip at 20.
    assert _truth(gen, "median") == pytest.approx(1.0, abs=1e-12)
    assert _truth(gen, "quantile", q=0.9) == pytest.approx(math.exp(stats.norm.ppf(0.9)), rel=1e-12)
    assert _truth(gen, "quantile", q=0.9) == pytest.approx(3.602224, abs=5e-7)
    # Mean: E[min(e^Z, 20)] = e^(1/2) Phi(ln 20 - 1) + 20 (1 - Phi(ln 20)) in closed form.
    z = math.log(20.0)
    exact = math.exp(0.5) * stats.norm.cdf(z - 1) + 20 * stats.norm.sf(z)
    assert _truth(gen, "mean") == pytest.approx(exact, abs=1e-10)
    assert _truth(gen, "mean") == pytest.approx(1.638210, abs=5e-7)


def test_logistic_generator_shape_norms_labels_and_conditional_law() -> None:
    x = make_generator("logistic", {}, "experiment.data").sample(200_000, np.random.default_rng(4))
    assert x.shape == (200_000, 3)
    assert np.all(np.linalg.norm(x[:, :2], axis=1) <= 1 + 1e-12)
    assert set(np.unique(x[:, 2])) == {-1.0, 1.0}
    # P(y = +1) = E[expit(0.5 + 2x)]; SE of a proportion sqrt(p (1 - p) / N); allow 3 SE.
    xs, ws = np.polynomial.legendre.leggauss(200)
    p = float(np.sum(ws / 2 / (1 + np.exp(-(0.5 + 2 * xs)))))
    share = float(np.mean(x[:, 2] == 1))
    assert abs(share - p) <= 3 * math.sqrt(p * (1 - p) / x.shape[0])


def test_unknown_truth_is_a_config_error_naming_the_method() -> None:
    config = _config(**{"defaults/statistic": "median", "methods": {"sub": {"method": "subsampling"}}})
    config["experiment"]["data"] = {"generator": "logistic"}
    config["experiment"]["defaults"]["bounds"] = [-1, 1]
    spec = parse_experiment(config)
    with pytest.raises(
        pf.ConfigError, match=r"^experiment\.methods\.sub\.truth: statistic 'median' has no population value"
    ):
        spec.validate()


# -- budget levels ------------------------------------------------------------------------------------


@pytest.mark.parametrize("mu", [0.1, 1.0, 8.0])
def test_matched_budgets_have_the_same_epsilon_at_the_reporting_delta(mu: float) -> None:
    source = pf.GDP(mu)
    eps = source.to_approx_dp(1e-6).epsilon
    approx = levels.match_budget(source, "approx-dp", 1e-6)
    pure = levels.match_budget(source, "pure-dp", 1e-6)
    assert approx == pf.ApproxDP(eps, 1e-6)
    assert pure == pf.PureDP(eps)
    back = levels.match_budget(approx, "gdp", 1e-6)
    assert back.to_approx_dp(1e-6).epsilon == pytest.approx(eps, rel=1e-9)
    split = levels.match_budget(approx, "gdp", 1e-6, gdp_delta=5e-7)
    assert isinstance(split, pf.GDP)
    assert split.delta == 5e-7
    assert split.mu < back.mu
    assert split.to_approx_dp(1e-6).epsilon == pytest.approx(eps, rel=1e-9)


def test_a_matched_pure_budget_has_the_reference_epsilon() -> None:
    level = levels.parse_level(
        {"label": "mu=1", "gdp": {"unit": "gdp", "mu": 1.0}, "pure-dp": {"match": "gdp", "unit": "pure-dp"}},
        1e-6,
        "x",
    )
    # eps(1e-6; mu = 1) = 4.886554 (tight GDP curve, algorithms.md section 1).
    pure = level.slots["pure-dp"]
    assert isinstance(pure, pf.PureDP)
    assert pure.epsilon == pytest.approx(4.886554, abs=1e-6)


@pytest.mark.parametrize("name", E.builtin_names())
def test_no_builtin_method_gets_a_weaker_guarantee_than_its_level(name: str) -> None:
    spec = load_experiment(name)
    for level in spec.levels:
        # Every slot's (eps, delta_ref) equivalent is the level's; experiments.md's own (mu, 1e-6)-GDP for
        # cr-ss at the same mu (delta not below the reporting delta) is the one exception.
        eps = [
            levels.epsilon_at(budget, spec.delta)
            for budget in level.slots.values()
            if not (isinstance(budget, pf.GDP) and budget.delta >= spec.delta)
        ]
        assert eps, f"{name} {level.label}: no comparable slot"
        assert max(eps) == pytest.approx(min(eps), rel=1e-9), f"{name} {level.label}"


# -- configs: errors name their path -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "path"),
    [
        ({"grid/n": []}, r"experiment\.grid\.n: "),
        ({"grid/n": [200, 2]}, r"experiment\.grid\.n\[1\]: "),
        ({"grid/n": [200, 200]}, r"experiment\.grid\.n: "),
        ({"grid/n": _DELETE}, r"experiment\.grid\.n: missing"),
        ({"grid/extra": 1}, r"experiment\.grid\.extra: unknown key"),
        ({"trials": 0}, r"experiment\.trials: "),
        ({"trials": _DELETE}, r"experiment\.trials: missing"),
        ({"seed": -1}, r"experiment\.seed: "),
        ({"delta": 2.0}, r"experiment\.delta: "),
        ({"confidence": 1.5}, r"experiment\.confidence: "),
        ({"colour": "red"}, r"experiment\.colour: unknown key"),
        ({"data/generator": "poisson"}, r"experiment\.data\.generator: "),
        ({"data/scale": 2.0}, r"experiment\.data\.scale: unknown option for generator 'uniform'"),
        ({"data/low": 1.0}, r"experiment\.data\.low: "),
        ({"grid/budgets": [{"gdp": {"unit": "gdp", "mu": 1.0}}]}, r"experiment\.grid\.budgets\[0\]\.label: "),
        (
            {"grid/budgets": [{"label": "a", "gdp": {"unit": "gdp", "mu": -1.0}}]},
            r"experiment\.grid\.budgets\[0\]\.gdp\.mu: ",
        ),
        (
            {
                "grid/budgets": [
                    {"label": "a", "gdp": {"unit": "gdp", "mu": 1.0}, "p": {"match": "x", "unit": "pure-dp"}}
                ]
            },
            r"experiment\.grid\.budgets\[0\]\.p\.match: ",
        ),
        (
            {"grid/budgets": [{"label": "a", "gdp": {"unit": "gdp"}}]},
            r"experiment\.grid\.budgets\[0\]\.gdp\.mu: missing",
        ),
        ({"methods": {}}, r"experiment\.methods: "),
        ({"methods/sub/reference": "nope"}, r"experiment\.methods\.sub\.reference: no method labelled 'nope'"),
        ({"methods/sub/colour": 1}, r"experiment\.methods\.sub\.colour: unknown key"),
        ({"defaults/statistic": _DELETE}, r"experiment\.methods\.cr-gs-wor\.statistic: missing"),
        ({"report": {"size": 3}}, r"experiment\.report\.size: unknown key"),
        ({"oracle_width": {"coefficient": 1.0}}, r"experiment\.oracle_width\.power: missing"),
    ],
)
def test_bad_configs_raise_config_error_with_the_path(changes: dict[str, Any], path: str) -> None:
    with pytest.raises(pf.ConfigError, match="^" + path):
        parse_experiment(_config(**changes)).validate()


@pytest.mark.parametrize(
    ("changes", "path"),
    [
        ({"methods/cr-gs-wor/method": "cr-gz"}, r"experiment\.methods\.cr-gs-wor\.method: unknown method 'cr-gz'"),
        ({"methods/sub/sampler": {"name": "wor", "M": 3}}, r"experiment\.methods\.sub\.sampler\.M: unknown option"),
        ({"methods/cr-gs-wor/budget": "pure"}, r"experiment\.methods\.cr-gs-wor\.budget: budget level 'mu=1' has no"),
        ({"methods/cr-gs-wor/budget": _DELETE}, r"experiment\.methods\.cr-gs-wor\.budget: "),
        ({"methods/sub/budget": "gdp"}, r"experiment\.methods\.sub\.budget: "),
        ({"defaults/bounds": _DELETE}, r"experiment\.methods\.cr-gs-wor\.bounds: "),
        ({"methods/sub/statistic": {"name": "ks", "reference": {"scipy": "nope"}}}, r"experiment\.methods\.sub\."),
    ],
)
def test_unregistered_names_and_bad_pipelines_fail_before_any_trial(changes: dict[str, Any], path: str) -> None:
    ran: list[object] = []
    with pytest.raises(pf.ConfigError, match="^" + path):
        E.run(_config(**changes), on_cell=ran.append)
    assert ran == []


def test_overrides_are_checked() -> None:
    with pytest.raises(pf.ConfigError, match=r"^methods: 'nope' matches no method"):
        E.run("seed1-mean", methods=["nope"])
    with pytest.raises(pf.ConfigError, match=r"^budget: unknown budget level 'mu=2'"):
        E.run("seed1-mean", methods=["cr-gs-wor"], budgets=["mu=2"])
    with pytest.raises(pf.ConfigError, match=r"^trials: "):
        E.run("seed1-mean", methods=["cr-gs-wor"], trials=0)
    with pytest.raises(pf.ConfigError, match=r"^resume: "):
        E.run("seed1-mean", methods=["cr-gs-wor"], resume=True)
    with pytest.raises(pf.ConfigError, match=r"^scheduler: "):
        E.run("seed1-mean", methods=["cr-gs-wor"], scheduler="tcp://127.0.0.1:1")
    with pytest.raises(pf.ConfigError, match=r"^executor: "):
        E.run("seed1-mean", methods=["cr-gs-wor"], executor="threads")


def test_config_files_toml_and_json(tmp_path: Path) -> None:
    good = tmp_path / "toy.json"
    good.write_text(json.dumps(_config()), encoding="utf-8")
    assert load_experiment(good).name == "toy"
    bad = tmp_path / "bad.toml"
    bad.write_text("[experiment\nname = 1", encoding="utf-8")
    with pytest.raises(pf.ConfigError, match=r"^experiment: bad\.toml is not valid TOML"):
        load_experiment(bad)
    with pytest.raises(pf.ConfigError, match=r"^experiment: 'seed9' is neither a built-in"):
        load_experiment("seed9")


# -- a controllable method: known coverage and failure rates ------------------------------------------


@attrs.frozen
class CoinMethod:
    """Covers the truth 0 with probability ``p_cover``; fails with SamplerRejected / PTRFailed at given rates."""

    name: ClassVar[str] = "coin-test"
    # its intervals are fixed numbers in the data's own coordinates, not computed from the data: no shift
    needs: ClassVar[pp.MethodNeeds] = pp.MethodNeeds(sampler=None, mechanism=None, private=False, shift=False)
    p_cover: float = 0.9
    p_reject: float = 0.0
    p_ptr: float = 0.0

    def defaults(self, budget: pf.Budget | None, confidence: float) -> Mapping[str, object]:
        return {}

    def run(self, ctx: pp.RunContext) -> pf.IntervalResult:
        u, v = ctx.generators(1)[0].uniform(size=2)
        if u < self.p_reject:
            raise pf.SamplerRejected("rejected", path="sampler")
        if u < self.p_reject + self.p_ptr:
            raise pf.PTRFailed("failed", path="ptr")
        # Both intervals lie inside the bounds [-0.5, 0.5] (methods' intervals are clipped to the mean's range):
        # (-0.25, 0.25) covers the truth 0, the open (0, 0.5) does not; each has width 0.5.
        center = 0.0 if v < self.p_cover else 0.25
        return ctx.interval(center - 0.25, center + 0.25, center)


class CoinPlugin:
    @pp.hookimpl
    def privframe_register_methods(self, registry: pp.MethodRegistry) -> None:
        registry.add(CoinMethod)


@pytest.fixture
def coin() -> Iterator[str]:
    name = pf.registry.register(CoinPlugin(), name="test-coin")
    try:
        yield name
    finally:
        pf.registry.unregister(name)


def _coin_config(trials: int, **method: Any) -> dict[str, Any]:
    config = _config(trials=trials, **{"grid/budgets": [], "grid/n": [20]})
    config["experiment"]["methods"] = {"coin": {"method": {"name": "coin-test", **method}}}
    return config


def test_coverage_and_its_se_estimate_a_known_coverage(coin: str) -> None:
    res = E.run(_coin_config(400, p_cover=0.9))
    (row,) = res.rows
    # Coverage of 400 Bernoulli(0.9) trials: SE sqrt(0.9 * 0.1 / 400) = 0.015; allow 3 SE.
    assert abs(row.coverage - 0.9) <= 3 * 0.015
    assert row.coverage_se == pytest.approx(math.sqrt(row.coverage * (1 - row.coverage) / 400))
    assert row.mean_width == 0.5
    assert row.failure_rate == 0.0
    assert row.guarantee == "non-private"
    assert row.epsilon is None


def test_failures_are_counted_not_raised(coin: str) -> None:
    res = E.run(_coin_config(400, p_cover=1.0, p_reject=0.1, p_ptr=0.1))
    (row,) = res.rows
    outcome = res.outcomes[Cell("coin", E.NON_PRIVATE, 20).key]
    kinds = {r.failure for r in outcome.records}
    assert kinds == {None, "SamplerRejected", "PTRFailed"}
    # Failure rate 0.2 over 400 trials: SE sqrt(0.2 * 0.8 / 400) = 0.02; allow 3 SE.
    assert abs(row.failure_rate - 0.2) <= 3 * 0.02
    assert row.coverage == 1.0  # among the trials that released a set
    assert row.trials == 400


def test_other_errors_stop_the_run_and_name_the_cell() -> None:
    config = _config(**{"grid/n": [5]})  # an m that is valid as a rule but not for this n
    config["experiment"]["methods"]["sub"]["sampler"] = {"name": "wor", "m": 10}
    with pytest.raises(pf.ConfigError, match=r"sampler\.m: must be smaller than n") as info:
        E.run(config)
    assert any("cell sub|non-private|n=5" in note for note in getattr(info.value, "__notes__", []))


# -- metrics, guarantees, relative width -------------------------------------------------------------


def _task(method: str = "a", budget: str = "mu=1", n: int = 10) -> CellTask:
    return CellTask(
        "toy",
        Cell(method, budget, n),
        0,
        3,
        {"generator": "uniform"},
        {"method": "x", "statistic": "mean"},
        0.0,
        1e-6,
        False,
    )


def test_relative_width_pairs_trials_on_the_same_data() -> None:
    rec = trial.TrialRecord
    outcome = trial.CellOutcome(
        Cell("a", "mu=1", 10),
        (rec(0, None, True, 2.0, 1.0), rec(1, None, False, 6.0, 3.0), rec(2, "PTRFailed", None, None, 0.0)),
        trial.guarantee_of(pf.GDP(1.0), 1e-6),
        {},
        0.1,
    )
    reference = trial.CellOutcome(
        Cell("ref", E.NON_PRIVATE, 10),
        (rec(0, None, True, 1.0, 1.0), rec(1, None, True, 1.5, 1.0), rec(2, None, True, 9.0, 1.0)),
        trial.guarantee_of(None, 1e-6),
        {},
        0.1,
    )
    row = metrics.summarise(_task(), outcome, reference, oracle=4.0)
    assert row.coverage == 0.5
    assert row.coverage_se == pytest.approx(math.sqrt(0.25 / 2))
    assert row.mean_width == 4.0
    assert row.rel_width == pytest.approx((2.0 / 1.0 + 6.0 / 1.5) / 2)  # trial 2 failed: left out
    assert row.oracle_ratio == 1.0
    assert row.failure_rate == pytest.approx(1 / 3)
    assert row.median_ms == 2.0
    assert row.reference == "ref"
    assert row.guarantee == "1-GDP"
    assert row.epsilon == pytest.approx(pf.GDP(1.0).to_approx_dp(1e-6).epsilon)
    assert "median_ms" not in row.comparable()


def test_guarantee_at_the_reporting_delta() -> None:
    assert trial.guarantee_of(pf.GDP(1.0), 1e-6) == trial.Guarantee("1-GDP", pytest.approx(4.886554, abs=1e-6), 1e-6)
    g = trial.guarantee_of(pf.GDP(8.0, delta=1e-6), 1e-6)
    assert g.delta == 2e-6
    assert g.epsilon == pytest.approx(pf.GDP(8.0).to_approx_dp(1e-6).epsilon, rel=1e-9)
    assert trial.guarantee_of(pf.PureDP(5.0), 1e-6) == trial.Guarantee("5-DP", 5.0, 0.0)
    assert trial.guarantee_of(pf.ApproxDP(1.0, 1e-6), 1e-6) == trial.Guarantee("(1, 1e-06)-DP", 1.0, 1e-6)
    assert trial.guarantee_of(None, 1e-6) == trial.Guarantee("non-private", None, None)


def test_seeds_depend_only_on_what_they_are_for() -> None:
    a = data_seed(1, "seed1-mean", 2000, 3).generate_state(4)
    assert np.array_equal(a, data_seed(1, "seed1-mean", 2000, 3).generate_state(4))
    others = [data_seed(2, "seed1-mean", 2000, 3), data_seed(1, "x", 2000, 3), data_seed(1, "seed1-mean", 2000, 4)]
    assert all(not np.array_equal(a, s.generate_state(4)) for s in others)
    assert not np.array_equal(a, method_seed(1, "seed1-mean", "c", 3).generate_state(4))


def test_a_method_and_its_reference_see_the_same_data() -> None:
    tasks = expand(load_experiment("seed1-mean").with_overrides(**SLICE))
    by_key = {t.cell.key: t for t in tasks}
    assert len(tasks) == 12
    private, reference = by_key["cr-gs-wor|mu=8|n=300"], by_key["subsampling-wor|non-private|n=300"]
    gen = make_generator("bernoulli", {"p": 0.05}, "d")
    draws = [
        gen.sample(t.cell.n, np.random.default_rng(data_seed(t.seed, t.experiment, t.cell.n, 0)))
        for t in (private, reference)
    ]
    assert np.array_equal(*draws)
    assert private.pipeline["budget"] == {"unit": "gdp", "mu": 8.0}
    assert "budget" not in reference.pipeline


# -- executors: the same table everywhere -------------------------------------------------------------


@pytest.fixture(scope="module")
def serial_slice() -> E.ExperimentResult:
    return E.run("seed1-mean", **SLICE)


def test_processes_give_the_serial_table(serial_slice: E.ExperimentResult) -> None:
    for workers in (1, 2):
        other = E.run("seed1-mean", executor="processes", workers=workers, **SLICE)
        assert other.comparable_rows() == serial_slice.comparable_rows()
        assert other.meta["executor"] == "processes"


def test_dask_gives_the_serial_table(serial_slice: E.ExperimentResult) -> None:
    distributed = pytest.importorskip("dask.distributed")
    # A local cluster started for the run (threaded workers: quick to start) ...
    other = E.run("seed1-mean", executor=E.DaskExecutor(workers=2, processes=False), **SLICE)
    assert other.comparable_rows() == serial_slice.comparable_rows()
    assert other.meta["executor"] == "dask"
    # ... and an existing scheduler given by its address (--scheduler), here with one worker.
    with distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=None) as cluster:
        remote = E.run("seed1-mean", executor="dask", scheduler=cluster.scheduler_address, **SLICE)
    assert remote.comparable_rows() == serial_slice.comparable_rows()


@pytest.mark.slow
def test_identical_tables_with_process_workers_on_every_executor() -> None:
    """A whole built-in experiment (every level and method, smoke-sized) on serial, 2 processes, and a
    local Dask cluster of 2 spawned worker processes (the default of ``--executor dask``)."""
    pytest.importorskip("dask.distributed")
    kwargs: dict[str, Any] = {"trials": 3, "n": [300, 600]}
    serial = E.run("seed1-ustat", **kwargs)
    processes = E.run("seed1-ustat", executor="processes", workers=2, **kwargs)
    dask = E.run("seed1-ustat", executor="dask", workers=2, **kwargs)
    # Every private method at every budget level and every non-private reference once, at each n.
    spec = serial.spec
    per_n = sum(len(spec.levels) if m.budget is not None else 1 for m in spec.methods)
    assert per_n == 6 * 2 + 2
    assert len(serial.rows) == per_n * len(kwargs["n"])
    assert processes.comparable_rows() == serial.comparable_rows()
    assert dask.comparable_rows() == serial.comparable_rows()


def test_the_seed_matters_and_subsets_reproduce_the_full_run(serial_slice: E.ExperimentResult) -> None:
    assert E.run("seed1-mean", **{**SLICE, "seed": 2}).comparable_rows() != serial_slice.comparable_rows()
    # Fewer trials are the first trials of the bigger run; one method alone gives its rows unchanged.
    small = E.run("seed1-mean", trials=2, n=[300], methods=["cr-gs-wr"], budgets=["mu=1"])
    key = "cr-gs-wr|mu=1|n=300"

    def values(records: tuple[trial.TrialRecord, ...]) -> list[tuple[object, ...]]:
        return [(r.trial, r.failure, r.covered, r.width) for r in records]

    assert values(small.outcomes[key].records) == values(serial_slice.outcomes[key].records[:2])


# -- interrupt and resume -----------------------------------------------------------------------------


class _Stop:
    """An ``on_cell`` hook that raises KeyboardInterrupt (as Ctrl-C would) after ``after`` cells."""

    def __init__(self, after: int) -> None:
        self.after = after
        self.seen = 0

    def __call__(self, outcome: object) -> None:
        self.seen += 1
        if self.seen >= self.after:
            raise KeyboardInterrupt


@pytest.mark.parametrize("executor", ["serial", "processes"])
def test_interrupt_leaves_finished_cells_and_resume_skips_them(
    executor: str, tmp_path: Path, serial_slice: E.ExperimentResult
) -> None:
    kwargs = {**SLICE, "out": tmp_path, "executor": executor}
    with pytest.raises(KeyboardInterrupt):
        E.run("seed1-mean", on_cell=_Stop(3), **kwargs)
    cells = sorted((tmp_path / "seed1-mean" / "cells").glob("*.json"))
    assert len(cells) == 3
    assert not (tmp_path / "seed1-mean" / "results.json").exists()
    ran: list[object] = []
    resumed = E.run("seed1-mean", resume=True, on_cell=ran.append, **kwargs)
    assert len(ran) == 12 - 3
    assert resumed.meta["resumed_cells"] == 3
    assert resumed.comparable_rows() == serial_slice.comparable_rows()
    # Other settings (here: the trials) do not match the saved fingerprints: every cell reruns.
    ran.clear()
    assert E.run("seed1-mean", resume=True, on_cell=ran.append, **{**kwargs, "trials": 1}).meta["resumed_cells"] == 0
    assert len(ran) == 12


def test_ctrl_c_on_the_command_line_keeps_finished_cells(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "privframe.cli", "experiment", "seed1-mean", "--methods", "cr-gs-wor"]
    command += ["--trials", "25", "--n", "300,400,500,600,700,800,900,1000", "--budget", "mu=1", "--out", str(tmp_path)]
    cells = tmp_path / "seed1-mean" / "cells"
    # A terminal's Ctrl-C reaches a process that started with SIGINT at its default. A test run launched in
    # the background by a non-interactive shell inherits SIGINT ignored (bash does that to asynchronous
    # commands), Python then keeps it ignored, and the run finished with status 0: restore the default.
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 60
        while not (cells.is_dir() and any(cells.glob("*.json"))):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        signalled = len(list(cells.glob("*.json")))
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, (signalled, signal.getsignal(signal.SIGINT), out[-2000:], err[-2000:])
    assert "--resume" in err
    assert "Traceback" not in err
    saved = len(list(cells.glob("*.json")))
    assert 1 <= saved < 16
    assert main([*command[3:], "--resume"]) == 0
    meta = json.loads((tmp_path / "seed1-mean" / "results.json").read_text(encoding="utf-8"))
    assert meta["resumed_cells"] == saved
    assert meta["cells"] == 16


# -- outputs, progress, report, CLI ------------------------------------------------------------------


def test_outputs_csv_json_table_and_plot(tmp_path: Path) -> None:
    res = E.run("seed1-mean", trials=2, n=[300, 400], methods=["cr-gs-wor"], out=tmp_path)
    directory = tmp_path / "seed1-mean"
    meta = json.loads((directory / "results.json").read_text(encoding="utf-8"))
    assert meta["rows"] == [row.to_dict() for row in res.rows]
    assert meta["command"] == (
        "privframe experiment seed1-mean --trials 2 --n 300,400 --seed 1 --methods cr-gs-wor,subsampling-wor"
    )
    assert meta["seed"] == 1
    csv = (directory / "results.csv").read_text(encoding="utf-8")
    assert csv == csv_text(res.rows)
    assert csv.splitlines()[0].startswith("experiment,budget,method,method_name,statistic,n,trials,truth,coverage")
    table = res.table()
    assert table.splitlines()[0].split()[:4] == ["budget", "method", "n", "trials"]
    assert "(4.887, 1e-06)" in table
    assert markdown_table(res.rows).startswith("| budget | method | n |")
    if matplotlib_available():
        png = directory / "seed1-mean.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_progress_bar_only_on_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    E.run("seed1-mean", trials=1, n=[300], methods=["cr-gs-wor"], budgets=["mu=1"])
    assert capsys.readouterr().err == ""  # pytest's stderr is not a terminal

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    piped, terminal = io.StringIO(), Terminal()
    for stream in (piped, terminal):
        bar = E.Progress(4, "toy", stream=stream)
        bar.start(1)
        bar.advance()
        bar.close()
    assert piped.getvalue() == ""
    text = terminal.getvalue()
    assert text.startswith("\rtoy:")  # tqdm's line: label, percentage, bar, count, elapsed<left, rate
    assert " 1/4 [" in text  # started at the one resumed cell
    assert " 2/4 [" in text
    assert "cells/s" in text
    assert "<" in text  # elapsed < estimate of the time left
    assert text.endswith("\n")
    silent = Terminal()
    bar = E.Progress(4, "toy", stream=silent, enabled=False)
    bar.start()
    bar.advance()
    bar.close()
    assert silent.getvalue() == ""  # off: nothing, even on a terminal


def test_report_lists_commands_seeds_sizes_and_figures(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    E.run("seed1-mean", trials=2, n=[300], methods=["cr-gs-wor"], out=root)
    E.run("scale-mean", trials=1, n=[2000], out=root)
    report = E.write_report(root, tmp_path / "docs" / "results.md", command="privframe experiment all --report x")
    text = report.read_text(encoding="utf-8")
    assert text.startswith("# Reproduction report")
    assert "Generated by `privframe experiment all --report x`" in text
    assert text.index("## seed1-mean") < text.index("## scale-mean")
    assert "- command: `privframe experiment seed1-mean --trials 2 --n 300 --seed 1" in text
    assert (
        "**run smaller than experiments.md**: 2 trials per cell instead of 400; without n = 2000, 10000, 50000" in text
    )
    assert "peak MiB" in text
    assert "Not run yet: seed1-median" in text
    if matplotlib_available():
        assert "![seed1-mean: coverage and width against n](results/seed1-mean.png)" in text
        assert (tmp_path / "docs" / "results" / "seed1-mean.png").is_file()


def test_report_ends_with_the_benchmark_ratios_when_present(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    E.run("scale-mean", trials=1, n=[2000], out=root)
    path = tmp_path / "docs" / "results.md"
    assert "## Performance" not in E.write_report(root, path, command="x").read_text(encoding="utf-8")
    (tmp_path / "docs" / "results").mkdir(parents=True, exist_ok=True)
    (tmp_path / "docs" / "results" / "performance.txt").write_text("- cr-gs wor / numpy floor: 1.40x\n")
    text = E.write_report(root, path, command="x").read_text(encoding="utf-8")
    assert text.rstrip().endswith("## Performance\n\n- cr-gs wor / numpy floor: 1.40x")


def test_cli_experiment(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["experiment", "seed1-mean", "--trials", "2", "--n", "300", "--methods", "cr-gs-wor", "--out", str(tmp_path)]
    assert main([*argv, "--budget", "mu=1"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("seed1-mean: Bernoulli(0.05) mean\nbudget")
    assert "reproduce with: privframe experiment seed1-mean --trials 2 --n 300 --seed 1" in out
    # without the plot extra (as in CI) the one line on stderr says why no PNG was written
    no_plot = "privframe: no seed1-mean.png written: plots need the plot extra (pip install 'privframe[plot]', "
    assert err == ("" if matplotlib_available() else no_plot + "which installs matplotlib)\n")
    assert main([*argv, "--json", "--report", str(tmp_path / "r.md")]) == 0
    out, err = capsys.readouterr()
    (payload,) = json.loads(out)
    assert [row["budget"] for row in payload["rows"]] == ["mu=8", "mu=1", "non-private"]
    assert (tmp_path / "r.md").is_file()
    assert main(["experiment", "seed9"]) == 2
    assert "privframe: error: experiment: 'seed9' is neither a built-in" in capsys.readouterr().err
    assert main([*argv, "--n", "3x"]) == 2
    assert "error: --n: expected comma-separated integers" in capsys.readouterr().err
    assert main([*argv, "--scheduler", "tcp://127.0.0.1:1"]) == 2
    assert "error: --scheduler: " in capsys.readouterr().err
    assert main(["experiment", "all", "--methods", "cr-gs-wor"]) == 2


# -- every built-in experiment, smoke-sized ----------------------------------------------------------


def _missing_parts(spec: E.ExperimentSpec) -> list[str]:
    missing = []
    for method in spec.methods:
        if method.method_name not in pf.registry.names("method"):
            missing.append(f"method {method.method_name}")
        if method.statistic_name not in pf.registry.names("statistic"):
            missing.append(f"statistic {method.statistic_name}")
    return sorted(set(missing))


@pytest.mark.parametrize("name", E.builtin_names())
def test_smoke_run_of_every_builtin_experiment(name: str, tmp_path: Path) -> None:
    spec = load_experiment(name)
    assert not _missing_parts(spec), f"{name} names parts that are not registered"
    spec.validate()  # every pipeline at every budget level resolves; one level is run
    budgets = [spec.levels[0].label] if spec.levels else None
    res = E.run(name, trials=1, n=SMOKE_N.get(name, [200]), budgets=budgets, out=tmp_path)
    # One cell per method, level, variant (one without variants) and n; a refusal removes its n or every n.
    planned = sum(len(res.spec.cells_levels(m)) * len(res.spec.variants_of(m)) for m in res.spec.methods)
    refused = sum(len(res.spec.n) if r.n is None else 1 for r in res.refused)
    expected = planned * len(res.spec.n) - refused
    assert len(res.rows) == expected
    assert not res.refused or spec.record_refused
    widths = {(r.method, r.n, r.variant): r.mean_width for r in res.rows if r.budget == E.NON_PRIVATE}
    for row in res.rows:
        assert row.trials == 1
        assert row.coverage is None or 0 <= row.coverage <= 1
        assert 0 <= row.failure_rate <= 1
        private = spec.method(row.method).budget is not None
        assert (row.budget == E.NON_PRIVATE) != private
        if private and row.coverage is not None:
            assert row.epsilon is not None
            assert row.epsilon > 0
        reference = spec.method(row.method).reference
        if reference is not None and row.failure_rate == 0:
            # Left out only where the reference's interval has width 0 (a median of tied data, say).
            ref_row = widths.get((reference, row.n, row.variant))
            assert row.rel_width is not None or ref_row == 0.0, row
    assert (tmp_path / name / "results.json").is_file()


def test_a_design_refused_at_one_n_is_recorded_for_that_n_only(tmp_path: Path) -> None:
    """blbquant at pure eps = 5: 270 records per block at n = 10 000 (runs), 64 at n = 2000 (refused)."""
    budgets = [{"label": "eps=5", "pure": {"unit": "pure-dp", "epsilon": 5.0}}]
    blb = {"method": "blbquant", "budget": "pure", "reference": "sub"}
    config = _config(**{"grid/budgets": budgets, "grid/n": [2000, 10_000], "methods/blb": blb, "trials": 1})
    del config["experiment"]["methods"]["cr-gs-wor"]
    with pytest.raises(pf.ConfigError, match=r"^min_block: "):
        E.run(config)
    config["experiment"]["record_refused"] = True
    res = E.run(config, out=tmp_path)
    assert [(r.method, r.budget, r.n) for r in res.refused] == [("blb", "eps=5", 2000)]
    assert sorted((row.method, row.n) for row in res.rows if row.budget == "eps=5") == [("blb", 10_000)]
    assert res.table().splitlines()[-1].startswith("refused: blb at eps=5, n = 2000 (blbquant's 31 blocks")
    saved = json.loads((tmp_path / "toy" / "results.json").read_text(encoding="utf-8"))
    assert saved["refused"][0]["n"] == 2000


def test_refusals_are_recorded_only_when_asked_and_typos_still_fail(tmp_path: Path) -> None:
    budgets = [
        {"label": "mu=1", "gdp": {"unit": "gdp", "mu": 1.0}},
        {"label": "pure", "gdp": {"unit": "pure-dp", "epsilon": 1.0}},
    ]
    dette = {"method": {"name": "dette-graw", "calibration": "clt"}, "sampler": "wr", "budget": "gdp"}
    config = _config(**{"grid/budgets": budgets, "methods/dg": dette})
    # dette-graw's (paper) 'clt' calibration refuses a pure budget when its pipeline is built: an error by
    # default ...
    with pytest.raises(pf.ConfigError, match=r"^calibration: 'clt' calibrates Gaussian releases"):
        E.run(config)
    # ... and a recorded refusal with record_refused: that cell is not run, the others are.
    config["experiment"]["record_refused"] = True
    res = E.run(config, out=tmp_path)
    assert [(r.method, r.budget) for r in res.refused] == [("dg", "pure")]
    assert "calibration='composition'" in res.refused[0].reason
    assert sorted((row.method, row.budget) for row in res.rows) == sorted(
        [("cr-gs-wor", "mu=1"), ("cr-gs-wor", "pure"), ("dg", "mu=1"), ("sub", E.NON_PRIVATE)]
    )
    assert res.table().splitlines()[-1].startswith("refused: dg at pure (")
    saved = json.loads((tmp_path / "toy" / "results.json").read_text(encoding="utf-8"))
    assert saved["refused"] == [r.to_dict() for r in res.refused]
    assert saved["cells"] == 4
    # A typo is not a refusal.
    for change, path in [
        (
            {"methods/cr-gs-wor/sampler": {"name": "wor", "M": 3}},
            r"experiment\.methods\.cr-gs-wor\.sampler\.M: unknown",
        ),
        (
            {"methods/cr-gs-wor/method": {"name": "cr-gs", "fcp": True}},
            r"experiment\.methods\.cr-gs-wor\.method\.fcp: ",
        ),
        ({"methods/cr-gs-wor/sampler": "wro"}, r"experiment\.methods\.cr-gs-wor\.sampler: unknown sampler 'wro'"),
    ]:
        bad = _config(**{"grid/budgets": budgets, "record_refused": True, **change})
        with pytest.raises(pf.ConfigError, match="^" + path):
            E.run(bad)
    with pytest.raises(pf.ConfigError, match=r"^experiment\.record_refused: "):
        parse_experiment(_config(record_refused="yes"))


def test_the_method_map_experiment_is_built_in_but_not_in_the_report() -> None:
    assert "method-map" in E.builtin_names()
    assert "method-map" not in E.report_names()
    assert set(E.report_names()) == set(E.builtin_names()) - {"method-map", "method-map-quick"}
    with pytest.raises(pf.ConfigError, match=r"^experiment\.report\.include: "):
        parse_experiment(_config(report={"include": "no"}))


def test_builtin_configs_are_package_data() -> None:
    root = Path(E.__file__).parent / "configs"
    assert sorted(p.stem for p in root.glob("*.toml")) == sorted(E.builtin_names())
    for name in E.builtin_names():
        assert load_experiment(name).name == name
