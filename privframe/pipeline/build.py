"""Pipelines: a frozen composition of named parts plus parameters, from code, a dict, TOML or JSON.

A pipeline is the single path every front door goes through: ``pf.confidence_interval`` builds one from
its keywords, ``privframe run`` from a file. It is resolved once, when it is built: every name and option
is checked, every part instantiated and checked against what the method needs (the contracts of
:mod:`privframe.plugin.contracts`), so a typo or a mismatch fails with a ``ConfigError`` naming its path
(``pipeline.sampler.m``) before any data are touched. Each run then hands the method a
:class:`~privframe.plugin.RunContext` and trusts it.

Every pipeline is made by one function, :func:`assemble`, whichever door it comes through (``build``,
``from_dict``, ``from_config``, or ``method="auto"`` choosing its method, :mod:`privframe.pipeline.auto`).
"""

from __future__ import annotations

import contextlib
import json
import math
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

from privframe._rng import RngLike, as_seed_sequence
from privframe._typing import Array, frozen_mapping
from privframe.bounds import Bounds, L2Ball, as_bounds
from privframe.data.arrays import as_data
from privframe.data.distributed import DistributedData, as_distributed, is_dask_array
from privframe.data.tables import columns_with_label, select_columns, table_columns
from privframe.errors import BudgetError, ConfigError, PTRFailed, join_path
from privframe.pipeline import auto
from privframe.pipeline.methodmap import AUTO
from privframe.pipeline.parts import Part, load_json
from privframe.pipeline.ranges import within_ball, within_range
from privframe.pipeline.request import Request, forward, request
from privframe.pipeline.resolve import PART_KINDS, ResolvedPipeline, check_resolution, resolve
from privframe.plugin.context import RunContext
from privframe.plugin.evaluation import check_data_shape
from privframe.plugin.method import ChecksDesign, PublicCall
from privframe.plugin.protocols import Sampler
from privframe.plugin.registry import PluginRegistry, registry
from privframe.privacy.budgets import GDP, ApproxDP, Budget, PureDP, budget_from_table, budget_to_table
from privframe.resampling.blocks import RunOptions, checked_design
from privframe.results import IntervalResult, RegionResult

__all__ = ["Pipeline", "assemble"]

_RUN_KEYS = ("memory_budget", "workers", "progress")
_TOP_KEYS = ("method", "statistic", *PART_KINDS, "budget", "bounds", "confidence", "columns", *_RUN_KEYS)


def _check_confidence(value: object, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)):
        raise ConfigError("expected a number in (0, 1)", path=path)
    conf = float(value)
    if not (math.isfinite(conf) and 0.0 < conf < 1.0):
        raise ConfigError("must satisfy 0 < confidence < 1", path=path)
    if conf < 0.5:
        # A "5% CI" misses 95% of the time; almost always alpha was passed where the confidence belongs.
        raise ConfigError(
            f"must be at least 0.5: a {conf:.3g} interval misses the parameter more often than it covers it; "
            f"the confidence is 1 - alpha (for alpha = {conf:g} give confidence={1 - conf:g})",
            path=path,
        )
    return conf


def _check_budget(value: object, path: str) -> Budget | None:
    if value is None or isinstance(value, (GDP, ApproxDP, PureDP)):
        return value
    if isinstance(value, Mapping):
        return budget_from_table(value, path)
    raise ConfigError("expected pf.GDP, pf.ApproxDP, pf.PureDP, None, or a table", path=path)


def _check_bounds(value: object, prefix: str) -> Bounds | L2Ball | None:
    try:
        return as_bounds(value)
    except ConfigError as exc:
        raise exc.with_prefix(prefix) from exc


def _check_columns(value: object, path: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Sequence) or not all(isinstance(c, str) for c in value):
        raise ConfigError("expected a list of column names", path=path)
    return tuple(value)


def _run_options(values: Mapping[str, Any], prefix: str) -> RunOptions:
    try:
        return RunOptions(**{key: values[key] for key in _RUN_KEYS if key in values})
    except ConfigError as exc:
        raise exc.with_prefix(prefix) from exc


