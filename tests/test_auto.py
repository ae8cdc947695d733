"""method="auto": the method map, the public-only choice, its diagnostics, and the map against a fresh run.

The statistical check (``test_the_shipped_map_agrees_with_a_fresh_run``) compares a few cells of the
shipped map with a fresh run on other seeds; its tolerances are 3 Monte Carlo standard errors of the
difference, derived next to the assertions.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import privframe as pf
from privframe.cli import main
from privframe.experiments.methodmap import build_method_map, method_map_table, page_table
from privframe.pipeline.methodmap import CANDIDATE_RULE, CANDIDATE_RULE_SHORT, MAP_FORMAT, MethodMap, budget_scale
from privframe.privacy import accounting

E = pf.experiments
ROOT = Path(__file__).resolve().parents[1]
BOUNDS = (0.0, 20.0)


# -- a hand-made map whose answers are known ----------------------------------------------------------


def _entry(method: str, coverage: float | None, rel: float | None, refused: str | None = None) -> dict[str, Any]:
    """A measured (or refused) entry of 100 trials; a candidate by the map's rule."""
    se = None if coverage is None else math.sqrt(coverage * (1 - coverage) / 100)
    return {
        "label": f"mean/{method}",
        "method": {"name": method},
        "trials": 0 if refused else 100,
        "coverage": coverage,
        "coverage_se": se,
        "mean_width": None if rel is None else rel / 10,
        "rel_width": rel,
        "candidate": coverage is not None and coverage >= 0.9 - math.sqrt(0.09 / 100),
        "refused": refused,
    }


def _cell(n: int, label: str, budget: dict[str, Any], entries: list[dict[str, Any]]) -> dict[str, Any]:
    unit, mu = budget_scale(pf.budget_from_table(budget))
    table = {"statistic": "mean", "n": n, "budget": label, "budget_table": budget, "unit": unit, "mu": mu}
    return {**table, "nominal": 0.9, "entries": entries}


def _toy_map() -> MethodMap:
    """Cells at n = 500, 2000 and mu = 1, 2 (GDP) and eps = 1 ((1, 1e-6)-DP); each with a known winner."""
    gdp1, gdp2 = {"unit": "gdp", "mu": 1.0}, {"unit": "gdp", "mu": 2.0}
    eps1 = {"unit": "approx-dp", "epsilon": 1.0, "delta": 1e-6}
    cells = [
        _cell(500, "mu=1", gdp1, [_entry("privsub", 0.91, 3.0), _entry("cr-gs", 0.7, 1.1)]),
        _cell(2000, "mu=1", gdp1, [_entry("cr-gs", 0.9, 1.2), _entry("privsub", 0.9, 2.0)]),
        _cell(500, "mu=2", gdp2, [_entry("dette-graw", 0.9, 1.5), _entry("cr-gs", 0.9, 1.6)]),
        # cr-ss ranks first but refuses a GDP budget without delta: auto must pass it over and say so.
        _cell(2000, "mu=2", gdp2, [_entry("cr-ss", 0.9, 1.0), _entry("cr-gs", 0.9, 1.3)]),
        _cell(
            500,
            "eps=1",
            eps1,
            [_entry("blbquant", 0.92, 1.4), _entry("cr-gs", 0.95, 2.0), _entry("cr-ss", None, None, "toy refusal")],
        ),
        _cell(2000, "eps=1", eps1, [_entry("cr-gs", 0.5, 9.0), _entry("privsub", 0.6, 9.0)]),
    ]
    return _hand_made(cells, "toy")


def _hand_made(cells: list[dict[str, Any]], source: str) -> MethodMap:
    """A format-1 map of the mean from hand-made cells."""
    payload = {
        "format": "privframe-method-map/1",
        "command": "hand-made",
        "seed": 0,
        "trials": 100,
        "statistics": {"mean": {"name": "mean", "options": {}, "bounds": [0.0, 20.0]}},
        "cells": cells,
    }
    return MethodMap.from_dict(payload, source)


@pytest.fixture(scope="module")
def toy() -> MethodMap:
    return _toy_map()


def _choice(method_map: MethodMap, n: int, budget: pf.Budget, statistic: Any = "mean") -> pf.Pipeline:
    pipe = pf.Pipeline.build(statistic, method={"name": "auto", "map": method_map}, budget=budget, bounds=BOUNDS)
    return pipe.select(n)


