"""privframe: differentially private confidence intervals and regions via resampling.

The core knows no particular statistic, mechanism or method; those are plugins found through the
``privframe`` entry-point group (the standard ones live in ``privframe_std``).
"""

from __future__ import annotations

from privframe import accounting, audit, engine, estimators, experiments
from privframe._rng import RngLike, as_seed_sequence, spawn_generators
from privframe.api import confidence_interval, confidence_region
from privframe.budgets import GDP, ApproxDP, Budget, PureDP, as_gdp
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
from privframe.ledger import Ledger, PrivacyEvent
from privframe.pipeline import Part, Pipeline
from privframe.protocols import (
    Accountant,
    BlockSeeds,
    DirectStatistic,
    Mechanism,
    Method,
    Parts,
    PreparingStatistic,
    QuantileStatistic,
    RatedStatistic,
    Resamples,
    Sampler,
    SelectionMechanism,
    SmoothMechanism,
    SmoothRelease,
    SmoothStatistic,
    Statistic,
    StatisticWithDefaultMechanism,
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
from privframe.results import IntervalResult, RegionResult
from privframe.spending import PrivacySpender
from privframe.types import Array, Bounds, IndexMatrix, L2Ball

__version__ = "0.1.0"

__all__ = [
    "GDP",
    "Accountant",
    "BlockSeeds",
    "AccountantRegistry",
    "ApproxDP",
    "Array",
    "Bounds",
    "Budget",
    "BudgetError",
    "CallableEstimator",
    "ConfigError",
    "DataError",
    "DirectStatistic",
    "IndexMatrix",
    "IntervalResult",
    "L2Ball",
    "Ledger",
    "Mechanism",
    "MechanismEstimator",
    "MechanismRegistry",
    "Method",
    "MethodRegistry",
    "PTRFailed",
    "PrivacyWarning",
    "Part",
    "Parts",
    "Pipeline",
    "PluginEntry",
    "PluginError",
    "PreparingStatistic",
    "PrivacyEvent",
    "PrivacySpender",
    "PrivateEstimator",
    "PrivframeError",
    "PureDP",
    "QuantileStatistic",
    "RatedStatistic",
    "SmoothMechanism",
    "SmoothRelease",
    "SmoothStatistic",
    "RegionResult",
    "Resamples",
    "RngLike",
    "Sampler",
    "SamplerRegistry",
    "SamplerRejected",
    "SelectionMechanism",
    "Statistic",
    "StatisticRegistry",
    "StatisticWithDefaultMechanism",
    "__version__",
    "accounting",
    "as_data",
    "as_gdp",
    "as_seed_sequence",
    "audit",
    "confidence_interval",
    "confidence_region",
    "engine",
    "estimators",
    "experiments",
    "hookimpl",
    "load_data",
    "registry",
    "spawn_generators",
]
