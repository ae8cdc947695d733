"""Method map v2: the data shapes' truths, the per-variant candidate rule, early stopping, the format-2 file.

The truths of the ``shape`` generator are checked against a large seeded Monte Carlo sample of the same law
(400 000 draws): a mean within 4 Monte Carlo SE (``sd / sqrt(N)``), a continuous quantile ``t`` where the
share of draws at or below ``t`` is within 4 SE (``sqrt(q (1 - q) / N)``) of ``q``, a discrete quantile ``k``
where ``P(X < k) < q <= P(X <= k)`` with the sample shares at least 4 SE from ``q`` on the right side (the
Poisson(3) gaps are far wider). A test at 4 SE fails by chance with probability 6e-5 per check.
"""

from __future__ import annotations

import json
import math
from typing import Any

import attrs
import numpy as np
import pytest
from scipy import integrate, stats

import privframe as pf
from privframe.experiments.cells import StopRule, expand
from privframe.experiments.config import load_experiment
from privframe.experiments.generators import SHAPES, Shape
from privframe.experiments.methodmap import build_method_map
from privframe.experiments.trial import TrialRecord, run_cell
from privframe.pipeline.methodmap import MAP_FORMAT, MethodMap, coverage_passes, max_misses

E = pf.experiments
DRAWS = 400_000
LEVELS = (0.1, 0.25, 0.5, 0.75, 0.9)
SHAPE_CASES = [(s, w) for s in SHAPES if s != "bernoulli" for w in (3, 10, 50)] + [("bernoulli", None)]


def _sample(shape: Shape, seed: int) -> np.ndarray:
    return shape.sample(DRAWS, np.random.default_rng(seed))


@pytest.mark.parametrize(("name", "width"), SHAPE_CASES)
def test_the_shape_truths_agree_with_a_large_monte_carlo(name: str, width: float | None) -> None:
    shape = Shape(name, width)
    law = shape.population()
    low, high = shape.record_bounds()
    x = _sample(shape, seed=2026 + 7 * SHAPE_CASES.index((name, width)))
    assert low <= x.min()  # the records lie in the public bounds
    assert x.max() <= high
    mean = float(law.mean())
    se = float(x.std()) / math.sqrt(DRAWS)
    assert abs(float(x.mean()) - mean) <= 4 * se, (name, width, mean, float(x.mean()), se)
    discrete = name in ("poisson", "bernoulli")
    for q in LEVELS:
        t = float(law.ppf(q))
        q_se = math.sqrt(q * (1 - q) / DRAWS)
        below, at_or_below = float(np.mean(x < t)), float(np.mean(x <= t))
        if discrete:
            assert t == round(t)  # an integer: the smallest k with F(k) >= q
            assert below <= q - 4 * q_se, (name, width, q, t)
            assert at_or_below >= q + 4 * q_se, (name, width, q, t)
        else:
            assert abs(at_or_below - q) <= 4 * q_se, (name, width, q, t, at_or_below)


@pytest.mark.parametrize("width", [3, 10, 50])
def test_the_bimodal_mean_closed_form_agrees_with_quadrature(width: float) -> None:
    """The clipped mixture's closed-form mean against an independent quadrature of the same law."""
    shape = Shape("bimodal", width)
    low, high = shape.record_bounds()
    law = shape.population()
    mix = [stats.norm(-2.0, 0.5), stats.norm(2.0, 0.5)]
    inside = sum(integrate.quad(lambda v, c=c: v * c.pdf(v), low, high, epsabs=1e-13)[0] for c in mix) / 2
    atoms = sum(low * c.cdf(low) + high * c.sf(high) for c in mix) / 2
    assert law.mean() == pytest.approx(inside + atoms, abs=1e-11)
    assert float(law.cdf(float(law.ppf(0.3)))) == pytest.approx(0.3, abs=1e-12)