@pytest.mark.parametrize(
    ("n", "budget", "cell", "chosen"),
    [
        (500, pf.GDP(1.0), (500, "mu=1"), "privsub"),  # cr-gs is narrower but under-covers there
        (700, pf.GDP(0.9), (500, "mu=1"), "privsub"),
        # ln(1500/500) = 1.10 > ln(2000/1500) = 0.29: the n = 2000 cell
        (1500, pf.GDP(1.0), (2000, "mu=1"), "cr-gs"),
        # mu = 1.5: ln 1.5 = 0.405 > ln(2/1.5) = 0.288: the mu = 2 cell
        (500, pf.GDP(1.5), (500, "mu=2"), "dette-graw"),
        # an (eps, delta) budget uses the (eps, delta) cells, whatever the GDP cells' mu; blbquant ranks
        # first there but would refuse blocks this small (min_block), so auto passes over it
        (600, pf.ApproxDP(1.0, 1e-6), (500, "eps=1"), "cr-gs"),
        (600, pf.ApproxDP(4.0, 1e-6), (500, "eps=1"), "cr-gs"),
        # a (mu, delta)-GDP budget is in the GDP unit
        (500, pf.GDP(1.0, delta=1e-7), (500, "mu=1"), "privsub"),
    ],
)
def test_auto_picks_the_first_valid_candidate_of_the_nearest_cell(
    toy: MethodMap, n: int, budget: pf.Budget, cell: tuple[int, str], chosen: str
) -> None:
    pipe = _choice(toy, n, budget)
    assert pipe.method.name == chosen
    why = pipe.chosen_by
    assert why is not None
    assert (why["cell"]["n"], why["cell"]["budget"]) == cell
    assert why["chosen"] == chosen
    assert why["query"]["n"] == n
    assert why["query"]["budget"] == str(budget)


def test_distance_is_measured_in_log_n_and_log_mu(toy: MethodMap) -> None:
    located = toy.locate("mean", {}, 1500, pf.GDP(1.5))
    assert located is not None
    # Candidates: (2000, mu=2) at hypot(ln(4/3), ln(4/3)) = 0.407 beats (2000, mu=1) at hypot(0.288, 0.405) = 0.497.
    assert (located.cell.n, located.cell.budget) == (2000, "mu=2")
    assert located.distance == pytest.approx(math.hypot(math.log(2000 / 1500), math.log(2 / 1.5)), rel=1e-12)
    assert located.unit == "gdp"
    assert not located.extrapolated
    far = toy.locate("mean", {}, 100_000, pf.GDP(1.0))
    assert far is not None
    assert far.extrapolated


def test_a_candidate_that_refuses_the_budget_is_passed_over_and_reported(toy: MethodMap) -> None:
    pipe = _choice(toy, 2000, pf.GDP(2.0))
    assert pipe.method.name == "cr-gs"
    why = pipe.chosen_by
    assert why is not None
    first, second = why["candidates"]
    assert first["method"] == "cr-ss"
    assert "refused this budget" in first["skipped"]
    assert "skipped" not in second
    # With a delta, cr-ss accepts the budget and is chosen.
    assert _choice(toy, 2000, pf.GDP(2.0, delta=1e-6)).method.name == "cr-ss"


def test_no_valid_candidate_is_a_config_error_naming_methods(toy: MethodMap) -> None:
    with pytest.raises(pf.ConfigError, match=r"^method: no method of the method map's nearest cell") as info:
        _choice(toy, 2000, pf.ApproxDP(1.0, 1e-6))
    message = str(info.value)
    assert "coverage 0.500" in message  # the measured reason for each method
    assert f"has {CANDIDATE_RULE_SHORT} and accepts" in message  # the rule the map applies, not a looser one
    assert "cr-gs" in message
    assert "name one of the methods that accept 'mean' at (1, 1e-06)-DP: " in message


def _spelling_map(pure_rel: float, pure_eps: float = 1.0) -> MethodMap:
    """An (eps, delta) cell whose only valid method is wide, and a pure cell at the same n (and eps, unless
    ``pure_eps`` differs) whose valid method has relative width ``pure_rel``."""
    eps1 = {"unit": "approx-dp", "epsilon": 1.0, "delta": 1e-6}
    pure = {"unit": "pure-dp", "epsilon": pure_eps}
    cells = [
        _cell(2000, "eps=1", eps1, [_entry("cr-gs", 0.7, 1.1), _entry("privsub", 0.93, 9.0)]),
        _cell(2000, f"pure-eps={pure_eps:g}", pure, [_entry("cr-gs", 0.9, pure_rel), _entry("privsub", 0.95, 9.5)]),
    ]
    return _hand_made(cells, "toy-spelling")


def test_an_eps_delta_budget_runs_the_pure_cells_choice_where_it_is_narrower() -> None:
    """PureDP(eps) implies ApproxDP(eps, delta): where the map measured both at the same n and eps and the pure
    cell's choice is narrower, auto runs it at PureDP(eps) and says so (a weaker guarantee never costs width)."""
    method_map = _spelling_map(1.2)
    pipe = _choice(method_map, 2000, pf.ApproxDP(1.0, 1e-6))
    assert pipe.method.name == "cr-gs"
    assert pipe.budget == pf.PureDP(1.0)
    why = pipe.chosen_by
    assert why is not None
    assert why["cell"]["budget"] == "pure-eps=1"
    assert "spelled as 1-DP, which implies it" in why["spelling"]
    assert "privsub (9)" in why["spelling"]
    assert why["spelling"] in why["notes"]
    # The same at another eps: the pure cell is at the user's eps only when the grid has it; it runs the user's eps.
    other = _choice(method_map, 2000, pf.ApproxDP(1.2, 1e-6))
    assert other.budget == pf.PureDP(1.2)
    # The release is charged and reported as what ran.
    x = np.exp(np.random.default_rng(3).normal(size=2000))
    res = pf.confidence_interval(x, "mean", method={"name": "auto", "map": method_map},
                                 budget=pf.ApproxDP(1.0, 1e-6), bounds=BOUNDS, rng=1)  # fmt: skip
    assert res.method == "cr-gs"
    assert res.privacy.total == pf.PureDP(1.0)


