"""privframe: differentially private confidence intervals and regions via resampling.

The core knows no particular statistic, mechanism or method; those are plugins found through the
``privframe`` entry-point group (the standard ones live in ``privframe_std``). The experiment harness
(``pf.experiments``) and the auditor (``pf.audit``) are clients of the core, imported on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from privframe import accounting, estimators, evaluation, noise, resampling, validators
from privframe._rng import RngLike, as_seed_sequence, spawn_generators
from privframe.api import confidence_interval, confidence_region
from privframe.budgets import GDP, MAX_DELTA, ApproxDP, Budget, PureDP, as_gdp, budget_from_table, budget_to_table
from privframe.context import RunContext
from privframe.curves import PrivacyCurve, privacy_curve
from privframe.data import as_data, load_data
from privframe.errors import (
    BudgetError,
    ConfigError,
    DataError,
    PluginError,
    PrivacyWarning,
    PrivframeError,
    PTRFailed,
    SamplerRejected,
)
from privframe.estimators import CallableEstimator, MechanismEstimator, PrivateEstimator
from privframe.hookspecs import hookimpl
from privframe.ledger import Ledger, PrivacyEvent, Subsample, event_pld
from privframe.method import Method
from privframe.pipeline import Part, Pipeline, ResolvedPipeline
from privframe.protocols import (
    Accountant,
    BatchSmoothMechanism,
    DecomposableStatistic,
    DescribedNoise,
    DirectStatistic,
    Mechanism,
    PopulationStatistic,
    PreparingStatistic,
    QuantileStatistic,
    RangedStatistic,
    RatedStatistic,
    Sampler,
    SelectionMechanism,
    SmoothMechanism,
    SmoothStatistic,
    Statistic,
    StatisticWithDefaultMechanism,
    WeightedSelectionMechanism,
    WeightedStatistic,
)
from privframe.registry import (
    AccountantRegistry,
    MechanismRegistry,
    MethodRegistry,
    PluginEntry,
    SamplerRegistry,
    StatisticRegistry,
    registry,
)
from privframe.resampling import BlockSeeds, Resamples, RunOptions
from privframe.results import IntervalResult, RegionResult
from privframe.session import Session, SessionCall
from privframe.sizes import SizeRule
from privframe.spending import PrivacySpender
from privframe.types import Array, Bounds, Design, IndexMatrix, L2Ball, SmoothRelease, SmoothReleaseBatch

if TYPE_CHECKING:
    from privframe import audit, experiments

__version__ = "0.1.0"

_LAZY = ("audit", "experiments")


def __getattr__(name: str) -> Any:
    """Import the auditor and the experiment harness on first use, so ``import privframe`` stays light."""
    if name in _LAZY:
        module = importlib.import_module(f"privframe.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'privframe' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "GDP",
    "Accountant",
    "AccountantRegistry",
    "ApproxDP",
    "Array",
    "BatchSmoothMechanism",
    "DescribedNoise",
    "BlockSeeds",
    "Bounds",
    "Budget",
    "BudgetError",
    "CallableEstimator",
    "ConfigError",
    "DataError",
    "DecomposableStatistic",
    "Design",
    "DirectStatistic",
    "IndexMatrix",
    "IntervalResult",
    "L2Ball",
    "Ledger",
    "MAX_DELTA",
    "Mechanism",
    "MechanismEstimator",
    "MechanismRegistry",
    "Method",
    "MethodRegistry",
    "PTRFailed",
    "Part",
    "Pipeline",
    "PluginEntry",
    "PluginError",
    "PopulationStatistic",
    "PreparingStatistic",
    "PrivacyCurve",
    "PrivacyEvent",
    "PrivacySpender",
    "PrivacyWarning",
    "PrivateEstimator",
    "PrivframeError",
    "PureDP",
    "QuantileStatistic",
    "RangedStatistic",
    "RatedStatistic",
    "RegionResult",
    "Resamples",
    "ResolvedPipeline",
    "RngLike",
    "RunContext",
    "RunOptions",
    "Sampler",
    "SamplerRegistry",
    "SamplerRejected",
    "SelectionMechanism",
    "Session",
    "SessionCall",
    "SizeRule",
    "SmoothMechanism",
    "SmoothRelease",
    "SmoothReleaseBatch",
    "SmoothStatistic",
    "Statistic",
    "StatisticRegistry",
    "StatisticWithDefaultMechanism",
    "Subsample",
    "WeightedSelectionMechanism",
    "WeightedStatistic",
    "__version__",
    "accounting",
    "as_data",
    "as_gdp",
    "as_seed_sequence",
    "audit",
    "budget_from_table",
    "budget_to_table",
    "confidence_interval",
    "confidence_region",
    "estimators",
    "evaluation",
    "event_pld",
    "experiments",
    "hookimpl",
    "load_data",
    "noise",
    "privacy_curve",
    "registry",
    "resampling",
    "spawn_generators",
    "validators",
]