def test_the_shape_bounds_and_exact_values() -> None:
    sd = math.sqrt((math.e - 1) * math.e)
    assert Shape("lognormal", 10).record_bounds() == pytest.approx((0.0, 10 * sd))
    assert Shape("normal", 3).record_bounds() == (-1.5, 1.5)
    assert Shape("t3", 10).record_bounds() == pytest.approx((-5 * math.sqrt(3), 5 * math.sqrt(3)))
    assert Shape("bernoulli").record_bounds() == (0.0, 1.0)
    assert Shape("bernoulli").population().mean() == pytest.approx(0.02)
    assert Shape("normal", 50).population().mean() == pytest.approx(0.0, abs=1e-12)  # symmetric bounds
    assert Shape("t3", 50).population().mean() == pytest.approx(0.0, abs=1e-10)
    # Poisson(3) on [0, 10 sqrt(3)] = [0, 17.32]: the mean is 3 less the mass beyond 17 (1e-8), by the pmf.
    pois = stats.poisson(3.0)
    direct = math.fsum(k * pois.pmf(k) for k in range(18)) + 10 * math.sqrt(3) * pois.sf(17)
    assert Shape("poisson", 10).population().mean() == pytest.approx(direct, rel=1e-14)
    assert float(Shape("poisson", 10).population().ppf(0.5)) == 3.0
    with pytest.raises(pf.ConfigError, match="width"):
        Shape("normal")
    with pytest.raises(pf.ConfigError, match="width"):
        Shape("bernoulli", 10)
    with pytest.raises(pf.ConfigError, match="shape"):
        Shape("cauchy", 10)


def test_a_variant_truth_is_the_clipped_laws() -> None:
    """The experiment's truth of a method on a variant is its statistic's value on that variant's law."""
    spec = load_experiment("method-map-quick")
    for label, shape in (("lognormal-w10", Shape("lognormal", 10)), ("poisson-w50", Shape("poisson", 50))):
        variant = spec.variant(label)
        assert variant.bounds == shape.record_bounds()
        assert spec.truth(spec.method("mean/cr-gs"), variant) == pytest.approx(shape.population().mean(), rel=1e-12)
        q90 = spec.truth(spec.method("q90/rank-quantile"), variant)
        assert q90 == pytest.approx(float(shape.population().ppf(0.9)), rel=1e-12)


# -- early stopping ---------------------------------------------------------------------------------------


def _one_cell(truth: float | None, trials: int) -> Any:
    config = {
        "experiment": {
            "name": "stop-rule",
            "trials": trials,
            "seed": 5,
            "early_stop": True,
            "variants": [{"label": "normal-w10", "data": {"generator": "shape", "shape": "normal", "width": 10}}],
            "grid": {"n": [100], "budgets": [{"label": "mu=1", "budget": {"unit": "gdp", "mu": 1.0}}]},
            "defaults": {"statistic": "mean"},
            "methods": {
                "cr-gs": {"method": "cr-gs", "budget": "budget", **({} if truth is None else {"truth": truth})}
            },
        }
    }
    (task,) = expand(load_experiment(config))
    return task


def test_early_stopping_stops_exactly_when_the_rule_can_no_longer_pass() -> None:
    """30 trials at nominal 0.9: 24 covered pass (27 - 2 sqrt(2.7) = 23.71), so at most 6 misses. With a truth
    no interval contains the cell stops after its 7th trial; the records are the first 7 of the unstopped
    run's; a cell that covers runs every trial and is not stopped."""
    assert max_misses(30, 0.9) == 6
    assert coverage_passes(24, 30, 0.9)
    assert not coverage_passes(23, 30, 0.9)
    far = _one_cell(truth=1e6, trials=30)
    assert far.stop == StopRule(0.9, 30)
    stopped = run_cell(far)
    assert stopped.stopped == 7
    assert len(stopped.records) == 7
    assert not any(r.covered for r in stopped.records)
    full = run_cell(attrs.evolve(far, stop=None))
    assert full.stopped is None
    assert len(full.records) == 30
    assert [r.to_dict() | {"ms": 0} for r in stopped.records] == [r.to_dict() | {"ms": 0} for r in full.records[:7]]
    right = run_cell(_one_cell(truth=None, trials=30))
    assert right.stopped is None
    assert len(right.records) == 30


