"""Result objects: an interval for scalar statistics, a Euclidean ball for vector ones.

A result saves itself as a versioned JSON document (``to_dict`` / ``to_json``, schema
``privframe-result/1``, described field by field in ``docs/results-io.md``) and loads back from it
(``from_dict`` / ``from_json``, or :func:`load_result` for either kind); it shows itself in one line
(``repr``) and as a small HTML table in a notebook (``_repr_html_``); :func:`summary_table` puts several
results in one pandas DataFrame (the ``tables`` extra).
"""

from __future__ import annotations

import contextlib
import html
import importlib
import importlib.metadata
import json
import math
import numbers
import os
import secrets
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeAlias

import attrs
import numpy as np
import numpy.typing as npt

from privframe._typing import frozen_mapping
from privframe.bounds import euclidean_norm
from privframe.errors import ConfigError, DataError, MissingExtraError, PrivframeError
from privframe.privacy.budgets import GDP, ApproxDP, Budget, PureDP, budget_from_table, budget_to_table, delta_of
from privframe.privacy.ledger import Ledger

__all__ = ["RESULT_SCHEMA", "IntervalResult", "RegionResult", "Result", "load_result", "summary_table"]

RESULT_SCHEMA = "privframe-result/1"
"""The ``schema`` of a saved result; a change that alters the meaning of a key bumps the number."""

_NON_FINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}
_OMIT = object()
_TYPE = "$type"
_REPR_LIMIT = 200
_TEXT_KEYS = frozenset({"label", "mechanism", "note", "unit", "lattice", "float", "accountant", "summary"})
"""Keys of the privacy table whose values are text, never a non-finite number spelt out."""


def _readonly_vector(value: npt.ArrayLike) -> npt.NDArray[np.float64]:
    arr = np.array(value, dtype=np.float64).reshape(-1)
    arr.flags.writeable = False
    return arr


# ---------------------------------------------------------------------------------------------------------
# JSON-safe values


def _number(value: float) -> float | str:
    """A finite float as itself; inf, -inf and nan as the strings ``"inf"``, ``"-inf"`` and ``"nan"``."""
    return value if math.isfinite(value) else str(value)


def _plain(value: Any, path: str, omitted: list[str], active: set[int]) -> Any:
    """``value`` as JSON values, or ``_OMIT`` (its path appended to ``omitted``) when it has none.

    None, text and booleans stay; numbers (numpy's too) become ints or floats, non-finite floats text;
    mappings become objects with text keys; lists, tuples and arrays become arrays (an item without a
    spelling is written as null); a budget becomes ``{"$type": "budget", "value": <its config table>}``;
    any other object with a ``to_dict()`` becomes ``{"$type": "module:QualName", "value": <that table>}``
    (:func:`_restore` rebuilds it with the class's ``from_dict``), and an object without one (or whose
    ``to_dict()`` fails, or a value that contains itself) is omitted.
    """
    if value is None or isinstance(value, str | bool):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return _number(float(value))
    if isinstance(value, GDP | ApproxDP | PureDP):
        return {_TYPE: "budget", "value": budget_to_table(value)}
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf":
            omitted.append(path)
            return _OMIT
        return _plain(value.tolist(), path, omitted, active)
    if id(value) in active:  # a container that holds itself
        omitted.append(path)
        return _OMIT
    active.add(id(value))
    try:
        if isinstance(value, Mapping):
            table: dict[str, Any] = {}
            for key, item in value.items():
                name = str(key)
                plain = _plain(item, f"{path}.{name}", omitted, active)
                if plain is not _OMIT:
                    table[name] = plain
            return table
        if isinstance(value, list | tuple):
            items = [_plain(item, f"{path}[{i}]", omitted, active) for i, item in enumerate(value)]
            return [None if item is _OMIT else item for item in items]
        to_dict = getattr(value, "to_dict", None)
        if callable(to_dict) and not isinstance(value, type):
            try:
                spelled = to_dict()
            except Exception:  # a diagnostic that cannot spell itself is left out, never a failed save
                spelled = None
            if isinstance(spelled, Mapping):
                kind = type(value)
                return {
                    _TYPE: f"{kind.__module__}:{kind.__qualname__}",
                    "value": _plain(spelled, path, omitted, active),
                }
        omitted.append(path)
        return _OMIT
    finally:
        active.discard(id(value))