def test_the_eps_delta_cells_choice_stays_where_it_is_narrower_or_no_pure_cell_matches() -> None:
    narrower_here = _choice(_spelling_map(9.8), 2000, pf.ApproxDP(1.0, 1e-6))
    assert narrower_here.method.name == "privsub"
    assert narrower_here.budget == pf.ApproxDP(1.0, 1e-6)
    assert narrower_here.chosen_by is not None
    assert "spelling" not in narrower_here.chosen_by
    # A pure cell at another epsilon measured another point: its widths do not compare.
    elsewhere = _choice(_spelling_map(1.2, pure_eps=5.0), 2000, pf.ApproxDP(1.0, 1e-6))
    assert elsewhere.method.name == "privsub"
    # A pure budget is never respelled.
    assert _choice(_spelling_map(9.8), 2000, pf.PureDP(1.0)).method.name == "cr-gs"


def test_the_choice_is_deterministic(toy: MethodMap) -> None:
    first = _choice(toy, 1234, pf.GDP(1.3))
    again = _choice(toy, 1234, pf.GDP(1.3))
    assert first.method == again.method
    assert first.chosen_by == again.chosen_by


def test_diagnostics_list_candidates_exclusions_rule_and_map(toy: MethodMap) -> None:
    x = np.exp(np.random.default_rng(0).normal(size=500))
    res = pf.confidence_interval(x, "mean", method={"name": "auto", "map": toy}, budget=pf.ApproxDP(1.0, 1e-6),
                                 bounds=BOUNDS, rng=1)  # fmt: skip
    assert res.method == "cr-gs"
    why = res.diagnostics["auto"]
    assert why["chosen"] == "cr-gs"
    assert [c["method"] for c in why["candidates"]] == ["blbquant", "cr-gs"]
    assert why["candidates"][0]["skipped"].startswith("refused this budget: blbquant's")  # min_block, from n alone
    assert "skipped" not in why["candidates"][1]
    assert why["candidates"][0]["coverage"] == 0.92
    assert why["candidates"][0]["rel_width"] == 1.4
    assert [e["method"] for e in why["excluded"]] == ["cr-ss"]
    assert "toy refusal" in why["excluded"][0]["reason"]
    assert CANDIDATE_RULE in why["rule"]
    assert why["map"]["source"] == "toy"
    assert why["cell"]["unit"] == "approx-dp"
    assert why["cell"]["mu"] == pytest.approx(accounting.gdp_mu_for(1.0, 1e-6), rel=1e-12)
    with pytest.raises(TypeError):
        why["chosen"] = "cr-gs"


def test_budget_scale_closed_forms() -> None:
    assert budget_scale(pf.GDP(0.5)) == ("gdp", 0.5)
    assert budget_scale(pf.GDP(0.5, delta=1e-6)) == ("gdp", 0.5)
    unit, mu = budget_scale(pf.ApproxDP(1.0, 1e-5))
    assert unit == "approx-dp"
    assert mu == pytest.approx(0.268051, abs=1e-6)  # concepts.md: ApproxDP(1, 1e-5).to_gdp().mu
    unit, mu = budget_scale(pf.PureDP(1.0))
    assert unit == "pure-dp"
    assert mu == pytest.approx(1.232035, abs=1e-6)  # concepts.md: -2 Phi^-1(1 / (1 + e))
    assert budget_scale(pf.ApproxDP(1.0, 0.0)) == budget_scale(pf.PureDP(1.0))


# -- public inputs only -------------------------------------------------------------------------------


def test_auto_never_reads_the_data_to_choose() -> None:
    """Datasets of the same n - lognormal, all at a bound, constant - give the same choice and diagnostics."""
    n = 800
    datasets = [
        np.exp(np.random.default_rng(1).normal(size=n)),
        np.full(n, 20.0),
        np.zeros(n),
        np.random.default_rng(2).uniform(0, 20, size=n),
    ]
    for budget in (pf.GDP(1.0), pf.ApproxDP(5.0, 1e-6), pf.PureDP(1.0)):
        for statistic in ("mean", "median"):
            results = [
                pf.confidence_interval(x, statistic, method="auto", budget=budget, bounds=BOUNDS, rng=3)
                for x in datasets
            ]
            assert len({r.method for r in results}) == 1, (statistic, budget)
            assert all(r.diagnostics["auto"] == results[0].diagnostics["auto"] for r in results)
            # ... and the choice is a function of the public inputs alone, without any data:
            pipe = pf.Pipeline.build(statistic, method="auto", budget=budget, bounds=BOUNDS).select(n)
            assert pipe.method.name == results[0].method