def test_a_stopped_cell_is_no_candidate_and_says_so() -> None:
    task = _one_cell(truth=1e6, trials=30)
    run = E.run(load_experiment(_config_of(task)))
    (cell,) = build_method_map(run).cells
    (entry,) = cell.entries
    assert not entry.candidate
    assert entry.measurements[0].stopped == 7
    assert entry.measurements[0].trials == 7
    assert "stopped after 7 trials" in pf.pipeline.methodmap.excluded_reason(entry, cell.nominal)


def _config_of(task: Any) -> dict[str, Any]:
    return {
        "experiment": {
            "name": "stop-rule",
            "trials": task.trials,
            "seed": 5,
            "early_stop": True,
            "variants": [{"label": "normal-w10", "data": {"generator": "shape", "shape": "normal", "width": 10}}],
            "grid": {"n": [100], "budgets": [{"label": "mu=1", "budget": {"unit": "gdp", "mu": 1.0}}]},
            "defaults": {"statistic": "mean"},
            "methods": {"cr-gs": {"method": "cr-gs", "budget": "budget", "truth": task.truth}},
        }
    }


# -- the per-variant rule in a map built from a run --------------------------------------------------------


def _records(covered: int, trials: int) -> tuple[TrialRecord, ...]:
    return tuple(TrialRecord(i, None, i < covered, 1.0, 0.0) for i in range(trials))


def test_the_map_builder_needs_every_variant_to_pass() -> None:
    """Two methods on three variants, 64 trials at nominal 0.5 (each variant passes from 24 covered): 'every'
    passes on all three; 'one-short' covers 23 on one variant and 64 on the others, so it is no candidate,
    its coverage is that variant's and the reason names it."""
    variants = [
        {"label": f"normal-w{w}", "data": {"generator": "shape", "shape": "normal", "width": w}} for w in (3, 10, 50)
    ]
    config = {
        "experiment": {
            "name": "every-variant",
            "trials": 1,
            "seed": 1,
            "confidence": 0.5,
            "variants": variants,
            "grid": {"n": [200], "budgets": [{"label": "mu=2", "budget": {"unit": "gdp", "mu": 2.0}}]},
            "defaults": {"statistic": "mean"},
            "methods": {label: {"method": "cr-gs", "budget": "budget"} for label in ("every", "one-short")},
        }
    }
    run = E.run(config)
    covered = {("every", "normal-w3"): 24, ("one-short", "normal-w10"): 23}
    outcomes = dict(run.outcomes)
    for key, outcome in outcomes.items():
        cell = outcome.cell
        outcomes[key] = attrs.evolve(outcome, records=_records(covered.get((cell.method, cell.variant), 64), 64))
    (cell,) = build_method_map(attrs.evolve(run, outcomes=outcomes)).cells
    assert cell.variants == ("normal-w3", "normal-w10", "normal-w50")
    entries = {e.label: e for e in cell.entries}
    assert entries["every"].candidate
    assert entries["every"].coverage == 24 / 64
    assert entries["every"].worst_variant == "normal-w3"
    short = entries["one-short"]
    assert not short.candidate
    assert short.coverage == 23 / 64
    assert short.worst_variant == "normal-w10"
    assert [m.variant for m in short.failing(0.5)] == ["normal-w10"]
    assert "normal-w10 (coverage 0.359" in pf.pipeline.methodmap.excluded_reason(short, 0.5)
    assert [e.label for e in cell.candidates()] == ["every"]
    # The JSON round trip keeps the measurements and re-derives the same flags.
    method_map = build_method_map(attrs.evolve(run, outcomes=outcomes))
    again = MethodMap.from_dict(json.loads(json.dumps(method_map.to_dict())), "again")
    assert again.to_dict()["cells"] == method_map.to_dict()["cells"]
    assert again.info["format"] == MAP_FORMAT