def _restore(value: Any, path: str) -> Any:
    """Parameters and diagnostics as read back: arrays as tuples, tables as read-only mappings, ``"inf"``,
    ``"-inf"`` and ``"nan"`` as floats, ``{"$type": ..., "value": ...}`` as the objects they spell
    (:func:`_rebuild`)."""
    if isinstance(value, str):
        return _NON_FINITE.get(value, value)
    if isinstance(value, list):
        return tuple(_restore(item, f"{path}[{i}]") for i, item in enumerate(value))
    if isinstance(value, dict):
        if set(value) == {_TYPE, "value"} and isinstance(value[_TYPE], str):
            return _rebuild(value[_TYPE], value["value"], path)
        return MappingProxyType({key: _restore(item, f"{path}.{key}") for key, item in value.items()})
    return value


def _rebuild(name: str, table: Any, path: str) -> Any:
    """The object a ``{"$type": name, "value": table}`` entry spells, or ``table`` when its class is absent.

    ``"budget"`` is a budget's config table. ``"module:QualName"`` names a class with a ``from_dict``
    classmethod; it is rebuilt only when its module is privframe's own or belongs to a package of the
    ``privframe`` entry-point group (an installed plugin), so a file never makes privframe import a module
    of its choosing. Otherwise (or when the class has no ``from_dict``) the table comes back as a plain
    mapping.
    """
    if name == "budget":
        if not isinstance(table, Mapping):
            raise ConfigError("expected a budget table", path=path)
        return budget_from_table(table, path)
    plain = _restore(table, path)
    module, _, qualname = name.partition(":")
    if not module or not qualname or not isinstance(plain, Mapping) or not _trusted_module(module):
        return plain
    try:
        target: Any = importlib.import_module(module)
        for part in qualname.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError):
        return plain
    from_dict = getattr(target, "from_dict", None)
    if not isinstance(target, type) or not callable(from_dict):
        return plain
    try:
        return from_dict(plain)
    except PrivframeError as exc:
        raise ConfigError(exc.message, path=path) from None
    except (KeyError, TypeError, ValueError):
        raise ConfigError(f"not a table {qualname}.from_dict reads", path=path) from None


def _trusted_module(module: str) -> bool:
    """Whether :func:`_rebuild` may import ``module``: it is privframe's or an installed plugin package's."""
    top = module.split(".")[0]
    if top == "privframe":
        return True
    return top in {entry.module.split(".")[0] for entry in importlib.metadata.entry_points(group="privframe")}


def _restore_numbers(value: Any, key: str = "") -> Any:
    """The privacy table as read back: non-finite numbers spelt out become floats again (text keys stay)."""
    if isinstance(value, str):
        return value if key in _TEXT_KEYS else _NON_FINITE.get(value, value)
    if isinstance(value, list):
        return [_restore_numbers(item) for item in value]
    if isinstance(value, dict):
        return {name: _restore_numbers(item, name) for name, item in value.items()}
    return value


def _document(result: IntervalResult | RegionResult, kind: str, shape: dict[str, Any]) -> dict[str, Any]:
    """The ``privframe-result/1`` document of ``result``; ``shape`` holds its set (ends, or centre and radius)."""
    from privframe import __version__  # the package's version, read when a result is saved

    omitted: list[str] = []
    active: set[int] = set()
    document: dict[str, Any] = {
        "schema": RESULT_SCHEMA,
        "kind": kind,
        "privframe_version": __version__,
        "method": result.method,
        "confidence": _number(result.confidence),
        **shape,
        "parameters": _plain(dict(result.parameters), "parameters", omitted, active),
        "privacy": _plain(result.privacy.to_dict(), "privacy", omitted, active),
        "diagnostics": _plain(dict(result.diagnostics), "diagnostics", omitted, active),
    }
    document["omitted"] = omitted
    return document


def _write_json(table: dict[str, Any], path: str | os.PathLike[str] | None, indent: int | None) -> str:
    """``table`` as strict JSON text (no NaN or infinity: :func:`_number` spells them), also written to ``path``."""
    if indent is not None and (isinstance(indent, bool) or not isinstance(indent, numbers.Integral) or int(indent) < 0):
        raise ConfigError("expected a whole number of spaces >= 0, or None", path="indent")
    text = json.dumps(table, indent=None if indent is None else int(indent), allow_nan=False)
    if path is not None:
        _replace_file(_file_name(path, "path"), text + "\n")
    return text