def test_auto_validates_before_the_data_are_read() -> None:
    with pytest.raises(pf.BudgetError, match=r"^budget: method 'auto' chooses among private methods"):
        pf.Pipeline.build("mean", method="auto", budget=None, bounds=BOUNDS)
    with pytest.raises(pf.ConfigError, match=r"^sampler: method 'auto' runs the chosen method with its default"):
        pf.Pipeline.build("mean", method="auto", budget=pf.GDP(1.0), bounds=BOUNDS, sampler="wr")
    with pytest.raises(pf.ConfigError, match=r"^B: method 'auto' runs the chosen method with its own defaults"):
        pf.Pipeline.build("mean", method="auto", budget=pf.GDP(1.0), bounds=BOUNDS, B=100)
    with pytest.raises(pf.ConfigError, match=r"^method\.fast: method 'auto' takes one option, map"):
        pf.Pipeline.build("mean", method={"name": "auto", "fast": True}, budget=pf.GDP(1.0), bounds=BOUNDS)
    with pytest.raises(pf.ConfigError, match=r"^method\.map: cannot read"):
        pf.Pipeline.build("mean", method={"name": "auto", "map": "/no/map.json"}, budget=pf.GDP(1.0), bounds=BOUNDS)
    with pytest.raises(pf.ConfigError, match=r"^bounds: statistic 'mean' needs public bounds"):
        pf.Pipeline.build("mean", method="auto", budget=pf.GDP(1.0))
    with pytest.raises(pf.ConfigError, match=r"^n: must be a positive integer"):
        pf.Pipeline.build("mean", method="auto", budget=pf.GDP(1.0), bounds=BOUNDS).select(0)
    with pytest.raises(pf.ConfigError, match=r"^method: method 'auto' chooses its method when it runs"):
        pf.Pipeline.build("mean", method="auto", budget=pf.GDP(1.0), bounds=BOUNDS).resolve()


def test_a_statistic_without_measurements_is_a_config_error_naming_methods() -> None:
    from scipy import stats

    with pytest.raises(pf.ConfigError, match=r"^method: the method map has no measurements for statistic 'ks'") as info:
        pf.Pipeline.build({"name": "ks", "reference": stats.norm()}, method="auto", budget=pf.GDP(1.0))
    message = str(info.value)
    accepted = message.split("at 1-GDP: ")[1].split(", ")
    # Each named method really builds for ks at 1-GDP, and the non-private references are not named.
    for name in accepted:
        pf.Pipeline.build({"name": "ks", "reference": stats.norm()}, method=name, budget=pf.GDP(1.0))
    assert "privsub" in accepted
    assert "bootstrap" not in accepted


def test_a_mapped_statistic_with_another_kind_of_bounds_is_not_extrapolated() -> None:
    """The map measured scalar means; a mean of vectors (an L2Ball bound) names methods instead."""
    with pytest.raises(
        pf.ConfigError, match=r"^method: the method map has no measurements for statistic 'mean' with an"
    ):
        pf.Pipeline.build("mean", method="auto", budget=pf.GDP(1.0), bounds=pf.L2Ball(1.0))


def test_other_options_of_a_mapped_statistic_use_its_cells_and_say_so() -> None:
    pipe = pf.Pipeline.build({"name": "quantile", "q": 0.8}, method="auto", budget=pf.GDP(1.0), bounds=BOUNDS)
    with pytest.warns(pf.CoverageWarning, match=r"0\.8-quantile uses the method map's cells of 'quantile\(q=0\.75\)'"):
        chosen = pipe.select(2000)
    why = chosen.chosen_by
    assert why is not None
    assert why["cell"]["statistic"] == "quantile(q=0.75)"  # the nearest measured level (0.9 is farther)
    assert any("not quantile(q=0.8)" in note for note in why["notes"])
    assert chosen.statistic.options["q"] == 0.8  # the statistic asked for is the one that runs