# -- the format-2 file ---------------------------------------------------------------------------------------


def _measurement(variant: str, covered: int, trials: int = 100, **kw: Any) -> dict[str, Any]:
    c = covered / trials
    return {"variant": variant, "trials": trials, "covered": covered, "coverage": c,
            "coverage_se": math.sqrt(c * (1 - c) / trials), "mean_width": 1.0, "width_se": 0.01,
            "rel_width": 1.5, **kw}  # fmt: skip


def _v2(entries: list[dict[str, Any]], variants: list[str] | None = None) -> dict[str, Any]:
    variants = variants or ["a", "b"]
    cell = {"statistic": "mean", "n": 500, "budget": "mu=1", "budget_table": {"unit": "gdp", "mu": 1.0},
            "unit": "gdp", "mu": 1.0, "nominal": 0.9, "variants": variants, "entries": entries}  # fmt: skip
    return {
        "format": MAP_FORMAT,
        "command": "hand-made",
        "seed": 0,
        "trials": 100,
        "variants": {v: {"data": {"generator": "shape", "shape": "normal", "width": 10}} for v in ("a", "b")},
        "statistics": {"mean": {"name": "mean", "options": {}, "bounds_kind": "interval"}},
        "cells": [cell],
    }


def _v2_entry(method: str, measurements: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    return {"label": f"mean/{method}", "method": {"name": method}, "measurements": measurements, **kw}


def test_a_format_2_map_derives_candidates_from_its_measurements() -> None:
    payload = _v2([
        _v2_entry("cr-gs", [_measurement("a", 84), _measurement("b", 83)]),  # b below 0.84: no candidate
        _v2_entry("privsub", [_measurement("a", 90), _measurement("b", 84)]),
    ])  # fmt: skip
    (cell,) = MethodMap.from_dict(payload, "toy").cells
    assert [e.name for e in cell.candidates()] == ["privsub"]
    cr_gs = next(e for e in cell.entries if e.name == "cr-gs")
    assert (cr_gs.coverage, cr_gs.worst_variant, cr_gs.candidate) == (0.83, "b", False)


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda p: p["cells"][0]["entries"][0].update(candidate=True), r"entries\[0\]\.candidate"),
        (lambda p: p["cells"][0].pop("variants"), r"map\.cells\[0\]\.variants"),
        (lambda p: p["cells"][0].update(variants=["a", "z"]), r"map\.cells\[0\]\.variants"),
        (lambda p: p["cells"][0]["entries"][0].pop("measurements"), r"entries\[0\]\.measurements"),
        (lambda p: p["cells"][0]["entries"][0]["measurements"][0].update(covered=101), r"covered"),
        (lambda p: p.update(format="privframe-method-map/3"), r"map\.format"),
    ],
)
def test_a_bad_format_2_map_is_refused_naming_the_field(change: Any, path: str) -> None:
    payload = _v2([_v2_entry("cr-gs", [_measurement("a", 84), _measurement("b", 83)])])
    change(payload)
    with pytest.raises(pf.ConfigError, match=path):
        MethodMap.from_dict(payload, "toy")


def test_a_variant_not_measured_is_no_candidate() -> None:
    payload = _v2([_v2_entry("cr-gs", [_measurement("a", 100)])])
    (cell,) = MethodMap.from_dict(payload, "toy").cells
    (entry,) = cell.entries
    assert not entry.candidate
    assert entry.missing == ("b",)
    assert "not measured on b" in pf.pipeline.methodmap.excluded_reason(entry, 0.9)


