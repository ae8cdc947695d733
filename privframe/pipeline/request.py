"""The front door's parameters, defined once.

``pf.confidence_interval``, ``pf.confidence_region``, their ``Session`` counterparts and ``Pipeline.build``
all take the parameters of :func:`request`: the decorators below give each of them that signature (for
mypy through a ``ParamSpec``, at run time through ``__signature__``) and its documentation, so the
parameters are written, typed and documented in one place.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

import attrs
import numpy.typing as npt

from privframe._rng import RngLike
from privframe.errors import ConfigError
from privframe.pipeline.parts import Part, PartSpec, plain_options, same_setting
from privframe.privacy.budgets import Budget

if TYPE_CHECKING:
    from privframe.plugin.registry import PluginRegistry

__all__ = ["PARAMETERS", "Request", "forward", "front_door", "request", "session_method"]

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")


_PART_ARGUMENTS = ("statistic", "method", "sampler", "mechanism", "accountant")


def _table_options(spec: object) -> Mapping[str, Any]:
    """The options a part's table (or ``Part``) sets itself; nothing for a bare name or a malformed spec (which
    the build refuses with its own error)."""
    if isinstance(spec, Part):
        return spec.options
    if isinstance(spec, Mapping):
        return {key: value for key, value in spec.items() if key != "name"}
    return {}


@attrs.frozen
class Request:
    """The front door's arguments, as given (validated when the pipeline is built).

    An option set both in a part's table and as a keyword (``sampler={"name": "wor", "B": 500}, B=1000``) is a
    conflict, refused here with a ``ConfigError`` naming the option, before anything is built or read; the same
    value in both places is accepted. Integer options (``np.int64(500)``) are kept as Python ints.
    """

    statistic: PartSpec
    method: PartSpec
    budget: Budget | None
    bounds: object = None
    confidence: object = 0.9
    sampler: PartSpec | None = None
    mechanism: PartSpec | None = None
    accountant: PartSpec | None = None
    rng: RngLike = None
    columns: Sequence[str] | None = None
    reg: PluginRegistry | None = None
    options: Mapping[str, Any] = attrs.field(factory=dict, converter=plain_options)

    def __attrs_post_init__(self) -> None:
        for kind in _PART_ARGUMENTS:
            table = _table_options(getattr(self, kind))
            for key, value in self.options.items():
                if key in table and not same_setting(table[key], value):
                    raise ConfigError(
                        f"given both in {kind} and as {key}=... with different values; give it in one place",
                        path=key,
                    )


def request(
    statistic: PartSpec,
    *,
    method: PartSpec,
    budget: Budget | None,
    bounds: object = None,
    confidence: float = 0.9,
    sampler: PartSpec | None = None,
    mechanism: PartSpec | None = None,
    accountant: PartSpec | None = None,
    rng: RngLike = None,
    columns: Sequence[str] | None = None,
    reg: PluginRegistry | None = None,
    **options: Any,
) -> Request:
    """The front door's arguments as one record (the single definition of their names, types and defaults)."""
    return Request(
        statistic, method, budget, bounds, confidence, sampler, mechanism, accountant, rng, columns, reg, options
    )


PARAMETERS = """\
statistic : str, Part or table
    A registered statistic (``"mean"``, ``"median"``...), with options as a table ``{"name": ..., ...}``
    or as keywords.
method : str, Part or table
    A registered method (``"cr-gs"``, ``"subsampling"``...), or ``"auto"``: the method the method map
    expects to give the narrowest valid interval for this statistic, n, budget and confidence (public
    information only, never the data values). ``res.method`` is then the method that ran and
    ``res.diagnostics["auto"]`` says why.
budget : GDP, ApproxDP, PureDP or None
    The total privacy budget; ``None`` only for non-private references.
bounds : (low, high), Bounds or L2Ball, optional
    Public data bounds, never computed from the data. Values outside are clipped.
confidence : float, default 0.9
    Nominal coverage ``1 - alpha``, in (0, 1).
sampler, mechanism, accountant : str, Part or table, optional
    Override the method's default parts (not with ``method="auto"``, which runs the chosen method's
    defaults).
rng : None, int, SeedSequence or Generator
    ``None`` (fresh OS entropy) for a real release; a seed makes runs reproducible and voids privacy for
    anyone who knows it. A pipeline takes it when it runs, not when it is built.
columns : list of str, optional
    The columns of a table to use, in order (all of them by default).
reg : PluginRegistry, optional
    The registry the names are resolved in (default ``pf.registry``).
**options
    Options for the parts (``m``, ``B``, ``rho``, ``on_reject``, method options...). Each goes to every
    part that declares it; an option no part declares raises ``ConfigError``. ``memory_budget`` (bytes),
    ``workers`` (threads) and ``progress`` (a bar on a terminal) are run options: they never change the
    result."""
