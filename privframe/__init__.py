"""privframe: differentially private confidence intervals and regions via resampling.

The core knows no particular statistic, mechanism or method; those are plugins found through the
``privframe`` entry-point group (the standard ones live in ``privframe_std``). The experiment harness
(``pf.experiments``) and the auditor (``pf.audit``) are clients of the core, imported on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from privframe import validators
from privframe._rng import RngLike, as_seed_sequence, spawn_generators
from privframe._typing import Array, IndexMatrix
from privframe.api import confidence_interval, confidence_region
from privframe.bounds import Bounds, L2Ball
from privframe.data.arrays import as_data, load_data
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
from privframe.pipeline.build import Part, Pipeline, ResolvedPipeline
from privframe.plugin import estimators, evaluation
from privframe.plugin.context import RunContext
from privframe.plugin.estimators import CallableEstimator, MechanismEstimator, PrivateEstimator
from privframe.plugin.hookspecs import hookimpl
from privframe.plugin.method import Method
from privframe.plugin.protocols import (
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
from privframe.plugin.registry import (
    AccountantRegistry,
    MechanismRegistry,
    MethodRegistry,
    PluginEntry,
    SamplerRegistry,
    StatisticRegistry,
    registry,
)
from privframe.plugin.spending import PrivacySpender
from privframe.privacy import accounting, noise
from privframe.privacy.budgets import (
    GDP,
    MAX_DELTA,
    ApproxDP,
    Budget,
    PureDP,
    as_gdp,
    budget_from_table,
    budget_to_table,
)
from privframe.privacy.curves import PrivacyCurve, privacy_curve
from privframe.privacy.events import PrivacyEvent, Subsample
from privframe.privacy.ledger import Ledger, event_pld
from privframe.privacy.releases import SmoothRelease, SmoothReleaseBatch
from privframe.resampling import blocks as resampling
from privframe.resampling.blocks import Resamples, RunOptions
from privframe.resampling.design import Design
from privframe.resampling.seeds import BlockSeeds
from privframe.resampling.sizes import SizeRule
from privframe.results import IntervalResult, RegionResult
from privframe.session import Session, SessionCall

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