@pytest.mark.parametrize(
    ("measured", "settled"),
    [
        ([("a", 100)], False),  # passes on a, b not run: b could still make it a candidate
        ([("a", 80)], True),  # fails on a (below 0.84 at 100 trials): b cannot make it a candidate
        ([("a", 100), ("b", 100)], True),  # measured everywhere
    ],
)
def test_a_cell_is_settled_when_no_missing_variant_can_change_its_candidates(
    measured: list[tuple[str, int]], settled: bool
) -> None:
    payload = _v2([
        _v2_entry("cr-gs", [_measurement(v, covered) for v, covered in measured]),
        _v2_entry("privsub", [_measurement("a", 90), _measurement("b", 90)]),
    ])  # fmt: skip
    (cell,) = MethodMap.from_dict(payload, "toy").cells
    assert cell.complete == (len(measured) == 2)
    assert cell.settled == settled
    assert cell.to_dict()["settled"] == settled
    both = measured == [("a", 100), ("b", 100)]
    assert {e.name for e in cell.candidates()} == ({"privsub", "cr-gs"} if both else {"privsub"})


# -- auto and the order statistics ------------------------------------------------------------------------


def _toy_quantile_map() -> MethodMap:
    """A format-2 map of the 0.1-quantile and the median, one cell each, rank-quantile the only candidate."""
    payload = _v2([_v2_entry("rank-quantile", [_measurement("a", 90), _measurement("b", 90)])])
    median = json.loads(json.dumps(payload["cells"][0]))
    payload["cells"][0]["statistic"] = "quantile(q=0.1)"
    median["statistic"] = "median"
    payload["cells"].append(median)
    payload["statistics"] = {
        "quantile(q=0.1)": {"name": "quantile", "options": {"q": 0.1}, "bounds_kind": "interval", "quantile": 0.1},
        "median": {"name": "median", "options": {}, "bounds_kind": "interval", "quantile": 0.5},
    }
    return MethodMap.from_dict(payload, "toy")


def test_auto_matches_order_statistics_by_level_and_warns_off_a_measured_level() -> None:
    toy = _toy_quantile_map()

    def choose(statistic: Any) -> Any:
        pipe = pf.Pipeline.build(statistic, method={"name": "auto", "map": toy}, budget=pf.GDP(1.0), bounds=(0, 10))
        return pipe.select(500)

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", pf.CoverageWarning)
        assert choose({"name": "quantile", "q": 0.5}).method.name == "rank-quantile"  # the median's cells
        assert choose({"name": "quantile", "q": 0.1}).method.name == "rank-quantile"
    with pytest.warns(pf.CoverageWarning, match=r"0\.25-quantile uses the method map's cells of 'quantile\(q=0\.1\)'"):
        choose({"name": "quantile", "q": 0.25})


@pytest.mark.parametrize(
    ("name", "options", "kind", "bounds"),
    [("u-statistic", {}, "interval", (-1.0, 1.0)), ("logistic-slope", {"penalty": 0.01}, "ball", 1.0)],
)
def test_auto_on_the_u_statistic_and_logistic_slope_picks_a_valid_method_or_refuses(
    name: str, options: dict[str, Any], kind: str, bounds: Any
) -> None:
    """A hand-made format-2 map of the statistic with two cells: at n = 500 only privsub passes on both
    variants (cr-gs misses on one), so auto runs privsub, not the narrower cr-gs; at n = 2000 neither passes
    on every variant, so auto refuses before any data are read, naming each method's failing variant and the
    methods that accept the budget."""
    good = _v2_entry("privsub", [_measurement("a", 90), _measurement("b", 86)], rel_width=None)
    bad = _v2_entry("cr-gs", [_measurement("a", 95), _measurement("b", 80)])
    payload = _v2([bad, good])
    payload["statistics"] = {"s": {"name": name, "options": options, "bounds_kind": kind}}
    payload["cells"][0]["statistic"] = "s"
    refused = json.loads(json.dumps(payload["cells"][0]))
    refused["n"] = 2000
    refused["entries"][1]["measurements"][1] = _measurement("b", 83)
    payload["cells"].append(refused)
    toy = MethodMap.from_dict(payload, "toy")
    statistic = {"name": name, **options}
    pipe = pf.Pipeline.build(statistic, method={"name": "auto", "map": toy}, budget=pf.GDP(1.0), bounds=bounds)
    assert pipe.select(500).method.name == "privsub"
    with pytest.raises(pf.ConfigError, match="no method of the method map's nearest cell") as refusal:
        pipe.select(2000)
    message = refusal.value.message
    assert "cr-gs: below 0.9 - 2 SE (at nominal) on 1 of 2 variants: b (coverage 0.800" in message
    assert "privsub: below 0.9 - 2 SE (at nominal) on 1 of 2 variants: b (coverage 0.830" in message
    assert f"name one of the methods that accept '{name}' at 1-GDP: " in message


