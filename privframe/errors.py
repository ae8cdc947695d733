"""The privframe error hierarchy.

Every error privframe raises on purpose is a :class:`PrivframeError`. An error names what was wrong in two
fields: ``path``, the option path it is about (``"m"``, ``"sampler.m"``, ``"pipeline.budget.epsilon"``), and
``message``, the rule that was broken. ``str(error)`` is ``"path: message"``. Code that catches an error
raised deeper down adds its own prefix with :meth:`PrivframeError.with_prefix`; nothing ever parses a
message. Messages never contain data values, because a message that prints a record leaks it.
"""

from __future__ import annotations

from typing import Any, Self

__all__ = [
    "BudgetError",
    "ConfigError",
    "CoverageWarning",
    "DataError",
    "MissingExtraError",
    "PTRFailed",
    "PluginError",
    "PrivacyWarning",
    "PrivframeError",
    "SamplerRejected",
    "join_path",
]


def join_path(prefix: str | None, path: str | None) -> str | None:
    """``prefix.path``, or whichever of the two is set (None when neither is)."""
    if prefix and path:
        return f"{prefix}.{path}"
    return prefix or path or None


class PrivframeError(ValueError):
    """Root of all privframe errors (a ``ValueError``, so generic handlers still catch it).

    Parameters
    ----------
    message : str
        The rule that was broken, without the path (``"must be a number in (0, 1)"``).
    path : str, optional
        The option path the error is about (``"sampler.m"``). An error without a path is rendered as its
        message alone.

    Examples
    --------
    >>> import privframe as pf
    >>> error = pf.ConfigError("must be >= 2", path="m")
    >>> str(error), str(error.with_prefix("sampler"))
    ('m: must be >= 2', 'sampler.m: must be >= 2')
    """

    def __init__(self, message: str, *, path: str | None = None) -> None:
        self.message = message
        self.path = path or None
        super().__init__(f"{self.path}: {message}" if self.path else message)

    def with_prefix(self, prefix: str | None) -> Self:
        """The same error under ``prefix`` (``m`` becomes ``sampler.m``), keeping its cause and notes."""
        if not prefix:
            return self
        error = self._copy(join_path(prefix, self.path))
        error.__cause__ = self.__cause__
        error.__suppress_context__ = self.__suppress_context__
        for note in getattr(self, "__notes__", ()):
            error.add_note(note)
        return error

    def _copy(self, path: str | None) -> Self:
        return type(self)(self.message, path=path)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.message, self.path), self.__dict__)


def _rebuild(cls: type[PrivframeError], message: str, path: str | None) -> PrivframeError:
    return cls(message, path=path)


class ConfigError(PrivframeError):
    """A setting (part name, option, public bounds, confidence) is unknown, missing or invalid; names its path."""


class DataError(PrivframeError):
    """The data are unusable (non-numeric, NaN/inf, empty, wrong shape for the statistic or its bounds)."""


class BudgetError(PrivframeError):
    """A privacy budget is invalid, cannot be honoured by a method, or would be exceeded."""


class MissingExtraError(ConfigError, ImportError):
    """A feature needs an optional extra that is not installed; ``extra`` names it (``"plot"``).

    It is also an ``ImportError``, so code that guards an optional import keeps working.

    Examples
    --------
    >>> from privframe.errors import MissingExtraError
    >>> error = MissingExtraError("forest_plot needs matplotlib", extra="plot")
    >>> str(error), error.extra
    ('forest_plot needs matplotlib: pip install "privframe[plot]"', 'plot')
    """

    def __init__(self, message: str, *, extra: str = "", path: str | None = None) -> None:
        self.extra = extra
        hint = f': pip install "privframe[{extra}]"' if extra and "pip install" not in message else ""
        super().__init__(message + hint, path=path)

    def _copy(self, path: str | None) -> Self:
        error = type(self)(self.message, path=path)
        error.extra = self.extra
        return error


class PluginError(PrivframeError):
    """A plugin failed to load or register, or two plugins claim the same name."""


class SamplerRejected(PrivframeError):
    """A multiplicity-constrained sampler rejected its draw.

    This is a documented outcome (probability at most ``rho``), not a bug: the decision depends only on
    the indices, so it costs no privacy, and nothing is released.
    """


class PTRFailed(PrivframeError):
    """A propose-test-release test failed; nothing is released.

    The test itself was run on the data, so its share of the budget counts as spent: ``ledger`` holds
    every event the run charged up to and including the failed test (None when raised outside a run).
    Retrying spends the budget again; a :class:`privframe.Session` charges both attempts.
    """

    ledger: Any = None  # a privframe.Ledger once a run attaches it (not imported here: no import cycle)


class PrivacyWarning(UserWarning):
    """A setting is valid but weakens the guarantee in a way the user should see (e.g. delta >= 1/n)."""


class CoverageWarning(UserWarning):
    """A result's coverage was not measured where it was produced (``method="auto"`` below the method map's
    smallest n, or for a quantile level the map did not measure), or the result carries no information (the
    whole range)."""


def caller_stacklevel() -> int:
    """The ``stacklevel`` for ``warnings.warn`` that points at the first frame outside privframe and its
    standard plugins (the user's call), however deep inside the library the warning is raised."""
    import os
    import sys

    roots = tuple(
        os.path.dirname(os.path.abspath(str(getattr(sys.modules[name], "__file__", "") or "")))
        for name in ("privframe", "privframe_std")
        if name in sys.modules
    )
    frame = sys._getframe(1)
    level = 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(roots):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level