def assemble_request(req: Request) -> Pipeline:
    """A pipeline from the front door's arguments (``Pipeline.build``); each extra keyword goes to every part
    that declares it.

    {parameters}

    Returns
    -------
    Pipeline
    """
    if req.rng is not None:
        raise ConfigError("a pipeline is a recipe; give rng to its run, not to its build", path="rng")
    specs: dict[str, Part | None] = {
        "method": Part.coerce(req.method, "method"),
        "statistic": Part.coerce(req.statistic, "statistic"),
    }
    for kind, value in (("sampler", req.sampler), ("mechanism", req.mechanism), ("accountant", req.accountant)):
        specs[kind] = None if value is None else Part.coerce(value, kind)
    extra = {key: value for key, value in req.options.items() if key not in _RUN_KEYS}
    return assemble(
        specs,
        extra,
        budget=_check_budget(req.budget, "budget"),
        bounds=_check_bounds(req.bounds, ""),
        confidence=_check_confidence(req.confidence, "confidence"),
        options=_run_options(req.options, ""),
        columns=_check_columns(req.columns, "columns"),
        reg=req.reg,
        prefix="",
    )


@attrs.frozen
class Pipeline:
    """A frozen recipe: method, statistic, optional sampler/mechanism/accountant, budget, bounds, confidence.

    Build one with :meth:`build` (the front door's parameters; flat keyword options routed to the parts that
    declare them), :meth:`from_dict`, or :meth:`from_config` (TOML or JSON). It is resolved once, when it is
    built; ``run`` returns the same result types as :func:`privframe.confidence_interval`.

    Attributes
    ----------
    method, statistic : Part
        The method and the statistic, with the options routed to them.
    budget : Budget or None
        The total budget of one run.
    bounds : Bounds, L2Ball or None
        The public bounds.
    confidence : float
        Nominal coverage.
    sampler, mechanism, accountant : Part or None
        The parts, as named (None: the method's default).
    options : RunOptions
        Memory budget, worker threads and progress display.
    columns : tuple of str or None
        The columns of a table the runs use.
    chosen_by : mapping or None
        For the pipeline ``method="auto"`` chose: why (also in every result's ``diagnostics["auto"]``).

    Examples
    --------
    >>> import privframe as pf
    >>> pipe = pf.Pipeline.from_dict({"method": "cr-gs", "statistic": "mean", "bounds": [0, 1],
    ...                               "budget": {"unit": "gdp", "mu": 1.0}, "sampler": {"name": "wor", "B": 200}})
    >>> pipe.sampler.options["B"]
    200
    """

    method: Part
    statistic: Part
    budget: Budget | None
    bounds: Bounds | L2Ball | None
    confidence: float
    sampler: Part | None
    mechanism: Part | None
    accountant: Part | None
    options: RunOptions
    columns: tuple[str, ...] | None
    chosen_by: Mapping[str, Any] | None = attrs.field(eq=False, repr=False)
    _resolved: ResolvedPipeline | None = attrs.field(eq=False, repr=False, alias="resolved")
    _registry: PluginRegistry | None = attrs.field(eq=False, repr=False, alias="registry")
    _prefix: str = attrs.field(eq=False, repr=False, alias="prefix")

    # -- construction -------------------------------------------------------------------------------

    build = staticmethod(forward(request, assemble_request, name="build", qualname="Pipeline.build"))

    @classmethod
    def from_dict(cls, config: Mapping[str, Any], *, prefix: str = "", reg: PluginRegistry | None = None) -> Pipeline:
        """Build from a mapping (a ``{"pipeline": {...}}`` wrapper is accepted and sets the path prefix)."""
        if not isinstance(config, Mapping):
            raise ConfigError("expected a table", path=prefix or "pipeline")
        if set(config) == {"pipeline"}:
            return cls.from_dict(config["pipeline"], prefix=join_path(prefix, "pipeline") or "", reg=reg)
        for key in config:
            if key not in _TOP_KEYS:
                raise ConfigError(
                    f"unknown key (expected one of {', '.join(_TOP_KEYS)})", path=join_path(prefix, str(key))
                )
        for key in ("method", "statistic"):
            if key not in config:
                raise ConfigError("missing", path=join_path(prefix, key))

        def part(key: str) -> Part | None:
            value = config.get(key)
            return None if value is None else Part.coerce(value, join_path(prefix, key) or key)

        specs = {key: part(key) for key in ("method", "statistic", *PART_KINDS)}
        return assemble(
            specs,
            {},
            budget=_check_budget(config.get("budget"), join_path(prefix, "budget") or "budget"),
            bounds=_check_bounds(config.get("bounds"), prefix),
            confidence=_check_confidence(config.get("confidence", 0.9), join_path(prefix, "confidence") or ""),
            options=_run_options(config, prefix),
            columns=_check_columns(config.get("columns"), join_path(prefix, "columns") or "columns"),
            reg=reg,
            prefix=prefix,
        )

    @classmethod
    def from_config(cls, path: str | Path, *, reg: PluginRegistry | None = None) -> Pipeline:
        """Build from a ``.toml`` or ``.json`` file."""
        file = Path(path)
        name = file.name or str(file)
        try:
            text = file.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read {name} ({exc.strerror})", path="config") from exc
        except UnicodeDecodeError as exc:  # never the undecodable bytes: a config may hold a name or a bound
            line = bytes(exc.object[: exc.start]).count(b"\n") + 1
            raise ConfigError(f"{name} is not UTF-8 text: line {line} cannot be decoded", path="config") from None
        try:
            if file.suffix.lower() == ".json":
                config = load_json(text)
            elif file.suffix.lower() == ".toml":
                config = tomllib.loads(text)
            else:
                raise ConfigError("expected a .toml or .json file", path="config")
        except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"{file.name} is not valid {file.suffix[1:].upper()}: {exc}", path="config") from exc
        except RecursionError:
            raise ConfigError(f"{file.name} is nested too deeply to be a pipeline", path="config") from None
        return cls.from_dict(config, reg=reg)

    def to_dict(self) -> dict[str, Any]:
        """The pipeline as a plain mapping that :meth:`from_dict` reads back."""
        out: dict[str, Any] = {"method": self.method.to_dict(), "statistic": self.statistic.to_dict()}
        for kind in PART_KINDS:
            part = getattr(self, kind)
            if part is not None:
                out[kind] = part.to_dict()
        budget = budget_to_table(self.budget)
        if budget is not None:
            out["budget"] = budget
        if isinstance(self.bounds, Bounds):
            out["bounds"] = [self.bounds.low, self.bounds.high]
        elif isinstance(self.bounds, L2Ball):
            out["bounds"] = {"radius": self.bounds.radius}
        out["confidence"] = self.confidence
        if self.columns is not None:
            out["columns"] = list(self.columns)
        for key, value in attrs.asdict(self.options).items():
            if value != getattr(RunOptions(), key):
                out[key] = value
        return out

    # -- resolution and running ---------------------------------------------------------------------

    @property
    def registry(self) -> PluginRegistry:
        """The registry the names were resolved in."""
        return self._registry or registry

    @property
    def prefix(self) -> str:
        """The path prefix of errors about this pipeline's settings (``"pipeline"`` in a config file)."""
        return self._prefix

    def resolve(self) -> ResolvedPipeline:
        """The resolved parts (computed once, when the pipeline was built).

        A ``method="auto"`` pipeline has none until its method is chosen: resolve ``select(n)`` instead.
        """
        if self._resolved is None:
            raise ConfigError(
                "method 'auto' chooses its method when it runs, from n; resolve pipe.select(n) instead", path="method"
            )
        return self._resolved

    @property
    def is_auto(self) -> bool:
        """Whether this is a ``method="auto"`` pipeline whose method is chosen when it runs."""
        return self._resolved is None

    @property
    def asymptotic(self) -> bool:
        """Whether the method, as configured, records a guarantee that holds only asymptotically.

        Always an explicit option (PrivBoot's ``accounting="asymptotic"``, Dette-Graw's ``calibration="clt"``);
        False for ``method="auto"``, which never chooses such a method. A :class:`~privframe.Session` refuses
        an asymptotic pipeline unless it was opened with ``allow_asymptotic=True``.
        """
        return self._resolved is not None and self._resolved.needs.asymptotic

    def select(self, n: int) -> Pipeline:
        """The pipeline that runs on n records: this one, or for ``method="auto"`` the chosen method's.

        The choice uses only public information: the statistic, n, the budget and the confidence
        (:mod:`privframe.pipeline.auto`). The chosen pipeline says why in :attr:`chosen_by` and in its
        results' ``diagnostics["auto"]``. A ``ConfigError`` names the methods to choose from when no method
        of the map's nearest cell is valid and accepts the budget.

        Examples
        --------
        >>> import privframe as pf
        >>> pipe = pf.Pipeline.build("mean", method="auto", budget=pf.GDP(1.0), bounds=(0, 20))
        >>> pipe.is_auto, pipe.select(2000).is_auto
        (True, False)
        """
        if self._resolved is not None:
            return self
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ConfigError("must be a positive integer", path="n")
        chosen: Pipeline = auto.select(self, int(n), assemble)
        return chosen

    def chosen(self, why: Mapping[str, Any]) -> Pipeline:
        """This pipeline as the one ``method="auto"`` chose, with the reason (:attr:`chosen_by`)."""
        return attrs.evolve(self, chosen_by=frozen_mapping(why))

    def check(self, n: int, shape: tuple[int, ...] | None = None) -> None:
        """Raise the error the pipeline would raise on n records (of ``shape``) before reading them, if any.

        Everything checked depends on public inputs only, so the refusal is public: the sampler's design at
        n (a size rule that resolves to ``m >= n``, fewer than 3 records to resample), the method's own
        check of that design (:class:`privframe.plugin.ChecksDesign`, e.g. blbquant's ``min_block``), a
        delta of at least 1/n, bounds so far from 0 that the doubles there are coarser than one record's
        influence (:func:`privframe.pipeline.resolve.check_resolution`), and with ``shape`` (``(n,)`` or
        ``(n, d)``) whether the statistic takes records of that shape within the bounds
        (:func:`privframe.plugin.evaluation.check_data_shape`).
        The front door calls it once it knows n and before it reads a value; a session before it admits a
        call, so such a refusal costs nothing. A ``method="auto"`` pipeline checks the method it would choose.

        Examples
        --------
        >>> import privframe as pf
        >>> pipe = pf.Pipeline.build("mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1))
        >>> pipe.check(1000, shape=(1000, 2))
        Traceback (most recent call last):
        ...
        privframe.errors.DataError: x: scalar bounds need one-dimensional data (use pf.L2Ball for vectors)
        """
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ConfigError("must be a positive integer", path="n")
        n = int(n)
        if shape is not None and (not isinstance(shape, tuple) or not shape or shape[0] != n):
            raise ConfigError("must be the data's shape, (n,) or (n, d)", path="shape")
        resolved = self.select(n).resolve()
        check_delta(resolved.budget, n)
        check_resolution(resolved, n)
        if shape is not None:
            check_data_shape(resolved.statistic, shape, resolved.bounds)
        sampler = resolved.parts.get("sampler")
        design = None
        if isinstance(sampler, Sampler):
            try:
                design = checked_design(sampler, n, resolved.options)
            except ConfigError as exc:
                raise exc.with_prefix("sampler") from exc
        if not isinstance(resolved.method, ChecksDesign):
            return
        call = PublicCall(
            n=n,
            budget=resolved.budget,
            bounds=resolved.bounds,
            confidence=resolved.confidence,
            mechanism=resolved.parts.get("mechanism"),
        )
        resolved.method.check_design(design, resolved.statistic, call)

    def prepare(self, x: npt.ArrayLike) -> Array | DistributedData:
        """The data validated for a run: the pipeline's ``columns`` of a table, as float64; a Dask array's
        public shape (its values are checked on the workers). A malformed input is a ``DataError`` before
        anything is released: records are finite reals (``docs/concepts.md``)."""
        if is_dask_array(x):
            return as_distributed(x)
        label = self.statistic.options.get("label")
        columns = self.columns
        if isinstance(label, str):  # a statistic with a named label column (logistic-slope): features, then it
            columns = tuple(columns_with_label(x, columns, label))
        elif table_columns(x) is not None and self._labelled():
            raise ConfigError(
                f"statistic '{self.statistic.name}' on a table needs its label column named: label='...' "
                "(the other columns, or columns=[...], are the features)",
                path="statistic.label",
            )
        return as_data(select_columns(x, columns))

    def _labelled(self) -> bool:
        """Whether the statistic takes a ``label`` option: its last column is a label, named on a table."""
        entry = self.registry.get("statistic", self.statistic.name, path="statistic")
        return "label" in entry.options()

    def run(self, x: npt.ArrayLike, rng: RngLike = None, *, region: bool = False) -> IntervalResult | RegionResult:
        """Run on data ``x``: a scalar statistic gives an ``IntervalResult``, a vector one a ``RegionResult``.

        An interval is intersected with the statistic's value range when it declares one
        (:class:`~privframe.plugin.RangedStatistic`). ``region=True`` asks a ball-shaped method for its ball
        even for a scalar statistic (``pf.confidence_region``), and returns it unclipped.

        ``rng=None`` draws fresh OS entropy, the only right choice for a real release: anyone who knows the
        seed can subtract the noise. A ``method="auto"`` pipeline first chooses its method from the data's
        length (:meth:`select`); every pipeline first runs :meth:`check` at that n.
        """
        n = _public_length(x)
        chosen = self
        if n is not None:  # refusals that need n only come before a single value is read
            with self._prefixed():
                chosen = self.select(n)
                chosen.check(n)
        return chosen.execute(self.prepare(x), rng, region=region)

    @contextlib.contextmanager
    def _prefixed(self) -> Iterator[None]:
        """Errors of the parts carry paths relative to the pipeline (``sampler.m``); add the config's prefix."""
        try:
            yield
        except ConfigError as exc:
            head = (exc.path or "").split(".", 1)[0]
            if self.prefix and head in _TOP_KEYS:
                raise exc.with_prefix(self.prefix) from exc
            raise

    def execute(
        self, data: Array | DistributedData, rng: RngLike = None, *, region: bool = False
    ) -> IntervalResult | RegionResult:
        """:meth:`run` on data already validated by :meth:`prepare` (what a ``Session`` does after admitting)."""
        n = data.n if isinstance(data, DistributedData) else int(data.shape[0])
        chosen = self.select(n)
        ctx: RunContext[Any] | None = None
        try:
            chosen.check(n, shape=data.shape)
            resolved = chosen.resolve()
            seed = as_seed_sequence(rng)
            if isinstance(data, DistributedData):
                ctx = resolved.distributed_context(data, seed, chosen.registry, region=region)
            else:
                ctx = resolved.context(data, seed, region=region)
            # A floating-point warning raised on some data and not on their neighbours would be a release
            # (and an exception under warnings-as-errors): overflow and NaN are handled by the statistics
            # and mechanisms, never reported.
            with np.errstate(all="ignore"):
                result = resolved.method.run(ctx)
        except PTRFailed as exc:
            exc.ledger = None if ctx is None else ctx.ledger()
            raise
        except ConfigError as exc:
            # Parts raise with paths relative to the pipeline ("sampler.m"); add the config's prefix.
            head = (exc.path or "").split(".", 1)[0]
            if chosen.prefix and head in _TOP_KEYS:
                raise exc.with_prefix(chosen.prefix) from exc
            raise
        if chosen.chosen_by is not None:
            result = attrs.evolve(result, diagnostics={**result.diagnostics, "auto": chosen.chosen_by})
        if isinstance(result, IntervalResult) and not region:
            return within_range(result, resolved.statistic, resolved.bounds)
        if isinstance(result, RegionResult):
            return within_ball(result, resolved.statistic, resolved.bounds)
        return result