def _probe(cell: Any, label: str, variant: str, covered: int, trials: int = 40) -> Any:
    """``cell`` of an update map holding only ``label``, measured on one ``variant``."""
    from privframe.pipeline.methodmap import Measurement

    (old,) = [e for e in cell.entries if e.label == label]
    c = covered / trials
    m = Measurement(variant, trials=trials, covered=covered, coverage=c, coverage_se=math.sqrt(c * (1 - c) / trials),
                    failure_rate=0.0, mean_width=1.0, width_se=0.1, rel_width=1.0)  # fmt: skip
    entry = type(old).from_measurements(label, old.method, old.parts, [m], cell.variants, cell.nominal)
    return attrs.evolve(cell, entries=(entry,))


def _unsettled(shipped: MethodMap) -> MethodMap:
    """The shipped map with blbquant's measurements of the median at n = 50 000, (5, 1e-6) taken out: the cell
    it leaves is unsettled (the shipped map may have none)."""
    cells = []
    found = False
    for cell in shipped.cells:
        if (cell.statistic, cell.n, cell.budget) == ("median", 50000, "eps=5"):
            found = True
            entries = tuple(
                type(e).from_measurements(e.label, e.method, e.parts, [], cell.variants, cell.nominal)
                if e.label == "median/blbquant"
                else e
                for e in cell.entries
            )
            cell = attrs.evolve(cell, entries=entries)
            assert not cell.settled
        cells.append(cell)
    assert found, "the shipped map has no median cell at n = 50000, (5, 1e-6)"
    return MethodMap(shipped.source, shipped.info, shipped.statistics, tuple(cells))


@pytest.mark.parametrize("covered", [10, 40])
def test_a_probe_of_some_shapes_merges_only_when_it_already_fails(covered: int) -> None:
    """A run of one method on one hard shape of an unsettled cell (``--variants``): failing there, it can
    never be a candidate, so the merge keeps the measurement and the cell is settled; covering there, the
    other shapes could still change the choice, so the map is left as it was."""
    from privframe.experiments.methodmap import merge_method_maps

    base = _unsettled(MethodMap.shipped())
    cell = next(c for c in base.cells if not c.settled)
    (label,) = [e.label for e in cell.entries if e.missing and not e.measurements]
    update = MethodMap(base.source, base.info, base.statistics, (_probe(cell, label, cell.variants[0], covered),))
    merged = merge_method_maps(base, update, command="probe")
    (after,) = [c for c in merged.cells if (c.statistic, c.n, c.budget) == (cell.statistic, cell.n, cell.budget)]
    (entry,) = [e for e in after.entries if e.label == label]
    name = f"{cell.statistic} | n={cell.n} | {cell.budget}"
    if covered < 40:
        assert [m.variant for m in entry.measurements] == [cell.variants[0]]
        assert len(entry.missing) == len(cell.variants) - 1
        assert not entry.candidate
        assert after.settled
        assert name not in merged.info["measured"]["unsettled_map_cells"]
        assert merged.info["merged"][-1]["labels"] == [label]
        assert [e.label for e in after.candidates()] == [e.label for e in cell.candidates()]
    else:
        assert after == cell
        assert name in merged.info["measured"]["unsettled_map_cells"]
