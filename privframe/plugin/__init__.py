"""Everything a plugin author needs, in one module: ``import privframe.plugin as pp``.

A plugin is a module (or any object) with registration hooks marked ``@pp.hookimpl``; each hook receives a
typed registry and calls ``registry.add(factory)``. The parts are checked structurally against the protocols
below (no base class), and what they declare (a statistic's :class:`StatisticTraits`, a method's
:class:`MethodNeeds`, a mechanism's ``accepts``, an accountant's ``per_call_units``) is checked when a
pipeline is built, before any data are read. ``docs/plugins.md`` walks through every kind of part, and
``docs/architecture.md`` shows where each sits.

The names, by what they are for:

- values parts exchange: ``Array``, ``IndexMatrix``, ``Bounds``, ``L2Ball``, ``Design``, ``Budget``, ``GDP``,
  ``ApproxDP``, ``PureDP``, ``PrivacyEvent``, ``RankedData``, ``Subsample``, ``LatticePlan``, ``FloatNoise``,
  ``SmoothRelease``, ``SmoothReleaseBatch``, ``Resamples``, ``IntervalResult``, ``RegionResult`` (either: ``Result``);
- the protocols: ``Statistic`` (and its capabilities ``RatedStatistic``, ``DirectStatistic``,
  ``PreparingStatistic``, ``ShapedStatistic``, ``SmoothStatistic``, ``SortedStatistic``, ``SortedSmoothStatistic``,
  ``WeightedStatistic``,
  ``DecomposableStatistic``, ``PlainSumStatistic``, ``RangedStatistic``, ``PopulationStatistic``), ``Sampler`` (and
  ``SummingSampler``, ``SortingSampler``),
  ``Mechanism``, ``SmoothMechanism``,
  ``BatchSmoothMechanism``, ``SelectionMechanism``, ``WeightedSelectionMechanism``, ``DescribedNoise``,
  ``Accountant``, ``Method``, ``ChecksDesign`` (with the ``PublicCall`` it checks);
- declarations: ``StatisticTraits`` (and ``traits_of``, a statistic's traits or the defaults), ``MethodNeeds``,
  ``StatisticNeed``;
- a method's run: ``RunContext`` (with its ``Coordinates`` and ``Preparation``), ``noise_law``,
  ``order_statistic_index``, ``split_budget``, the private estimators
  ``PrivateEstimator``, ``MechanismEstimator``, ``CallableEstimator``;
- registration: ``hookimpl``, the typed registries, ``registry`` (the process-wide one);
- modules: ``validators`` (option validators), ``accounting`` (conversions and compositions), ``noise``
  (exact samplers and lattice releases), ``sizes`` (resample-size rules);
- the errors of :mod:`privframe.errors` and ``as_gdp``.
"""

from __future__ import annotations

from privframe import validators
from privframe._typing import Array, IndexMatrix
from privframe.bounds import Bounds, L2Ball
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
from privframe.plugin.context import RunContext
from privframe.plugin.estimators import CallableEstimator, MechanismEstimator, PrivateEstimator
from privframe.plugin.evaluation import Coordinates, Preparation, order_statistic_index
from privframe.plugin.hookspecs import hookimpl
from privframe.plugin.method import ChecksDesign, Method, PublicCall
from privframe.plugin.noise_laws import NoiseLaw, noise_law
from privframe.plugin.protocols import (
    Accountant,
    BatchSmoothMechanism,
    BudgetKind,
    DecomposableStatistic,
    DescribedNoise,
    DirectStatistic,
    Mechanism,
    PlainSumStatistic,
    PopulationStatistic,
    PreparingStatistic,
    RangedStatistic,
    RatedStatistic,
    Sampler,
    SelectionMechanism,
    ShapedStatistic,
    SmoothMechanism,
    SmoothStatistic,
    SortedSmoothStatistic,
    SortedStatistic,
    SortingSampler,
    Statistic,
    SummingSampler,
    WeightedSelectionMechanism,
    WeightedStatistic,
)
from privframe.plugin.registration import (
    AccountantRegistry,
    MechanismRegistry,
    MethodRegistry,
    SamplerRegistry,
    StatisticRegistry,
)
from privframe.plugin.registry import registry
from privframe.plugin.traits import MethodNeeds, StatisticNeed, StatisticTraits, traits_of
from privframe.privacy import accounting, noise
from privframe.privacy.budgets import GDP, ApproxDP, Budget, PureDP, as_gdp, split_budget
from privframe.privacy.events import PrivacyEvent, Subsample
from privframe.privacy.noise import FloatNoise, LatticePlan
from privframe.privacy.releases import SmoothRelease, SmoothReleaseBatch
from privframe.resampling import sizes
from privframe.resampling.blocks import Resamples
from privframe.resampling.design import Design
from privframe.resampling.ranked import RankedData
from privframe.results import IntervalResult, RegionResult, Result

__all__ = [
    "GDP",
    "Accountant",
    "AccountantRegistry",
    "ApproxDP",
    "Array",
    "BatchSmoothMechanism",
    "Bounds",
    "Budget",
    "BudgetError",
    "BudgetKind",
    "CallableEstimator",
    "ChecksDesign",
    "Coordinates",
    "ConfigError",
    "DataError",
    "DecomposableStatistic",
    "DescribedNoise",
    "Design",
    "DirectStatistic",
    "FloatNoise",
    "IndexMatrix",
    "IntervalResult",
    "L2Ball",
    "LatticePlan",
    "Mechanism",
    "MechanismEstimator",
    "MechanismRegistry",
    "Method",
    "MethodNeeds",
    "MethodRegistry",
    "NoiseLaw",
    "PTRFailed",
    "PluginError",
    "PlainSumStatistic",
    "PopulationStatistic",
    "Preparation",
    "PreparingStatistic",
    "PrivacyEvent",
    "PrivacyWarning",
    "PrivateEstimator",
    "PrivframeError",
    "PublicCall",
    "PureDP",
    "RankedData",
    "RangedStatistic",
    "RatedStatistic",
    "RegionResult",
    "Resamples",
    "Result",
    "RunContext",
    "Sampler",
    "SamplerRegistry",
    "SamplerRejected",
    "SelectionMechanism",
    "ShapedStatistic",
    "SmoothMechanism",
    "SmoothRelease",
    "SmoothReleaseBatch",
    "SmoothStatistic",
    "SortedSmoothStatistic",
    "SortedStatistic",
    "SortingSampler",
    "Statistic",
    "StatisticNeed",
    "StatisticRegistry",
    "StatisticTraits",
    "Subsample",
    "SummingSampler",
    "WeightedSelectionMechanism",
    "WeightedStatistic",
    "accounting",
    "as_gdp",
    "hookimpl",
    "noise",
    "noise_law",
    "order_statistic_index",
    "registry",
    "sizes",
    "split_budget",
    "traits_of",
    "validators",
]