def test_auto_in_a_pipeline_config_and_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pipe = pf.Pipeline.from_dict(
        {"pipeline": {"method": "auto", "statistic": "median", "bounds": [0, 20], "budget": {"unit": "gdp", "mu": 1.0}}}
    )
    assert pipe.is_auto
    with pytest.raises(pf.ConfigError, match=r"^pipeline\.sampler: method 'auto'"):
        pf.Pipeline.from_dict({"pipeline": {"method": "auto", "statistic": "median", "bounds": [0, 20],
                                            "sampler": "wor", "budget": {"unit": "gdp", "mu": 1.0}}})  # fmt: skip
    config = tmp_path / "auto.toml"
    config.write_text(
        '[pipeline]\nmethod = "auto"\nstatistic = "mean"\nbounds = [0.0, 1.0]\nbudget = { unit = "gdp", mu = 1.0 }\n',
        encoding="utf-8",
    )
    assert main(["run", str(config), "--demo", "--seed", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    expected = pf.Pipeline.from_config(config).select(20_000).method.name  # the demo data: 20 000 records
    assert out["method"] == expected
    assert out["diagnostics"]["auto"]["chosen"] == expected  # the privframe-result/1 document keeps it there
    assert out["diagnostics"]["auto"]["query"]["n"] == 20_000
    assert main(["run", str(config), "--demo", "--seed", "1"]) == 0
    printed = capsys.readouterr().out
    assert "chosen by method='auto'" in printed
    assert f"(the narrowest method with {CANDIDATE_RULE_SHORT} there)" in printed


def test_a_session_charges_an_auto_call_once_and_an_impossible_one_not_at_all(toy: MethodMap) -> None:
    x = np.exp(np.random.default_rng(5).normal(size=2000))
    session = pf.Session(pf.ApproxDP(20.0, 1e-5))
    res = session.confidence_interval(x, "mean", method="auto", budget=pf.ApproxDP(5.0, 1e-6), bounds=BOUNDS, rng=1)
    assert "auto" in res.diagnostics
    assert [call.outcome for call in session.calls] == ["released"]
    with pytest.raises(pf.ConfigError, match=r"no method of the method map's nearest cell"):
        session.confidence_interval(x, "mean", method={"name": "auto", "map": toy}, budget=pf.ApproxDP(1.0, 1e-6),
                                    bounds=BOUNDS)  # fmt: skip
    assert len(session.calls) == 1  # the refused auto call was checked before anything was charged


# -- the shipped map ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shipped() -> MethodMap:
    return MethodMap.shipped()


def test_the_shipped_map_records_how_it_was_made(shipped: MethodMap) -> None:
    info = shipped.info
    assert info["format"] == MAP_FORMAT
    assert info["experiment"] in ("method-map", "method-map-quick")
    assert info["command"].startswith(f"privframe experiment {info['experiment']} ")
    assert "--write-map" in info["command"]
    assert isinstance(info["seed"], int)
    assert info["trials"] >= 100
    assert set(shipped.statistic_names()) >= {"mean", "median", "quantile"}
    assert {cell.unit for cell in shipped.cells} == {"gdp", "approx-dp", "pure-dp"}
    # Every data shape of the issue is a variant of the mean and of the quantiles.
    shapes = {v["data"].get("shape") for v in shipped.data_variants().values()}
    assert shapes >= {"lognormal", "normal", "bimodal", "t3", "poisson", "bernoulli"}


def test_the_shipped_map_follows_its_rule(shipped: MethodMap) -> None:
    """The candidate flags recomputed here from the per-variant counts: a candidate when every variant of
    the cell was measured, not stopped early, and covered at least ``trials nominal - 2 sqrt(trials nominal
    (1 - nominal))`` of its trials."""
    for cell in shipped.cells:
        assert cell.variants
        nominal = cell.nominal
        for entry in cell.entries:
            by_variant = {m.variant: m for m in entry.measurements}
            valid = all(
                v in by_variant
                and by_variant[v].refused is None
                and by_variant[v].stopped is None
                and by_variant[v].trials > 0
                and by_variant[v].covered
                >= by_variant[v].trials * nominal - 2 * math.sqrt(by_variant[v].trials * nominal * (1 - nominal)) - 1e-9
                for v in cell.variants
            )
            assert entry.candidate == valid, (cell.statistic, cell.n, cell.budget, entry.label)
            for m in entry.measurements:
                if m.refused is None and m.trials:
                    assert m.coverage == m.covered / m.trials
        ranks = [e.rel_width if e.rel_width is not None else math.inf for e in cell.candidates()]
        assert ranks == sorted(ranks), (cell.statistic, cell.n, cell.budget)
        assert all(e.trials == 0 and not e.candidate for e in cell.entries if e.refused is not None)


STATISTIC_BOUNDS: dict[str, Any] = {
    "mean": BOUNDS,
    "median": BOUNDS,
    "quantile": BOUNDS,
    "u-statistic": (-1.0, 1.0),
    "logistic-slope": 1.0,
}


def test_auto_runs_the_shipped_maps_first_accepting_candidate_or_refuses_naming_why(shipped: MethodMap) -> None:
    """At every cell of the shipped map (every statistic, the U-statistic and the logistic slope included, at
    its own n and budget): auto runs the best-ranked exact candidate that accepts the budget, or, where there
    is none, refuses before any data are read, naming every measured method with the reason it is not valid
    there and the methods that accept the budget. At an (eps, delta) cell whose pure-eps twin (same n and
    eps) has a narrower such candidate, auto runs that one at PureDP(eps) instead."""
    budgets = {label: pf.budget_from_table(table) for label, table in shipped.info["budgets"].items()}
    for cell in shipped.cells:
        table = shipped.statistics[cell.statistic]
        statistic = {"name": table["name"], **table.get("options", {})}
        budget = budgets[cell.budget]
        bounds = STATISTIC_BOUNDS[table["name"]]
        located = shipped.locate(table["name"], table.get("options", {}), cell.n, budget, None, table.get("quantile"))
        assert located is not None
        assert located.cell is cell  # a grid point is its own cell
        where = (cell.statistic, cell.n, cell.budget)
        exact = _exact_candidates(cell, statistic, budget, bounds)
        pipe = pf.Pipeline.build(statistic, method={"name": "auto", "map": shipped}, budget=budget, bounds=bounds)
        pure = _pure_twin(shipped, cell)  # an (eps, delta) cell's pure-eps cell at the same n and eps
        if pure is not None:
            pure_exact = _exact_candidates(pure, statistic, pf.PureDP(budget.epsilon), bounds)
            here = next((e for e in cell.candidates() if exact and e.name == exact[0]), None)
            there = next((e for e in pure.candidates() if pure_exact and e.name == pure_exact[0]), None)
            if there is not None and (here is None or there.rel_width < here.rel_width):
                chosen = pipe.select(cell.n)
                assert chosen.method.name == there.name, where
                assert chosen.budget == pf.PureDP(budget.epsilon), where
                continue
        if not exact:  # refused before any data are read, naming every measured method and why
            with pytest.raises(pf.ConfigError, match="no method of the method map's nearest cell") as refused:
                pipe.select(cell.n)
            message = refused.value.message
            for entry in cell.entries:
                assert f"{entry.name}: " in message, (where, entry.name)
            assert "name one of the methods that accept" in message or "no registered method" in message
            continue
        chosen = pipe.select(cell.n)
        assert exact, where
        assert chosen.method.name == exact[0], where
        assert not chosen.asymptotic


def _exact_candidates(cell: Any, statistic: Any, budget: pf.Budget, bounds: Any) -> list[str]:
    """The cell's candidates, in rank order, that accept ``budget`` at the cell's n with an exact guarantee."""
    exact = []
    for entry in cell.candidates():
        concrete = pf.Pipeline.build(statistic, method=dict(entry.method), budget=budget, bounds=bounds)
        try:
            concrete.check(cell.n)
        except (pf.ConfigError, pf.BudgetError):
            continue
        if not concrete.select(cell.n).asymptotic:
            exact.append(entry.name)
    return exact


def _pure_twin(method_map: MethodMap, cell: Any) -> Any:
    """The pure-eps cell at an (eps, delta) cell's n and eps, if the map measured one."""
    if cell.unit != "approx-dp":
        return None
    return next(
        (
            other
            for other in method_map.cells
            if other.statistic == cell.statistic
            and other.n == cell.n
            and other.unit == "pure-dp"
            and other.budget_table.get("epsilon") == cell.budget_table.get("epsilon")
        ),
        None,
    )


def test_the_choosing_page_shows_the_shipped_map() -> None:
    """docs/choosing.md's table is generated: regenerate it with E.update_page after a new map."""
    assert page_table(ROOT / "docs" / "choosing.md") == method_map_table()
    assert E.page_summary(ROOT / "docs" / "choosing.md") == E.auto_summary()


def test_update_page_rewrites_only_the_marked_table(toy: MethodMap, tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    text = (ROOT / "docs" / "choosing.md").read_text(encoding="utf-8")
    page.write_text(text, encoding="utf-8")
    E.update_page(page, toy)
    table = method_map_table(toy)
    assert page_table(page) == table
    lines = table.splitlines()
    assert len(lines) == 2 + len(toy.cells)
    # The table shows what auto runs (replayed), not the first candidate: at (500, eps=1) blbquant ranks first
    # but its design refuses n = 500 at (1, 1e-6), so cr-gs runs and blbquant is the other candidate; at
    # (2000, mu=2) cr-ss ranks first but refuses GDP without delta; (2000, eps=1): none is valid.
    assert lines[5] == "| mean | mu=2 | 2000 | cr-gs | 0.90 ± 0.03 | 1.3 | cr-ss (1) | - | - |"
    assert lines[6] == "| mean | eps=1 | 500 | cr-gs | 0.95 ± 0.02 | 2 | blbquant (1.4) | - | cr-ss |"
    assert lines[7].startswith("| mean | eps=1 | 2000 | none valid | - | - | - | cr-gs (0.5), privsub (0.6) |")
    assert E.page_summary(page) == E.auto_summary(toy)
    # Outside the two generated blocks the page is unchanged.
    blocks = re.compile(r"<!-- method-map (table|summary): generated.*?<!-- end of the method-map \1 -->", re.DOTALL)
    new = page.read_text(encoding="utf-8")
    assert len(blocks.findall(new)) == 2
    assert blocks.sub("", new) == blocks.sub("", text)
    assert new != text
    plain = tmp_path / "plain.md"
    plain.write_text("# No table here\n", encoding="utf-8")
    with pytest.raises(pf.ConfigError, match=r"^page: the page has no method-map table markers"):
        E.update_page(plain, toy)
    assert plain.read_text(encoding="utf-8") == "# No table here\n"


def _toy_experiment(name: str, trials: int, sizes: list[int]) -> dict[str, Any]:
    """A tiny map experiment of the mean at GDP(2): cr-gs, blbquant (which refuses a GDP budget), the bootstrap."""
    return {
        "experiment": {
            "name": name,
            "trials": trials,
            "seed": 3,
            "record_refused": True,
            "data": {"generator": "clipped-lognormal"},
            "grid": {"n": sizes, "budgets": [{"label": "mu=2", "budget": {"unit": "gdp", "mu": 2.0}}]},
            "defaults": {"statistic": "mean", "bounds": [0.0, 20.0]},
            "methods": {
                "cr-gs": {"method": "cr-gs", "budget": "budget", "reference": "boot"},
                "blbquant": {"method": "blbquant", "budget": "budget", "reference": "boot"},
                "boot": {"method": "bootstrap"},
            },
        }
    }


def test_a_map_from_a_run_and_the_cli_write_map(tmp_path: Path) -> None:
    """A tiny run with a refusal, a failure-free candidate and the CLI's --write-map."""
    config = _toy_experiment("toy-map", 6, [300])
    path = tmp_path / "toy.toml"
    path.write_text(_toml(config), encoding="utf-8")
    target, out = tmp_path / "map.json", tmp_path / "out"
    assert main(["experiment", str(path), "--out", str(out), "--write-map", str(target)]) == 0
    written = MethodMap.read(target)
    assert written.info["command"].endswith(f"--write-map {target}")
    # The same map from the saved cells (--resume runs nothing): the map of exactly these trials.
    res = E.run(config, out=out, resume=True)
    assert res.meta["resumed_cells"] == res.meta["cells"]
    built = build_method_map(res, command="test")
    assert written.to_dict()["cells"] == built.to_dict()["cells"]
    (cell,) = built.cells
    entries = {e.label: e for e in cell.entries}
    assert entries["blbquant"].refused is not None
    assert "pure epsilon-DP" in entries["blbquant"].refused
    row = next(r for r in res.rows if r.method == "cr-gs")
    assert row.coverage is not None
    assert entries["cr-gs"].coverage == pytest.approx(row.coverage * (1 - row.failure_rate), rel=1e-12)
    assert entries["cr-gs"].rel_width == row.rel_width
    assert entries["cr-gs"].trials == 6
    # The written map drives auto.
    pipe = pf.Pipeline.build("mean", method={"name": "auto", "map": str(target)}, budget=pf.GDP(2.0), bounds=BOUNDS)
    if cell.candidates():
        assert pipe.select(300).method.name == cell.candidates()[0].name


def test_a_partial_map_leaves_out_cells_where_only_refusals_are_recorded(tmp_path: Path) -> None:
    """A run stopped before an n: that n's cells hold the refusals (recorded without running) and nothing
    measured; the map leaves them out (``absent_map_cells``) rather than keeping a cell with no candidate,
    where auto would refuse instead of using the nearest measured n."""
    config = _toy_experiment("toy-partial", 4, [300, 600])
    out = tmp_path / "out"
    E.run(config, out=out, n=[300])
    partial = build_method_map(E.run(config, out=out, saved_only=True), command="test")
    assert [cell.n for cell in partial.cells] == [300]
    measured = partial.info["measured"]
    assert measured["absent_map_cells"] == ["mean | n=600 | mu=2"]
    assert not measured["complete"]
    pipe = pf.Pipeline.build("mean", method={"name": "auto", "map": partial}, budget=pf.GDP(2.0), bounds=BOUNDS)
    if partial.cells[0].candidates():
        with pytest.warns(pf.CoverageWarning, match="largest n"):
            assert pipe.select(600).method.name == partial.cells[0].candidates()[0].name


def test_a_rerun_of_some_methods_merges_into_the_map_as_a_full_rerun_would(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--write-map FILE --merge``: a rerun of one label (its reference kept) with the map's seed repeats
    that label's trials exactly, so merging it into a map whose entry went stale restores the full run's
    entry; the other entries are kept as they were, and the merge is recorded. A run with another seed is
    refused before anything is written."""
    config = _toy_experiment("toy-merge", 6, [300])
    path = tmp_path / "toy.toml"
    path.write_text(_toml(config).replace('"toy-map"', '"toy-merge"'), encoding="utf-8")
    target, out = tmp_path / "map.json", tmp_path / "out"
    assert main(["experiment", str(path), "--out", str(out), "--write-map", str(target)]) == 0
    full = json.loads(target.read_text(encoding="utf-8"))
    stale = json.loads(json.dumps(full))
    (entry,) = [e for e in stale["cells"][0]["entries"] if e["label"] == "cr-gs"]
    entry["measurements"][0]["covered"] = 0
    entry["measurements"][0]["coverage"] = 0.0
    entry["coverage"], entry["candidate"] = 0.0, False
    target.write_text(json.dumps(stale), encoding="utf-8")
    assert not any(e.candidate for e in MethodMap.read(target).cells[0].entries if e.label == "cr-gs")
    rerun = ["experiment", str(path), "--out", str(tmp_path / "rerun"), "--methods", "cr-gs"]
    assert main([*rerun, "--write-map", str(target), "--merge"]) == 0
    merged = json.loads(target.read_text(encoding="utf-8"))
    assert merged["cells"] == full["cells"]
    assert merged["command"] == full["command"]
    (record,) = merged["merged"]
    assert record["labels"] == ["cr-gs"]
    assert record["cells"] == 1
    assert record["command"].endswith("--merge")
    before = target.read_text(encoding="utf-8")
    capsys.readouterr()
    assert main([*rerun, "--seed", "4", "--write-map", str(target), "--merge"]) == 2
    assert "map.seed: the run was not made with the map's settings" in capsys.readouterr().err
    assert target.read_text(encoding="utf-8") == before
    assert main([*rerun, "--merge"]) == 2
    assert "merge: needs --write-map" in capsys.readouterr().err


def test_a_merge_adds_the_cells_the_map_lacks_in_the_maps_order(tmp_path: Path) -> None:
    """A map measured at n = 300 only, then a run of one label at n = 600 merged into it: the new cell is
    added after the n = 300 cell (the map's order), the label's entry measured, the others listed as not
    measured (no candidates), and ``measured`` and the map's list of n follow (no longer absent; incomplete)."""
    config = _toy_experiment("toy-grow", 4, [300, 600])
    path = tmp_path / "toy.toml"
    text = _toml(config).replace('"toy-map"', '"toy-grow"').replace("trials = 6", "trials = 4")
    path.write_text(text.replace("n = [300]", "n = [300, 600]"), encoding="utf-8")
    target, out = tmp_path / "map.json", tmp_path / "out"
    assert main(["experiment", str(path), "--out", str(out), "--n", "300", "--write-map", str(target)]) == 0
    assert [c.n for c in MethodMap.read(target).cells] == [300]
    grow = ["experiment", str(path), "--out", str(tmp_path / "more"), "--n", "600", "--methods", "cr-gs"]
    assert main([*grow, "--write-map", str(target), "--merge"]) == 0
    merged = MethodMap.read(target)
    assert [c.n for c in merged.cells] == [300, 600]
    entries = {e.label: e for e in merged.cells[1].entries}
    assert not entries["cr-gs"].missing
    assert entries["cr-gs"].trials == 4
    assert not entries["blbquant"].candidate
    assert merged.info["merged"][0]["labels"] == ["cr-gs"]
    assert merged.info["merged"][0]["added_cells"] == ["mean | n=600 | mu=2"]
    assert merged.info["measured"]["map_cells"] == 2
    others = len(merged.cells[1].entries) - 1  # every label but cr-gs lacks its one variant at n = 600
    assert merged.info["measured"]["unmeasured_measurements"] == others
    assert merged.info["n"] == [300, 600]
    # blbquant refuses the GDP budget: a run of it at n = 600 fills its unmeasured entry with the refusal.
    refusal = ["experiment", str(path), "--out", str(tmp_path / "refusal"), "--n", "600", "--methods", "blbquant"]
    assert main([*refusal, "--write-map", str(target), "--merge"]) == 0
    filled = {e.label: e for e in MethodMap.read(target).cells[1].entries}
    assert filled["blbquant"].refused is not None
    assert not filled["blbquant"].missing
    assert not filled["blbquant"].candidate
    assert filled["cr-gs"] == entries["cr-gs"]
    assert MethodMap.read(target).info["measured"]["unmeasured_measurements"] == 0


def _toml(config: dict[str, Any]) -> str:
    exp = config["experiment"]
    lines = ["[experiment]", 'name = "toy-map"', "trials = 6", "seed = 3", "record_refused = true",
             "[experiment.data]", 'generator = "clipped-lognormal"', "[experiment.grid]", "n = [300]",
             "[[experiment.grid.budgets]]", 'label = "mu=2"', 'budget = { unit = "gdp", mu = 2.0 }',
             "[experiment.defaults]", 'statistic = "mean"', "bounds = [0.0, 20.0]"]  # fmt: skip
    for label, table in exp["methods"].items():
        lines.append(f'[experiment.methods."{label}"]')
        lines += [f'{key} = "{value}"' for key, value in table.items()]
    return "\n".join(lines) + "\n"


# -- the shipped map against a fresh run --------------------------------------------------------------

# Cheap cells at the map's smallest n (about 15 s together): one per budget unit and private-variance.
FRESH_CELLS = [
    ("mean/cr-gs", "mu=1", ("lognormal-w10", "bernoulli")),
    # measured before private-variance's quantile search shared its work (the same bits, checked here)
    ("mean/private-variance", "pure-eps=1", ("lognormal-w3",)),
    ("median/rank-quantile", "eps=1", ("poisson-w10", "bimodal-w50")),
    ("q90/privsub", "pure-eps=1", ("t3-w50", "normal-w10")),
]


@pytest.mark.parametrize(("label", "budget", "variants"), FRESH_CELLS)
def test_the_shipped_map_agrees_with_a_fresh_run(shipped: MethodMap, label: str, budget: str, variants: Any) -> None:
    """A few cells of the shipped map rerun with the map's own experiment, seed and trials: the seeds of a
    cell depend only on the experiment, the seed, the cell and the trial, so the rerun repeats the map's
    trials and its measurements must agree exactly (the counts) or to rounding (the widths). A failure
    means the map is stale (a method changed since it was made): regenerate it with the command in its
    ``command`` field (docs/experiments.md, "The method map")."""
    n = min(cell.n for cell in shipped.cells)
    run = E.run(
        shipped.info["experiment"],
        trials=int(shipped.info["trials"]),
        n=[n],
        methods=[label],
        budgets=[budget],
        variants=list(variants),
        seed=int(shipped.info["seed"]),
    )
    old = {m.variant: m for m in _map_entry(shipped, label, budget, n).measurements}
    fresh = _map_entry(build_method_map(run), label, budget, n).measurements
    assert sorted(m.variant for m in fresh) == sorted(variants)
    for new in fresh:
        stored = old[new.variant]
        where = (label, budget, new.variant)
        assert (new.trials, new.covered, new.stopped, new.refused) == (
            stored.trials,
            stored.covered,
            stored.stopped,
            stored.refused,
        ), where
        for field in ("coverage", "mean_width", "rel_width", "failure_rate"):
            a, b = getattr(new, field), getattr(stored, field)
            assert (a is None) == (b is None), (where, field)
            if a is not None:
                assert a == pytest.approx(b, rel=1e-9, abs=1e-12), (where, field)


def _map_entry(method_map: MethodMap, label: str, budget: str, n: int) -> Any:
    for cell in method_map.cells:
        if cell.budget == budget and cell.n == n:
            for entry in cell.entries:
                if entry.label == label:
                    return entry
    raise AssertionError(f"no {label} at {budget}, n = {n} in the map")