"""The numpydoc Parameters entries of :func:`request`, shared by every front door's docstring."""

_DATA = """\
x : array_like, pandas DataFrame, numpy structured array or Dask array
    The data, shape ``(n,)`` (or ``(n, d)`` for statistics of multivariate records); from a table, the
    columns ``columns`` in order. A Dask array is never gathered: a decomposable statistic (the mean) is
    computed on its workers by a method that accepts distributed data (``cr-gs``, ``dette-graw``);
    anything else is a ``ConfigError`` (``docs/cluster.md``)."""


_REPEATS = """\
The budgets of calls on the same data add up. From the 5th plain (session-less) private call on the same
array in one process (then the 10th, 20th, ...), a :class:`privframe.PrivacyWarning` suggests charging them
to one :class:`privframe.Session`. The data are recognised by a keyed hash (a random per-process key) kept
in memory only; whether the warning appears depends on the data only through whether equal inputs were
passed again, which the caller already knows. Calls through a session are never counted."""
"""The Notes paragraph on repeated calls, shared by the front doors that read data (``{repeats}``)."""


def _document(body: Callable[..., Any], with_data: bool) -> str:
    """``body``'s docstring with the shared parameters where it says ``{parameters}`` (and the note on
    repeated calls where it says ``{repeats}``)."""
    doc = inspect.cleandoc(body.__doc__ or "")
    shared = (_DATA + "\n" + PARAMETERS) if with_data else PARAMETERS
    return doc.replace("{parameters}", "Parameters\n----------\n" + shared).replace("{repeats}", _REPEATS)


def _signature(first: list[inspect.Parameter], returns: Any) -> inspect.Signature:
    parameters = list(inspect.signature(request).parameters.values())
    return inspect.Signature([*first, *parameters], return_annotation=returns)


def _bound(template: Callable[P, Request], name: str, *args: P.args, **kwargs: P.kwargs) -> Request:
    """``template(*args, **kwargs)``; a missing or unknown argument is reported under the public ``name``
    (Python's own message would name the private template, ``request()``)."""
    try:
        return template(*args, **kwargs)
    except TypeError as exc:
        prefix = f"{template.__name__}() "
        message = str(exc)
        if not message.startswith(prefix):
            raise
        raise TypeError(f"{name}() {message[len(prefix) :]}") from None


def _named(call: Callable[..., Any], name: str, qualname: str) -> None:
    call.__name__ = name
    call.__qualname__ = qualname


def forward(
    template: Callable[P, Request], body: Callable[[Request], R], *, name: str, qualname: str | None = None
) -> Callable[P, R]:
    """``body(request)`` exposed as ``name`` with the parameters of ``template`` (``Pipeline.build``)."""

    @functools.wraps(body)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        return body(_bound(template, name, *args, **kwargs))

    _named(call, name, qualname or name)
    call.__doc__ = _document(body, with_data=False)
    call.__signature__ = _signature([], inspect.signature(body).return_annotation)  # type: ignore[attr-defined]
    return call


def front_door(
    template: Callable[P, Request], body: Callable[[Any, Request], R], *, name: str
) -> Callable[Concatenate[npt.ArrayLike, P], R]:
    """``body(x, request)`` exposed as ``name(x, statistic, *, method, budget, ...)`` (``pf.confidence_interval``)."""

    @functools.wraps(body)
    def call(x: npt.ArrayLike, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return body(x, _bound(template, name, *args, **kwargs))

    _named(call, name, name)
    call.__doc__ = _document(body, with_data=True)
    call.__signature__ = _signature([_X], inspect.signature(body).return_annotation)  # type: ignore[attr-defined]
    return call


def session_method(
    template: Callable[P, Request], body: Callable[[S, Any, Request], R]
) -> Callable[Concatenate[S, npt.ArrayLike, P], R]:
    """``body(self, x, request)`` exposed as a method ``f(self, x, statistic, *, method, budget, ...)``."""

    @functools.wraps(body)
    def call(self: S, x: npt.ArrayLike, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return body(self, x, template(*args, **kwargs))

    call.__doc__ = _document(body, with_data=True)
    me = inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)
    call.__signature__ = _signature([me, _X], inspect.signature(body).return_annotation)  # type: ignore[attr-defined]
    return call


_X = inspect.Parameter("x", inspect.Parameter.POSITIONAL_ONLY, annotation="npt.ArrayLike")
