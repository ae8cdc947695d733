"""The privframe error hierarchy.

Every error privframe raises on purpose is a :class:`PrivframeError`. Messages name the parameter and
the rule that was broken; they never contain data values, because a message that prints a record
leaks it.
"""

from __future__ import annotations

__all__ = [
    "BudgetError",
    "ConfigError",
    "DataError",
    "PTRFailed",
    "PluginError",
    "PrivacyWarning",
    "PrivframeError",
    "SamplerRejected",
]


class PrivframeError(ValueError):
    """Root of all privframe errors (a ``ValueError``, so generic handlers still catch it)."""


class ConfigError(PrivframeError):
    """A setting (part name, option, public bounds, confidence) is unknown, missing or invalid; names its path."""


class DataError(PrivframeError):
    """The data are unusable (non-numeric, NaN/inf, empty, wrong shape for the statistic or its bounds)."""


class BudgetError(PrivframeError):
    """A privacy budget is invalid, cannot be honoured by a method, or would be exceeded."""


class PluginError(PrivframeError):
    """A plugin failed to load or register, or two plugins claim the same name."""


class SamplerRejected(PrivframeError):
    """A multiplicity-constrained sampler rejected its draw.

    This is a documented outcome (probability at most ``rho``), not a bug: the decision depends only on
    the indices, so it costs no privacy, and nothing is released.
    """


class PTRFailed(PrivframeError):
    """A propose-test-release test failed; nothing is released.

    The test itself was run on the data, so its share of the budget counts as spent.
    """


class PrivacyWarning(UserWarning):
    """A setting is valid but weakens the guarantee in a way the user should see (e.g. delta >= 1/n)."""