def check_delta(budget: Budget | None, n: int) -> None:
    """Refuse a delta of at least 1/n: such a budget permits releasing one of the n records in the clear
    (delta is the probability the guarantee fails). Public inputs only."""
    delta = getattr(budget, "delta", 0.0)
    if budget is None or not delta or delta < 1.0 / n:
        return
    raise BudgetError(
        f"delta = {delta:g} is at least 1/n = {1.0 / n:.3g} for n = {n} records: a budget that permits releasing "
        "one record in the clear (delta is the probability that the guarantee fails); give delta well below "
        f"1/n (e.g. {10.0 ** math.floor(math.log10(0.01 / n)):g}), or a pure budget",
        path="budget",
    )


def _public_length(x: object) -> int | None:
    """n from a numeric array's public shape, without reading a value (None for anything else: its schema is
    checked first, by :meth:`Pipeline.prepare`)."""
    kind = getattr(getattr(x, "dtype", None), "kind", None)
    shape = getattr(x, "shape", None)
    if kind is None or kind not in "biuf" or isinstance(x, np.ma.MaskedArray) or not isinstance(shape, tuple):
        return None
    if shape and isinstance(shape[0], (int, np.integer)) and shape[0] >= 3:
        return int(shape[0])
    return None


def assemble(
    specs: Mapping[str, Part | None],
    extra: Mapping[str, Any],
    *,
    budget: Budget | None,
    bounds: Bounds | L2Ball | None,
    confidence: float,
    options: RunOptions,
    columns: tuple[str, ...] | None,
    reg: PluginRegistry | None,
    prefix: str,
    chosen_by: Mapping[str, Any] | None = None,
) -> Pipeline:
    """The one way a pipeline is made: its settings checked, its parts resolved once (or, for ``method="auto"``,
    the choice checked as far as it can be before n is known)."""
    method, statistic = specs["method"], specs["statistic"]
    assert method is not None
    assert statistic is not None
    if method.name == AUTO:
        # The statistic's own options (q=0.25) are part of what is chosen for, not a part option: route them
        # to the statistic; anything else is refused by auto.check.
        entry = (reg or registry).get("statistic", statistic.name, path=join_path(prefix, "statistic") or "statistic")
        mine = {key: value for key, value in extra.items() if key in entry.options()}
        if mine:
            statistic = Part(statistic.name, {**statistic.options, **mine})
            specs = {**specs, "statistic": statistic}
            extra = {key: value for key, value in extra.items() if key not in mine}
        auto.check(
            method,
            statistic,
            specs,
            extra,
            budget=budget,
            bounds=bounds,
            confidence=confidence,
            reg=reg,
            prefix=prefix,
            assemble=assemble,
        )
        resolved, routed = None, dict(specs)
    else:
        resolution = resolve(
            specs,
            extra,
            budget=budget,
            bounds=bounds,
            confidence=confidence,
            options=options,
            reg=reg or registry,
            prefix=prefix,
        )
        resolved, routed = resolution.resolved, dict(resolution.specs)
    return Pipeline(
        method=routed["method"] or method,
        statistic=routed["statistic"] or statistic,
        budget=budget,
        bounds=bounds,
        confidence=confidence,
        sampler=routed.get("sampler"),
        mechanism=routed.get("mechanism"),
        accountant=routed.get("accountant"),
        options=options,
        columns=columns,
        chosen_by=None if chosen_by is None else frozen_mapping(chosen_by),
        resolved=resolved,
        registry=reg,
        prefix=prefix,
    )
