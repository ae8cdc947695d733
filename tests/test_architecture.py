"""The house rules of the core: resolve once, one accounting path, structured errors, no cycles, light import."""

from __future__ import annotations

import ast
import os
import pickle
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import attrs
import numpy as np
import pytest
from _support import Untouchable
from scipy import stats

import privframe as pf
import privframe.plugin as pp
from privframe.plugin.registration import PluginEntry
from privframe.plugin.registry import PluginRegistry
from privframe_std.mechanisms.exponential import quantile_log_weights

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------------------------------------------
# Import hygiene


def test_import_privframe_loads_no_client_and_no_heavy_scipy() -> None:
    # scipy.special alone took 0.4 s of a 0.9 s import (issue 15); the accounting math imports it on first use,
    # the samplers load numba (0.4 s) on their first large draw (small ones before it take a numpy path).
    code = (
        "import sys, privframe\n"
        "heavy = (['scipy', 'stats'], ['scipy', 'optimize'], ['scipy', 'special'])\n"
        "bad = [m for m in sys.modules if m.split('.')[0:2] in heavy\n"
        "       or m.startswith(('privframe.audit', 'privframe.experiments', 'privframe_std', 'dask', 'numba',\n"
        "                        'tqdm'))]\n"
        "print(','.join(sorted(bad)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == ""
    # ... and the clients are still one attribute away.
    assert pf.audit.audit_mechanism is not None
    assert callable(pf.experiments.run)


def test_a_first_small_interval_loads_neither_scipy_special_nor_numba() -> None:
    """Loading the standard plugins imports every part's module; those that use scipy.special read it
    through ``privframe._typing.LazyModule`` and the samplers take a numpy path for small draws before numba
    is loaded, so a first cr-gs interval at n = 1000 pays neither (about 0.2 s and 0.5 s of a fresh
    process; ``tests/benchmarks/test_bench_ratios.py::test_first_interval_in_a_fresh_process``)."""
    code = (
        "import sys, numpy as np, privframe as pf\n"
        "x = np.random.default_rng(0).uniform(size=1000)\n"
        "pf.confidence_interval(x, 'mean', method='cr-gs', budget=pf.GDP(1.0), bounds=(0, 1), rng=1)\n"
        "loaded = [m for m in ('scipy.special', 'scipy.stats', 'scipy.optimize', 'numba') if m in sys.modules]\n"
        "print(','.join(loaded) or 'none', 'privframe_std.methods.private_variance.laws' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.split() == ["none", "True"]  # the plugins did load, and paid for nothing heavy


@pytest.mark.parametrize("statistic", ["median", "mean"])
def test_the_default_path_of_a_median_or_a_mean_never_imports_scipy_stats(statistic: str) -> None:
    """``method="auto"`` runs rank-quantile on a median and private-variance on a mean; neither plan needs
    scipy.stats (0.6 s of a fresh process): the binomial tails come from scipy.special's ufuncs
    (``privframe_std.methods.rank_quantile.binomial``)."""
    code = (
        "import sys, numpy as np, privframe as pf\n"
        "x = np.random.default_rng(0).lognormal(size=1000).clip(0, 20)\n"
        f"r = pf.confidence_interval(x, {statistic!r}, method='auto', budget=pf.PureDP(1.0), bounds=(0, 20), rng=1)\n"
        "print(r.method, 'scipy.stats' in sys.modules)"
    )
    env = {key: value for key, value in os.environ.items() if key != "PRIVFRAME_PLAN_CACHE"}
    env["PRIVFRAME_PLAN_CACHE"] = "0"  # the plan is searched, not read from disk
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT, env=env)
    method = {"median": "rank-quantile", "mean": "private-variance"}[statistic]
    assert out.stdout.split() == [method, "False"]


def _imports(path: Path, package: str) -> set[str]:
    """Modules of ``package`` that ``path`` imports, type-only imports included."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == package:
                found.update(f"{package}.{alias.name}" for alias in node.names)
            elif node.module.startswith(package + "."):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith(package + "."))
    return found


@pytest.mark.parametrize(
    ("folder", "package"), [("privframe", "privframe"), ("plugins/privframe_std", "privframe_std")]
)
def test_no_import_cycle_even_through_type_only_imports(folder: str, package: str) -> None:
    modules: dict[str, Path] = {}
    for path in (ROOT / folder).rglob("*.py"):
        parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join([package, *parts])] = path
    graph = {name: {m for m in _imports(path, package) if m in modules and m != name} for name, path in modules.items()}
    # Packages re-export their children; an edge into a package's __init__ is not a cycle through it.
    packages = {name for name, path in modules.items() if path.name == "__init__.py"}
    edges = {name: {m for m in targets if m not in packages} for name, targets in graph.items()}
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for target in sorted(edges[node]):
            if state.get(target) == 1:
                raise AssertionError("import cycle: " + " -> ".join([*path[path.index(target) :], target]))
            if target not in state:
                visit(target)
        path.pop()
        state[node] = 2

    for name in sorted(edges):
        if name not in state:
            visit(name)


# ---------------------------------------------------------------------------------------------------------
# Resolve once


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    counts = {"get": 0, "create": 0}
    original_get, original_create = PluginRegistry.get, PluginEntry.create

    def get(self: PluginRegistry, *args: Any, **kwargs: Any) -> Any:
        counts["get"] += 1
        return original_get(self, *args, **kwargs)

    def create(self: PluginEntry, *args: Any, **kwargs: Any) -> Any:
        counts["create"] += 1
        return original_create(self, *args, **kwargs)

    monkeypatch.setattr(PluginRegistry, "get", get)
    monkeypatch.setattr(PluginEntry, "create", create)
    return counts


def test_a_call_resolves_once_and_builds_every_part_once(counted: dict[str, int]) -> None:
    x = np.random.default_rng(0).uniform(size=500)
    pf.confidence_interval(x, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), B=50, rng=1)
    # method, statistic, sampler, mechanism, accountant: one look-up and one construction each
    assert counted == {"get": 5, "create": 5}
    counted.update(get=0, create=0)
    pipe = pf.Pipeline.from_dict(
        {"method": "cr-gs", "statistic": "mean", "bounds": [0, 1], "budget": {"unit": "gdp", "mu": 1}}
    )
    pipe.run(x, rng=1)
    pipe.run(x, rng=2)
    assert counted == {"get": 5, "create": 5}


def test_build_resolves_against_the_registry_it_is_given() -> None:
    @attrs.frozen
    class Share:
        name: ClassVar[str] = "private-share"
        traits: ClassVar[pp.StatisticTraits] = pp.StatisticTraits(requires_bounds=False)

        def evaluate_batch(self, x: pp.Array, index: pp.IndexMatrix) -> pp.Array:
            share: pp.Array = (x[index] > 0).mean(axis=1, keepdims=True)
            return share

        def sensitivity(self, k: int, bounds: Any) -> float:
            return 1.0 / k

    class Plugin:
        @pp.hookimpl
        def privframe_register_statistics(self, registry: pp.StatisticRegistry) -> None:
            registry.add(Share)

    private = PluginRegistry()
    private.register(Plugin(), name="test-private-share")
    assert "private-share" not in pf.registry.names("statistic")
    x = np.random.default_rng(2).normal(size=2000)
    pipe = pf.Pipeline.build("private-share", method="cr-gs", budget=pf.GDP(1.0), reg=private)
    assert pipe.run(x, rng=3).contains(0.5)
    with pytest.raises(pf.ConfigError, match=r"^statistic: unknown statistic 'private-share'"):
        pf.Pipeline.build("private-share", method="cr-gs", budget=pf.GDP(1.0))
    again = pf.Pipeline.from_dict(pipe.to_dict(), reg=private)
    assert again == pipe


# ---------------------------------------------------------------------------------------------------------
# What a method declares, and what the pipeline checks for it


def _method(**members: Any) -> type:
    @attrs.frozen
    class Probe:
        name: ClassVar[str] = "probe-method"
        needs: ClassVar[pp.MethodNeeds] = members.get("needs", pp.MethodNeeds(sampler=None))

        def defaults(self, budget: pf.Budget | None, confidence: float) -> Mapping[str, object]:
            return dict(members.get("defaults", {"mechanism": "gaussian", "accountant": "gdp"}))

        def run(self, ctx: pp.RunContext[pp.Mechanism]) -> pf.IntervalResult:
            event = ctx.plan(ctx.sensitivity(ctx.n), pp.as_gdp(ctx.budget), label="value")
            value = ctx.release(ctx.evaluate(), event, rng=ctx.generators(1)[0])
            return ctx.interval(float(value[0]) - 1, float(value[0]) + 1, float(value[0]))

    return Probe


@pytest.fixture
def probe() -> Iterator[Any]:
    names: list[str] = []

    def register(**members: Any) -> None:
        method = _method(**members)

        class Plugin:
            @pp.hookimpl
            def privframe_register_methods(self, registry: pp.MethodRegistry) -> None:
                registry.add(method)

        names.append(pf.registry.register(Plugin(), name=f"test-probe-{len(names)}"))

    yield register
    for name in names:
        pf.registry.unregister(name)


def test_a_part_of_the_wrong_protocol_is_refused_before_the_run(probe: Any) -> None:
    probe()
    x = np.random.default_rng(0).uniform(size=100)
    res = pf.confidence_interval(x, "mean", method="probe-method", budget=pf.GDP(1.0), bounds=(0, 1), rng=0)
    assert res.privacy.accountant == "gdp"
    assert res.parameters["mechanism"] == "gaussian"  # filled in from the run context
    with pytest.raises(
        pf.ConfigError,
        match=r"^mechanism: method 'probe-method' cannot use mechanism 'ptr-gdp' \(it needs a Mechanism\)",
    ):
        pf.Pipeline.build("mean", method="probe-method", budget=pf.GDP(1.0), bounds=(0, 1), mechanism="ptr-gdp")
    with pytest.raises(pf.ConfigError, match=r"^sampler: method 'probe-method' does not use a sampler"):
        pf.Pipeline.build("mean", method="probe-method", budget=pf.GDP(1.0), bounds=(0, 1), sampler="wor")


def test_a_private_method_always_charges_an_accountant(probe: Any) -> None:
    # MethodNeeds(private=True) always includes an accountant: a method cannot declare its way out of one.
    probe(defaults={"mechanism": "gaussian"})
    with pytest.raises(pf.ConfigError, match=r"^accountant: method 'probe-method' needs an accountant"):
        pf.Pipeline.build("mean", method="probe-method", budget=pf.GDP(1.0), bounds=(0, 1))
    assert pp.MethodNeeds().part("accountant") == (pp.Accountant,)
    assert pp.MethodNeeds(private=False).part("accountant") is None


def test_a_method_without_a_default_mechanism_takes_the_statistics_own(probe: Any) -> None:
    probe(defaults={"accountant": "approx-dp"})
    pipe = pf.Pipeline.build("mean", method="probe-method", budget=pf.PureDP(1.0), bounds=(0, 1))
    assert pipe.resolve().names["mechanism"] == "laplace"  # Mean.default_mechanism under a pure budget

    @attrs.frozen
    class NoDefault:
        name: ClassVar[str] = "no-default-mechanism"

        def evaluate_batch(self, x: pp.Array, index: pp.IndexMatrix) -> pp.Array:
            means: pp.Array = x[index].mean(axis=1, keepdims=True)
            return means

        def sensitivity(self, k: int, bounds: Any) -> float:
            return float(bounds.width) / k

    class Plugin:
        @pp.hookimpl
        def privframe_register_statistics(self, registry: pp.StatisticRegistry) -> None:
            registry.add(NoDefault)

    name = pf.registry.register(Plugin(), name="test-no-default")
    try:
        with pytest.raises(pf.ConfigError, match=r"^mechanism: method 'probe-method' needs a mechanism"):
            pf.Pipeline.build("no-default-mechanism", method="probe-method", budget=pf.PureDP(1.0), bounds=(0, 1))
    finally:
        pf.registry.unregister(name)


def test_the_ledger_of_every_method_names_a_registered_accountant() -> None:
    x = np.random.default_rng(5).beta(2, 5, size=3000)
    accountants = set(pf.registry.names("accountant"))
    calls: dict[str, dict[str, Any]] = {
        "cr-gs": {"budget": pf.GDP(1.0)},
        "cr-ss": {"statistic": "median", "budget": pf.GDP(4.0, delta=1e-6)},
        "dette-graw": {"budget": pf.GDP(1.0), "on_reject": "redraw", "B": 200},
        "privboot": {"budget": pf.GDP(0.5).to_approx_dp(1e-6), "B": 300, "ci": "standard"},
        "blbquant": {"budget": pf.PureDP(2.0), "R": 100, "min_block": 0},
        "privsub": {"budget": pf.ApproxDP(2.0, 1e-6)},
        "rank-quantile": {"statistic": "median", "budget": pf.PureDP(1.0)},
        "private-variance": {"budget": pf.PureDP(1.0)},
    }
    for method in pf.registry.names("method"):
        entry = pf.registry.get("method", method)
        if entry.plugin.startswith("std-") and pf.registry.create("method", method).needs.private:
            call = {"statistic": "mean", **calls[method]}
            res = pf.confidence_interval(x, call.pop("statistic"), method=method, bounds=(0, 1), rng=1, **call)
            assert res.privacy.accountant in accountants, method
            assert res.parameters["accountant"] == res.privacy.accountant, method


# ---------------------------------------------------------------------------------------------------------
# Structured errors and shared validators


def test_errors_carry_their_path_and_take_a_prefix() -> None:
    error = pf.ConfigError("must be >= 2", path="m")
    assert (error.path, error.message, str(error)) == ("m", "must be >= 2", "m: must be >= 2")
    prefixed = error.with_prefix("pipeline.sampler")
    assert isinstance(prefixed, pf.ConfigError)
    assert str(prefixed) == "pipeline.sampler.m: must be >= 2"
    assert str(pf.DataError("is empty").with_prefix("x")) == "x: is empty"
    assert pf.BudgetError("void").path is None
    copy = pickle.loads(pickle.dumps(prefixed))
    assert (type(copy), copy.path, copy.message) == (pf.ConfigError, "pipeline.sampler.m", "must be >= 2")


@pytest.mark.parametrize(
    ("validator", "good", "bad", "message"),
    [
        (pp.validators.probability, 0.5, 1.0, "must be a number in (0, 1)"),
        (pp.validators.positive, 2.0, 0.0, "must be a finite number > 0"),
        (pp.validators.finite, -3.0, float("inf"), "must be a finite number"),
        (pp.validators.boolean, False, 0, "must be true or false"),
        (pp.validators.integer_at_least(3), 3, 2, "must be an integer >= 3"),
        (pp.validators.choice("a", "b"), "a", "c", "must be one of 'a', 'b'"),
        (pp.validators.optional(pp.validators.probability), None, 2.0, "must be a number in (0, 1) or omitted"),
        (pp.validators.size, "n^(2/3)", "n^3", "expected an integer or a rule"),
    ],
)
def test_shared_validators(validator: Any, good: Any, bad: Any, message: str) -> None:
    @attrs.frozen
    class Options:
        value: Any = attrs.field(validator=validator)

    assert Options(good).value == good
    with pytest.raises(pf.ConfigError) as info:
        Options(bad)
    assert info.value.path == "value"
    assert info.value.message.startswith(message)
    assert isinstance(True, int)  # bool is an int: the numeric validators must still refuse it
    if validator is not pp.validators.boolean:
        with pytest.raises(pf.ConfigError):
            Options(True)


def test_a_plugin_option_error_reaches_the_user_under_its_full_path() -> None:
    mechanism = {"name": "ptr-gdp", "test_share": 2}
    budget = {"unit": "gdp", "mu": 1, "delta": 1e-6}
    config = {"method": "cr-ss", "statistic": "median", "bounds": [0, 1], "mechanism": mechanism, "budget": budget}
    with pytest.raises(pf.ConfigError, match=r"^pipeline\.mechanism\.test_share: must be a number in \(0, 1\)$"):
        pf.Pipeline.from_dict({"pipeline": config})
    with pytest.raises(pf.ConfigError, match=r"^sampler\.m: must be smaller than n"):
        pf.confidence_interval(np.zeros(50), "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), m=60)


# ---------------------------------------------------------------------------------------------------------
# Capabilities instead of special cases


def test_weighted_evaluation_equals_the_statistic_on_the_expanded_multiset() -> None:
    rng = np.random.default_rng(8)
    values = np.sort(rng.uniform(-1, 1, 9))
    weights = rng.multinomial(40, np.full(9, 1 / 9), size=6).astype(np.float64)
    for name, options in (("mean", {}), ("median", {}), ("quantile", {"q": 0.5})):
        statistic = pf.registry.create("statistic", name, options)
        assert isinstance(statistic, pp.WeightedStatistic)
        expanded = np.stack([np.repeat(values, row.astype(int)) for row in weights])
        direct = statistic.evaluate_batch(expanded.ravel(), np.arange(expanded.size).reshape(expanded.shape))[:, 0]
        np.testing.assert_allclose(statistic.evaluate_weighted(values, weights), direct, rtol=1e-14)


def test_weighted_selection_with_unit_weights_has_the_law_of_the_exponential_mechanism() -> None:
    """With one copy of each record, select_weighted is the exponential mechanism itself: compare the
    frequency of each piece with its exact probability (a chi-square test at a fixed seed)."""
    mechanism = pf.registry.create("mechanism", "exponential")
    median = pf.registry.create("statistic", "median")
    assert isinstance(mechanism, pp.WeightedSelectionMechanism)
    values = np.array([0.1, 0.3, 0.35, 0.8, 0.9])
    event = mechanism.plan_selection(median, pf.PureDP(2.0), label="x")
    draws = mechanism.select_weighted(
        median, values, np.ones((40_000, 5)), pf.Bounds(0, 1), event, np.random.default_rng(9)
    )
    edges = np.concatenate([[0.0], values, [1.0]])
    observed = np.histogram(draws, bins=edges)[0]
    _, log_w = quantile_log_weights(values[np.newaxis, :], 0.5, 2.0, 0.0, 1.0)
    probs = np.exp(log_w[0] - log_w[0].max())
    probs /= probs.sum()
    assert stats.chisquare(observed, probs * observed.sum()).pvalue > 0.001


# ---------------------------------------------------------------------------------------------------------
# The house (issue 26): a layout that shows the layers, a small public surface, contracts checked at build


def test_the_top_folder_holds_a_dozen_modules_and_the_analyst_surface_is_small() -> None:
    modules = sorted(path.name for path in (ROOT / "privframe").glob("*.py"))
    assert len(modules) <= 12, modules
    assert len(pf.__all__) <= 40
    assert {"confidence_interval", "Pipeline", "Session", "GDP", "Bounds", "IntervalResult"} <= set(pf.__all__)
    # authors import one module: every author name the protocols and docs use lives in privframe.plugin
    assert {"Statistic", "Mechanism", "RunContext", "MethodNeeds", "StatisticTraits", "hookimpl"} <= set(pp.__all__)


def _module_level_imports(path: Path) -> set[str]:
    """Modules imported at module level (function-level imports are the lazy ones and are allowed)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_no_module_of_the_core_imports_the_harness_or_the_auditor() -> None:
    clients = ("privframe.experiments", "privframe.audit")
    for path in (ROOT / "privframe").rglob("*.py"):
        relative = path.relative_to(ROOT / "privframe").as_posix()
        if relative.startswith(("experiments/", "audit/")) or relative == "__init__.py":
            continue  # the clients themselves, and the package's lazy attributes
        imported = _module_level_imports(path)
        assert not any(name.startswith(clients) for name in imported), relative


def test_names_pf_had_before_still_resolve_with_a_deprecation_warning() -> None:
    with pytest.warns(DeprecationWarning, match=r"pf\.RunContext moved to privframe\.plugin\.RunContext"):
        moved = pf.RunContext  # type: ignore[attr-defined]
    assert moved is pp.RunContext
    with pytest.warns(DeprecationWarning, match=r"pf\.accounting moved"):
        assert pf.accounting is pp.accounting  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        pf.no_such_name  # type: ignore[attr-defined]  # noqa: B018


@attrs.frozen
class EpsDeltaOnly:
    """A mechanism that takes (eps, delta) budgets only (an analytic Gaussian calibrated in epsilon)."""

    name: ClassVar[str] = "eps-delta-only"
    accepts: ClassVar[Mapping[pp.BudgetKind, pp.BudgetKind]] = {pf.ApproxDP: pf.ApproxDP}

    def plan(self, sensitivity: float, budget: pf.Budget, *, label: str, dimension: int = 1) -> pf.PrivacyEvent:
        if not isinstance(budget, pf.ApproxDP):
            raise pf.BudgetError("takes (epsilon, delta) budgets only", path="budget")
        return pf.PrivacyEvent(label, self.name, budget, sensitivity=sensitivity, noise_scale=sensitivity)

    def apply(self, value: pp.Array, event: pf.PrivacyEvent, rng: np.random.Generator) -> pp.Array:
        noisy: pp.Array = value + (event.noise_scale or 0.0) * rng.standard_normal(np.shape(value))
        return noisy


@pytest.fixture
def eps_delta_only() -> Iterator[None]:
    class Plugin:
        @pp.hookimpl
        def privframe_register_mechanisms(self, registry: pp.MechanismRegistry) -> None:
            registry.add(EpsDeltaOnly, asserts_privacy=True)

    name = pf.registry.register(Plugin(), name="test-eps-delta-only")
    yield
    pf.registry.unregister(name)


@pytest.mark.usefixtures("eps_delta_only")
def test_a_mechanism_the_accountant_would_hand_gdp_is_refused_before_any_data() -> None:
    # under the gdp accountant an (eps, delta) budget's per-call shares are GDP budgets
    expected = (
        r"^mechanism: mechanism 'eps-delta-only' accepts \(epsilon, delta\) budgets, but method 'cr-gs' hands it "
        r"GDP budgets through accountant 'gdp' under \(1, 1e-06\)-DP; use a mechanism that accepts them "
        r"\(gaussian\), or an accountant that hands it an accepted kind \(approx-dp\)"
    )
    kwargs: dict[str, Any] = {"method": "cr-gs", "budget": pf.ApproxDP(1.0, 1e-6), "bounds": (0, 1)}
    with pytest.raises(pf.ConfigError, match=expected):
        pf.Pipeline.build("mean", mechanism="eps-delta-only", accountant="gdp", **kwargs)
    with pytest.raises(pf.ConfigError, match=expected):
        pf.confidence_interval(Untouchable(2_000_000), "mean", mechanism="eps-delta-only", accountant="gdp", **kwargs)  # type: ignore[arg-type]
    # the accountant that hands it what it accepts makes the pipeline build, and is the default one then
    pf.Pipeline.build("mean", mechanism="eps-delta-only", accountant="approx-dp", **kwargs)
    assert pf.Pipeline.build("mean", mechanism="eps-delta-only", **kwargs).resolve().names["accountant"] == "approx-dp"


def test_an_accountant_that_cannot_split_the_budget_is_refused_at_build() -> None:
    with pytest.raises(pf.ConfigError, match=r"^accountant: accountant 'gdp' cannot split a pure epsilon budget"):
        pf.Pipeline.build("mean", method="cr-gs", budget=pf.PureDP(1.0), bounds=(0, 1), accountant="gdp")


def test_a_statistic_a_method_cannot_use_is_refused_at_build_with_the_methods_that_can() -> None:
    with pytest.raises(
        pf.ConfigError, match=r"^statistic: method 'cr-ss' needs a statistic with a smooth .* accept it: "
    ):
        pf.Pipeline.build(
            "logistic-slope", method="cr-ss", budget=pf.GDP(1.0, delta=1e-6), feature_bounds=[[-1.0, 1.0]]
        )
    from privframe.plugin.contracts import explain_statistic

    ks = pf.registry.get("statistic", "ks").factory
    verdicts = {v.method: v for v in explain_statistic(ks, pf.registry)}  # type: ignore[arg-type]
    assert verdicts["dette-graw"].accepts
    assert verdicts["privsub"].accepts
    assert not verdicts["cr-gs"].accepts
    assert "centred" in verdicts["cr-gs"].reason
    assert not verdicts["privboot"].accepts
    assert "bootstrap" in verdicts["privboot"].reason


def test_registration_hooks_run_through_pluggy_hook_callers() -> None:
    """pluggy's hook-call monitoring sees every registration call, one per plugin and hook."""
    seen: list[tuple[str, tuple[str, ...]]] = []
    reg = PluginRegistry()
    pm = reg._manager()
    undo = pm.add_hookcall_monitoring(
        lambda hook_name, impls, kwargs: seen.append((hook_name, tuple(pm.get_name(i.plugin) or "" for i in impls))),
        lambda outcome, hook_name, impls, kwargs: None,
    )
    try:
        assert "mean" in reg.names("statistic")
    finally:
        undo()
    assert ("privframe_register_statistics", ("std-statistics",)) in seen
    assert all(len(plugins) == 1 for _, plugins in seen)  # attributed one plugin at a time


def test_the_front_door_parameters_are_defined_once() -> None:
    import inspect

    from privframe.pipeline.request import request

    shared = list(inspect.signature(request).parameters)
    assert list(inspect.signature(pf.confidence_interval).parameters) == ["x", *shared]
    assert list(inspect.signature(pf.confidence_region).parameters) == ["x", *shared]
    assert list(inspect.signature(pf.Session.confidence_interval).parameters) == ["self", "x", *shared]
    assert list(inspect.signature(pf.Pipeline.build).parameters) == shared
    assert "budget : GDP, ApproxDP, PureDP or None" in (pf.confidence_interval.__doc__ or "")
    with pytest.raises(pf.ConfigError, match=r"^rng: a pipeline is a recipe"):
        pf.Pipeline.build("mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), rng=1)


def test_the_run_context_is_lean() -> None:
    public = [name for name in dir(pp.RunContext) if not name.startswith("_")]
    assert len(public) <= 28, public