def _file_name(path: object, name: str) -> str:
    """``path`` as a file name (a ``str`` or an ``os.PathLike`` of one), else ``ConfigError`` at ``name``."""
    if isinstance(path, str | os.PathLike):
        text = os.fspath(path)
        if isinstance(text, str):
            return text
    raise ConfigError("expected a file path (str or pathlib.Path)", path=name)


def _replace_file(name: str, text: str) -> None:
    """Write ``text`` to a new file beside ``name`` and move it into place: ``name`` is either as it was or whole.

    A symbolic link is written through, as writing in place would; an existing file keeps its permissions.
    Any ``OSError`` becomes ``ConfigError`` at ``path`` naming the file, and the temporary file is removed.
    """
    target = os.path.realpath(name)
    temporary = os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.{secrets.token_hex(6)}.tmp")
    try:
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies, as usual
    except OSError as exc:
        raise _unwritable(name, exc) from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())  # on disk before the rename, so a crash never leaves an empty file
        with contextlib.suppress(FileNotFoundError):
            os.chmod(temporary, stat.S_IMODE(os.stat(target).st_mode))
        os.replace(temporary, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(exc, OSError):
            raise _unwritable(name, exc) from None
        raise


def _unwritable(name: str, exc: OSError) -> ConfigError:
    return ConfigError(f"cannot write the result file {name!r} ({exc.strerror}); it is unchanged", path="path")


def _read_json(source: str | os.PathLike[str]) -> dict[str, Any]:
    """The JSON object in ``source``: JSON text (it starts with ``{`` or ``[``), or the path of a file that holds it."""
    if isinstance(source, str) and source.lstrip()[:1] in ("{", "["):
        text = source
    else:
        try:
            text = Path(_file_name(source, "source")).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read the result file ({exc.strerror})", path="source") from None
        except UnicodeDecodeError:
            raise ConfigError("cannot read the result file (not UTF-8 text)", path="source") from None
    try:
        table = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"not JSON ({exc.msg} at line {exc.lineno})", path="source") from None
    if not isinstance(table, dict):
        raise ConfigError(f"expected a JSON object (a saved result), not a JSON {_json_kind(table)}", path="source")
    return table


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if value is None or isinstance(value, bool):
        return "literal"
    return "number"


def _float(table: Mapping[str, Any], key: str, path: str | None = None) -> float:
    value = table.get(key)
    if isinstance(value, str) and value in _NON_FINITE:
        return _NON_FINITE[value]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError("expected a number", path=path or key)
    return float(value)


def _number_not_nan(table: Mapping[str, Any], key: str) -> float:
    value = _float(table, key)
    if math.isnan(value):
        raise ConfigError("expected a number, not nan", path=key)
    return value


