"""privframe: differentially private confidence intervals and regions via resampling.

``import privframe as pf`` gives the analyst's names: the front door (``confidence_interval``,
``confidence_region``), budgets, bounds (and ``suggest_bounds``, which estimates them privately), results
and their ledgers, pipelines, sessions and errors. Plugin authors import :mod:`privframe.plugin`
(``import privframe.plugin as pp``), which holds everything a plugin needs. The core knows no particular
statistic, mechanism or method: those are plugins found through the ``privframe`` entry-point group (the
standard ones live in ``privframe_std``). The experiment harness (``pf.experiments``) and the auditor
(``pf.audit``) are clients of the core, imported on first use.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

from privframe.api import confidence_interval, confidence_region
from privframe.bounds import Bounds, L2Ball
from privframe.data.arrays import load_data
from privframe.errors import (
    BudgetError,
    ConfigError,
    CoverageWarning,
    DataError,
    PluginError,
    PrivacyWarning,
    PrivframeError,
    PTRFailed,
    SamplerRejected,
)
from privframe.pipeline.build import Pipeline
from privframe.pipeline.parts import Part
from privframe.plugin.registry import registry
from privframe.privacy.budgets import GDP, MAX_DELTA, ApproxDP, Budget, PureDP, budget_from_table
from privframe.privacy.curves import PrivacyCurve, privacy_curve
from privframe.privacy.events import PrivacyEvent
from privframe.privacy.ledger import Ledger, event_pld
from privframe.results import IntervalResult, RegionResult, summary_table
from privframe.results.plots import forest_plot, plot_result
from privframe.session import Session
from privframe.suggest import suggest_bounds

if TYPE_CHECKING:
    from privframe import audit, experiments, plugin

__version__ = "0.1.0"

_LAZY = ("audit", "experiments", "plugin")

_MOVED = {
    **{
        name: f"privframe.plugin.{name}"
        for name in [
            "Accountant",
            "AccountantRegistry",
            "Array",
            "BatchSmoothMechanism",
            "CallableEstimator",
            "DecomposableStatistic",
            "DescribedNoise",
            "Design",
            "DirectStatistic",
            "IndexMatrix",
            "Mechanism",
            "MechanismEstimator",
            "MechanismRegistry",
            "Method",
            "MethodRegistry",
            "PopulationStatistic",
            "PreparingStatistic",
            "PrivateEstimator",
            "RangedStatistic",
            "RatedStatistic",
            "Resamples",
            "RunContext",
            "Sampler",
            "SamplerRegistry",
            "SelectionMechanism",
            "SmoothMechanism",
            "SmoothRelease",
            "SmoothReleaseBatch",
            "SmoothStatistic",
            "Statistic",
            "StatisticRegistry",
            "Subsample",
            "WeightedSelectionMechanism",
            "WeightedStatistic",
            "accounting",
            "as_gdp",
            "hookimpl",
            "noise",
            "validators",
        ]
    },
    "budget_to_table": "privframe.privacy.budgets.budget_to_table",
    "as_data": "privframe.data.as_data",
    "as_seed_sequence": "privframe._rng.as_seed_sequence",
    "spawn_generators": "privframe._rng.spawn_generators",
    "RngLike": "privframe._rng.RngLike",
    "BlockSeeds": "privframe.resampling.seeds.BlockSeeds",
    "RunOptions": "privframe.resampling.blocks.RunOptions",
    "SizeRule": "privframe.resampling.sizes.SizeRule",
    "PrivacySpender": "privframe.plugin.spending.PrivacySpender",
    "PluginEntry": "privframe.plugin.registration.PluginEntry",
    "ResolvedPipeline": "privframe.pipeline.resolve.ResolvedPipeline",
    "SessionCall": "privframe.session.SessionCall",
    "estimators": "privframe.plugin.estimators",
    "evaluation": "privframe.plugin.evaluation",
    "resampling": "privframe.resampling.blocks",
}
"""Names ``pf`` had before 0.2 and where they live now: they still resolve, with a ``DeprecationWarning``
(removed in the next release; ``CHANGELOG.md`` lists every move)."""


def _resolve(target: str) -> Any:
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError:
        module, _, attribute = target.rpartition(".")
        return getattr(importlib.import_module(module), attribute)


def __getattr__(name: str) -> Any:
    """Import the auditor, the harness and the plugin API on first use; resolve moved names with a warning."""
    if name in _LAZY:
        module = importlib.import_module(f"privframe.{name}")
        globals()[name] = module
        return module
    if name in _MOVED:
        target = _MOVED[name]
        warnings.warn(
            f"pf.{name} moved to {target} (plugin authors: import privframe.plugin as pp); "
            "the old name goes away in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return _resolve(target)
    raise AttributeError(f"module 'privframe' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "GDP",
    "MAX_DELTA",
    "ApproxDP",
    "Bounds",
    "Budget",
    "BudgetError",
    "ConfigError",
    "CoverageWarning",
    "DataError",
    "IntervalResult",
    "L2Ball",
    "Ledger",
    "PTRFailed",
    "Part",
    "Pipeline",
    "PluginError",
    "PrivacyCurve",
    "PrivacyEvent",
    "PrivacyWarning",
    "PrivframeError",
    "PureDP",
    "RegionResult",
    "SamplerRejected",
    "Session",
    "__version__",
    "audit",
    "budget_from_table",
    "confidence_interval",
    "confidence_region",
    "event_pld",
    "experiments",
    "forest_plot",
    "load_data",
    "plot_result",
    "plugin",
    "privacy_curve",
    "registry",
    "suggest_bounds",
    "summary_table",
]