def _common(table: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The fields both kinds share, read from a ``privframe-result/1`` table of the given ``kind``."""
    if not isinstance(table, Mapping):
        raise ConfigError("expected a table (a saved result)", path="result")
    found = table.get("schema")
    if found != RESULT_SCHEMA:
        if isinstance(found, str) and found.startswith("privframe-result/"):
            message = f"this privframe reads '{RESULT_SCHEMA}', not '{found}' (written by another version)"
        else:
            message = f"not a saved privframe result (expected '{RESULT_SCHEMA}')"
        raise ConfigError(message, path="schema")
    if table.get("kind") != kind:
        other = {"interval": "IntervalResult", "region": "RegionResult"}.get(str(table.get("kind")))
        hint = f"; read it with pf.{other}.from_dict or privframe.results.load_result" if other else ""
        raise ConfigError(f"expected '{kind}', found {table.get('kind')!r}{hint}", path="kind")
    method = table.get("method")
    if not isinstance(method, str):
        raise ConfigError("expected a name", path="method")
    for key in ("parameters", "diagnostics"):
        if not isinstance(table.get(key, {}), Mapping):
            raise ConfigError("expected a table", path=key)
    confidence = _float(table, "confidence")
    if not 0.0 < confidence < 1.0:
        raise ConfigError("expected a number in (0, 1), the nominal coverage", path="confidence")
    return {
        "confidence": confidence,
        "method": method,
        "parameters": _restore(dict(table.get("parameters", {})), "parameters"),
        "diagnostics": _restore(dict(table.get("diagnostics", {})), "diagnostics"),
        "privacy": _ledger(table.get("privacy")),
    }


_LEDGER_KEYS = ("total", "accountant", "events")
_REL_TOL = 1e-9
"""How far a saved total may be from the recomposition of its events (relative; JSON keeps floats exactly)."""


def _ledger(table: object) -> Ledger:
    """The ledger of a saved result, checked: what it says about privacy must hold together.

    Every key :meth:`Ledger.to_dict` writes is required (a table without them is never read as
    non-private); a non-private ledger has no events, a private one has events and their total; the total
    of the standard accountants (``gdp``, ``approx-dp``) must be what they compose from the events.
    """
    if not isinstance(table, Mapping):
        raise ConfigError("expected the privacy table (every saved result has one)", path="privacy")
    for key in _LEDGER_KEYS:
        if key not in table:
            raise ConfigError("missing (a non-private result has a null total and no events)", path=f"privacy.{key}")
    ledger = Ledger.from_dict(_restore_numbers(dict(table)), "privacy")
    if ledger.total is None:
        if ledger.events:
            raise ConfigError("null (non-private), yet the ledger records privacy events", path="privacy.total")
        return ledger
    if not ledger.events:
        raise ConfigError(
            "a private result records the events its total composes; there are none", path="privacy.events"
        )
    _check_total(ledger, ledger.total)
    return ledger


def _check_total(ledger: Ledger, total: Budget) -> None:
    """Refuse a total that the accountant ``ledger`` names would not compose from its events.

    ``gdp`` composes exactly (no options, no dependence on the limit), so its total is recomposed.
    ``approx-dp`` depends on its options and the limit only for repeated releases (``count > 1``); its total
    then is at least the events' own delta, otherwise basic composition fixes it. An accountant this reader
    does not know (a plugin's) is taken at its word.
    """
    if ledger.accountant not in ("gdp", "approx-dp"):
        return
    from privframe.plugin.registry import registry  # not at import: the registry loads the plugins

    options = {} if ledger.accountant == "gdp" else {"composition": "basic"}
    try:
        accountant = registry.create("accountant", ledger.accountant, options)
    except PrivframeError:  # the standard plugins are disabled or replaced: nothing to check against
        return
    try:
        composed = accountant.compose(ledger.events)
    except PrivframeError:
        raise ConfigError(
            f"the '{ledger.accountant}' accountant cannot compose these events", path="privacy.events"
        ) from None
    if ledger.accountant == "gdp" or all(event.count == 1 for event in ledger.events):
        agrees = type(composed) is type(total) and all(
            math.isclose(a, b, rel_tol=_REL_TOL) for a, b in zip(_components(composed), _components(total), strict=True)
        )
    else:
        agrees = isinstance(total, ApproxDP | PureDP) and delta_of(total) >= delta_of(composed) * (1 - _REL_TOL)
    if not agrees:
        raise ConfigError(
            f"not what the '{ledger.accountant}' accountant composes from the recorded events", path="privacy.total"
        )


def _components(budget: Budget) -> tuple[float, float]:
    if isinstance(budget, GDP):
        return budget.mu, budget.delta
    return budget.epsilon, delta_of(budget)


# ---------------------------------------------------------------------------------------------------------
# Showing a result


def _flags(diagnostics: Mapping[str, Any], ledger: Ledger) -> tuple[str, ...]:
    found = [
        "whole range" if diagnostics.get("whole_range") else "",
        "uninformative centre" if diagnostics.get("uninformative") else "",
        "one-sided" if diagnostics.get("one_sided") else "",
        "asymptotic" if ledger.asymptotic else "",
        "simulated" if any(event.simulated for event in ledger.events) else "",
        "" if ledger.private else "non-private",
    ]
    return tuple(flag for flag in found if flag)


def _level(confidence: float) -> str:
    """``0.9`` as ``90%``, ``0.995`` as ``99.5%``."""
    return f"{100 * confidence:.4g}%"


def _short(head: str, method: str, ledger: Ledger, flags: tuple[str, ...]) -> str:
    """One line under 200 characters: the set, the method, the guarantee in its native unit, the flags."""
    guarantee = "non-private" if ledger.total is None else str(ledger.total)
    text = ", ".join([head, method[:40], guarantee, *(f for f in flags if f != "non-private")]) + ")"
    return text if len(text) < _REPR_LIMIT else text[: _REPR_LIMIT - 5] + "...)"


def _html(title: str, rows: list[tuple[str, str]]) -> str:
    cells = "".join(
        f'<tr><th style="text-align:left">{html.escape(key)}</th>'
        f'<td style="text-align:left">{html.escape(value)}</td></tr>'
        for key, value in rows
    )
    return f'<table class="privframe-result"><caption>{html.escape(title)}</caption>{cells}</table>'


def _html_rows(result: IntervalResult | RegionResult) -> list[tuple[str, str]]:
    """The rows after the set: confidence, method, statistic, guarantee, n and flags (when present)."""
    rows = [("confidence", _level(result.confidence)), ("method", result.method)]
    if "statistic" in result.parameters:
        rows.append(("statistic", str(result.parameters["statistic"])))
    rows.append(("guarantee", result.privacy.summary()))
    if "n" in result.parameters:
        rows.append(("n", str(result.parameters["n"])))
    if result.flags:
        rows.append(("flags", ", ".join(result.flags)))
    return rows


@attrs.frozen(eq=False)
class IntervalResult:
    """A confidence interval ``(low, high)`` for a scalar statistic.

    Attributes
    ----------
    low, high : float
        Interval end points.
    center : float
        The released point estimate.
    confidence : float
        Nominal coverage ``1 - alpha``.
    method : str
        Method that produced it.
    parameters : mapping
        Resolved settings (statistic, sampler, m, B, kappa, budget, ...).
    diagnostics : mapping
        Data-independent internals (sensitivities, noise scales) - never non-private data summaries.
    privacy : Ledger
        The privacy spend.
    """

    low: float
    high: float
    center: float
    confidence: float
    method: str
    parameters: Mapping[str, Any] = attrs.field(converter=frozen_mapping)
    diagnostics: Mapping[str, Any] = attrs.field(converter=frozen_mapping)
    privacy: Ledger

    @property
    def width(self) -> float:
        """``high - low``."""
        return self.high - self.low

    def contains(self, value: float) -> bool:
        """Whether ``value`` (a number, not NaN) lies in the open interval ``(low, high)``."""
        if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real) or math.isnan(value):
            raise DataError("expected a number (not NaN)", path="value")
        return bool(self.low < float(value) < self.high)

    def to_region(self) -> RegionResult:
        """The same set as a one-dimensional ball (only for intervals symmetric about their centre)."""
        radius = (self.high - self.low) / 2
        if abs(self.center - (self.low + radius)) > 1e-12 * max(1.0, abs(self.center)):
            raise ConfigError(
                f"'{self.method}' returns an asymmetric interval; use pf.confidence_interval", path="method"
            )
        return RegionResult(
            center=[self.center],
            radius=radius,
            confidence=self.confidence,
            method=self.method,
            parameters=self.parameters,
            diagnostics=self.diagnostics,
            privacy=self.privacy,
        )

    @property
    def flags(self) -> tuple[str, ...]:
        """What a reader should know, in words: ``"whole range"`` (the interval is the statistic's whole
        range: no information), ``"uninformative centre"``, ``"one-sided"``, ``"asymptotic"`` (the guarantee
        holds only in a limit), ``"simulated"`` (floating-point noise: never publish) and ``"non-private"``."""
        return _flags(self.diagnostics, self.privacy)

    def to_dict(self) -> dict[str, Any]:
        """The result as a ``privframe-result/1`` table of JSON values (``docs/results-io.md``).

        Non-finite numbers are written as the strings ``"inf"``, ``"-inf"`` and ``"nan"``; a diagnostic
        that has no JSON spelling (an object without ``to_dict()``) is left out and its path listed under
        ``"omitted"``. :meth:`from_dict` reads it back.

        Examples
        --------
        >>> import numpy as np
        >>> import privframe as pf
        >>> x = np.random.default_rng(0).beta(2, 5, size=2000)
        >>> res = pf.confidence_interval(x, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), rng=7)
        >>> table = res.to_dict()
        >>> table["schema"], table["kind"], table["low"] == res.low, table["privacy"]["summary"]
        ('privframe-result/1', 'interval', True, '1-GDP = (4.887, 1e-06)-DP')
        >>> back = pf.IntervalResult.from_dict(table)
        >>> (back.low, back.high, back.privacy) == (res.low, res.high, res.privacy)
        True
        """
        shape = {
            "low": _number(self.low),
            "high": _number(self.high),
            "center": _number(self.center),
            "width": _number(self.width),
        }
        return _document(self, "interval", shape)

    def to_json(self, path: str | os.PathLike[str] | None = None, *, indent: int | None = 2) -> str:
        """The :meth:`to_dict` table as strict JSON text, also written to ``path`` (UTF-8) when given.

        The file is written whole or not at all: the text goes to a temporary file in the same folder,
        which then replaces ``path``. ``indent`` is a number of spaces (>= 0) or None (one line). A path
        that cannot be written (a missing folder, a folder, no permission) is a ``ConfigError`` at
        ``path`` that names the file; ``path`` is then as it was.
        """
        return _write_json(self.to_dict(), path, indent)

    @classmethod
    def from_dict(cls, table: Mapping[str, Any]) -> IntervalResult:
        """The interval a :meth:`to_dict` table describes; a malformed one raises ``ConfigError``.

        Keys it does not know (``"session"`` of ``privframe run --json``) and the derived ones (``width``,
        the privacy summary) are ignored. A document that does not hold together is refused, naming the
        key: ``low`` above ``high``, a NaN end or centre, a confidence outside (0, 1), a privacy table
        without its ``total``, ``accountant`` or ``events``, events without a total (or a total without
        events), or a total the ``gdp`` or ``approx-dp`` accountant would not compose from the events.

        Parameters and diagnostics come back as JSON gave them, except that arrays become tuples and
        ``"inf"``, ``"-inf"`` and ``"nan"`` floats; an object saved through its ``to_dict()`` comes back as
        that table.
        """
        fields = _common(table, "interval")
        low, high = _number_not_nan(table, "low"), _number_not_nan(table, "high")
        if low > high:
            raise ConfigError("above high: an interval's low end is at most its high end", path="low")
        return cls(low=low, high=high, center=_number_not_nan(table, "center"), **fields)

    @classmethod
    def from_json(cls, source: str | os.PathLike[str]) -> IntervalResult:
        """The interval saved in ``source``: JSON text (it starts with ``{``) or the path of a file of it."""
        return cls.from_dict(_read_json(source))

    def __repr__(self) -> str:
        head = f"IntervalResult({_level(self.confidence)} CI [{self.low:.6g}, {self.high:.6g}]"
        return _short(head, self.method, self.privacy, self.flags)

    def _repr_html_(self) -> str:
        rows = [("interval", f"[{self.low:.6g}, {self.high:.6g}]"), ("centre", f"{self.center:.6g}")]
        return _html("IntervalResult", rows + _html_rows(self))

    def __str__(self) -> str:
        whole = " [the whole range: no information]" if self.diagnostics.get("whole_range") else ""
        estimand = self.parameters.get("estimand")
        what = f" for the {estimand}" if isinstance(estimand, str) else ""
        return (
            f"{self.confidence:.0%} CI{what} [{self.low:.6g}, {self.high:.6g}]{whole} (center {self.center:.6g}; "
            f"{self.method}; {self.privacy.summary()})"
        )


@attrs.frozen(eq=False)
class RegionResult:
    """A Euclidean ball ``{u : ||u - center|| < radius}`` for a vector statistic.

    Attributes are as for :class:`IntervalResult`, with ``center`` a read-only vector and ``radius``
    the released radius.
    """

    center: npt.NDArray[np.float64] = attrs.field(converter=_readonly_vector)
    radius: float
    confidence: float
    method: str
    parameters: Mapping[str, Any] = attrs.field(converter=frozen_mapping)
    diagnostics: Mapping[str, Any] = attrs.field(converter=frozen_mapping)
    privacy: Ledger

    @property
    def dimension(self) -> int:
        """Dimension d of the statistic."""
        return int(self.center.shape[0])

    @property
    def width(self) -> float:
        """The diameter ``2 * radius`` (the interval length when d = 1)."""
        return 2.0 * self.radius

    def contains(self, value: npt.ArrayLike) -> bool:
        """Whether ``value`` (one number per coordinate, none NaN) lies strictly inside the ball."""
        try:
            given = np.asarray(value)
        except (TypeError, ValueError):
            given = np.asarray(None)
        if given.dtype.kind not in "iuf":
            raise DataError(f"expected a vector of {self.dimension} numbers", path="value")
        v = given.astype(np.float64).reshape(-1)
        if np.isnan(v).any():
            raise DataError("expected numbers, not NaN", path="value")
        if v.shape != self.center.shape:
            raise DataError(f"expected a vector of length {self.dimension}", path="value")
        return euclidean_norm(v - self.center) < self.radius

    def to_interval(self) -> IntervalResult:
        """The same set as an interval (d = 1 only)."""
        if self.dimension != 1:
            raise DataError("a region of dimension > 1 is not an interval; use pf.confidence_region", path="statistic")
        c = float(self.center[0])
        return IntervalResult(
            low=c - self.radius,
            high=c + self.radius,
            center=c,
            confidence=self.confidence,
            method=self.method,
            parameters=self.parameters,
            diagnostics=self.diagnostics,
            privacy=self.privacy,
        )

    @property
    def flags(self) -> tuple[str, ...]:
        """What a reader should know, in words (as :attr:`IntervalResult.flags`)."""
        return _flags(self.diagnostics, self.privacy)

    def to_dict(self) -> dict[str, Any]:
        """The result as a ``privframe-result/1`` table of JSON values, ``center`` a list (as
        :meth:`IntervalResult.to_dict`; ``docs/results-io.md``)."""
        shape = {
            "center": [_number(float(c)) for c in self.center],
            "radius": _number(self.radius),
            "dimension": self.dimension,
            "width": _number(self.width),
        }
        return _document(self, "region", shape)

    def to_json(self, path: str | os.PathLike[str] | None = None, *, indent: int | None = 2) -> str:
        """The :meth:`to_dict` table as strict JSON text, also written to ``path`` (UTF-8) when given (whole
        or not at all, as :meth:`IntervalResult.to_json`)."""
        return _write_json(self.to_dict(), path, indent)

    @classmethod
    def from_dict(cls, table: Mapping[str, Any]) -> RegionResult:
        """The region a :meth:`to_dict` table describes (as :meth:`IntervalResult.from_dict`; a negative
        ``radius`` is refused, a NaN or infinite one, from a release that carried no information, is kept)."""
        fields = _common(table, "region")
        center = table.get("center")
        if not isinstance(center, list) or not center:
            raise ConfigError("expected a list of numbers", path="center")
        vector = [_float({"center": c}, "center", f"center[{i}]") for i, c in enumerate(center)]
        radius = _float(table, "radius")
        if radius < 0.0:  # NaN and inf stay: the radius of a release that carried no information
            raise ConfigError("expected a number >= 0 (nan or inf for a release without information)", path="radius")
        return cls(center=vector, radius=radius, **fields)

    @classmethod
    def from_json(cls, source: str | os.PathLike[str]) -> RegionResult:
        """The region saved in ``source``: JSON text (it starts with ``{``) or the path of a file of it."""
        return cls.from_dict(_read_json(source))

    def __repr__(self) -> str:
        where = f"in {self.dimension} dimensions,"
        if self.dimension <= 3:
            where = "center [" + ", ".join(f"{c:.4g}" for c in self.center) + "]"
        head = f"RegionResult({_level(self.confidence)} ball {where} radius {self.radius:.4g}"
        return _short(head, self.method, self.privacy, self.flags)

    def _repr_html_(self) -> str:
        center = np.array2string(self.center, precision=6, threshold=12)
        rows = [("centre", center), ("radius", f"{self.radius:.6g}"), ("dimension", str(self.dimension))]
        return _html("RegionResult", rows + _html_rows(self))

    def __str__(self) -> str:
        center = np.array2string(self.center, precision=6)
        whole = " [the whole ball: no information]" if self.diagnostics.get("whole_range") else ""
        return (
            f"{self.confidence:.0%} ball center {center} radius {self.radius:.6g}{whole} "
            f"({self.method}; {self.privacy.summary()})"
        )


Result: TypeAlias = IntervalResult | RegionResult
"""What a method returns: an interval (a scalar statistic) or a ball (a vector one)."""


def load_result(source: str | os.PathLike[str] | Mapping[str, Any]) -> Result:
    """A saved result of either kind: a ``to_dict`` table, JSON text, or the path of a JSON file.

    Examples
    --------
    >>> import numpy as np
    >>> import privframe as pf
    >>> from privframe.results import load_result
    >>> X = np.random.default_rng(1).normal(0.0, 0.2, size=(2000, 2))
    >>> reg = pf.confidence_region(X, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=pf.L2Ball(1.0), rng=7)
    >>> back = load_result(reg.to_json())
    >>> type(back).__name__, bool(np.array_equal(back.center, reg.center)), back.radius == reg.radius
    ('RegionResult', True, True)
    """
    table = source if isinstance(source, Mapping) else _read_json(source)
    if table.get("kind") == "region":
        return RegionResult.from_dict(table)
    return IntervalResult.from_dict(table)


def _result_list(results: Sequence[Result] | Result, labels: Sequence[str] | None) -> list[tuple[str, Result]]:
    """``results`` paired with their labels; a single result counts as a list of one.

    The default label is ``"<statistic>, <method>"`` (the method alone when no statistic is recorded).
    """
    if isinstance(results, IntervalResult | RegionResult):
        items: list[Any] = [results]
    else:
        try:
            items = list(results)
        except TypeError:
            raise ConfigError("expected a result or a sequence of results", path="results") from None
    if not items:
        raise ConfigError("expected at least one result", path="results")
    for i, item in enumerate(items):
        if not isinstance(item, IntervalResult | RegionResult):
            raise ConfigError(
                f"expected an IntervalResult or a RegionResult, got {type(item).__name__}", path=f"results[{i}]"
            )
    if labels is None:
        names = [_default_label(item) for item in items]
    else:
        if isinstance(labels, str):
            raise ConfigError("expected a sequence of labels, one per result, not one string", path="labels")
        try:
            names = list(labels)
        except TypeError:
            raise ConfigError("expected a sequence of labels, one per result", path="labels") from None
        for i, label in enumerate(names):
            if not isinstance(label, str):
                raise ConfigError(f"expected a label (str), got {type(label).__name__}", path=f"labels[{i}]")
        if len(names) != len(items):
            raise ConfigError(f"expected {len(items)} labels, one per result, got {len(names)}", path="labels")
    return list(zip(names, items, strict=True))


def _default_label(result: Result) -> str:
    statistic = result.parameters.get("statistic")
    return f"{statistic}, {result.method}" if isinstance(statistic, str) else result.method


def summary_table(results: Sequence[Result] | Result, labels: Sequence[str] | None = None) -> Any:
    """Several results side by side as a pandas DataFrame, one row per result.

    Needs pandas (the ``tables`` extra: ``pip install "privframe[tables]"``).

    Parameters
    ----------
    results : sequence of IntervalResult or RegionResult
        The results, in row order (a single result gives one row).
    labels : sequence of str, optional
        One label per result; by default ``"<statistic>, <method>"``.

    Returns
    -------
    pandas.DataFrame
        Columns ``label``, ``method``, ``statistic``, ``low``, ``high``, ``centre``, ``width``,
        ``confidence`` and ``guarantee`` (:meth:`Ledger.summary`, ``"non-private"`` for a reference). A
        region of dimension 1 fills ``low`` and ``high`` as its interval; a larger one has NaN there, its
        ``centre`` a tuple and its ``width`` the diameter.

    Raises
    ------
    MissingExtraError
        pandas is not installed.
    ConfigError
        ``results`` is not a sequence of results or is empty (names ``results``), holds something else
        (names ``results[i]``), or ``labels`` has the wrong length (names ``labels``) or holds something
        other than text (names ``labels[i]``).

    Examples
    --------
    >>> import numpy as np
    >>> import privframe as pf
    >>> x = np.random.default_rng(0).beta(2, 5, size=2000)
    >>> runs = [pf.confidence_interval(x, "mean", method="cr-gs", budget=pf.GDP(mu), bounds=(0, 1), rng=7)
    ...         for mu in (0.5, 1.0, 2.0)]
    >>> table = pf.summary_table(runs, labels=["mu=0.5", "mu=1", "mu=2"])
    >>> list(table.columns)
    ['label', 'method', 'statistic', 'low', 'high', 'centre', 'width', 'confidence', 'guarantee']
    >>> table.loc[1, "label"], table.loc[1, "guarantee"], bool(table.loc[1, "low"] == runs[1].low)
    ('mu=1', '1-GDP = (4.887, 1e-06)-DP', True)
    """
    pairs = _result_list(results, labels)
    try:
        pd: Any = importlib.import_module("pandas")
    except ImportError:
        raise MissingExtraError("summary_table needs pandas", extra="tables") from None
    rows = []
    centre: float | tuple[float, ...]
    for label, result in pairs:
        if isinstance(result, RegionResult) and result.dimension == 1:
            result = result.to_interval()
        if isinstance(result, IntervalResult):
            low, high, centre = result.low, result.high, result.center
        else:
            low, high, centre = math.nan, math.nan, tuple(float(c) for c in result.center)
        statistic = result.parameters.get("statistic")
        rows.append(
            {
                "label": label,
                "method": result.method,
                "statistic": statistic if isinstance(statistic, str) else None,
                "low": low,
                "high": high,
                "centre": centre,
                "width": result.width,
                "confidence": result.confidence,
                "guarantee": result.privacy.summary() if result.privacy.private else "non-private",
            }
        )
    return pd.DataFrame(rows, columns=list(rows[0]))
