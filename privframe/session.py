"""A privacy budget shared by every call on one dataset.

Separate calls on the same data compose: 400 calls at 1-GDP each are 20-GDP together, and their average
recovers what one call hides. A :class:`Session` holds the total budget for a dataset, charges each call's
budget against it **before** the call reads the data or draws from its generator, and keeps the events of
every call.

Each call's charge is fixed when it is admitted, in the session's unit, and the charges compose as a
*privacy filter* (valid although each call is chosen after seeing the previous results): in a GDP session
``mu`` adds in squares and delta adds (Smith and Thakurta 2022, fully adaptive composition for GDP); pure
calls are charged as ``pure_dp_gdp_mu(eps)``-GDP. In an (epsilon, delta) or pure session epsilons and
deltas add (Rogers et al. 2016: basic composition with adaptively chosen parameters); a ``GDP(mu, d)``
call is charged as ``(eps, d + d')`` with ``d'`` half the delta still unspent. Advanced and optimal
composition are not filters and are never used here (``docs/algorithms.md``, section 1).

A call is charged in full once it starts on the data, whatever its outcome: a propose-test-release
failure, a sampler rejection and an error all count, because the session cannot tell what the attempt
revealed. A call refused by the session, or rejected while its configuration is checked (when the pipeline
is built), costs nothing.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy.typing as npt

from privframe._rng import RngLike
from privframe.api import as_interval, as_region
from privframe.data.distributed import DistributedData
from privframe.errors import BudgetError, ConfigError, PrivframeError, PTRFailed
from privframe.pipeline.build import Pipeline, assemble_request
from privframe.pipeline.request import Request, request, session_method
from privframe.privacy import accounting
from privframe.privacy.budgets import GDP, ApproxDP, Budget, PureDP, budget_from_table, budget_to_table
from privframe.privacy.events import PrivacyEvent
from privframe.privacy.ledger import Ledger
from privframe.results import IntervalResult, RegionResult

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: sessions in one process only
    fcntl = None  # type: ignore[assignment]

__all__ = ["Session", "SessionCall", "call_charge", "compose_charges"]

_FORMAT = "privframe-session/1"
_REL_TOL = 1e-12
OUTCOMES = ("running", "released", "ptr-failed", "error")


def _as_events(events: Sequence[PrivacyEvent]) -> tuple[PrivacyEvent, ...]:
    return tuple(events)


@attrs.frozen
class SessionCall:
    """One call charged to a session.

    Parameters
    ----------
    label : str
        ``"call 1"``, ``"call 2"``, ... in order.
    budget : Budget
        The call's budget, as requested.
    charge : Budget
        What the session charged for it, in the session's unit (fixed when the call was admitted).
    outcome : {"running", "released", "ptr-failed", "error"}
        How the call ended ("running" only while it runs, or if the process died during it).
    events : tuple of PrivacyEvent
        The events the call's own ledger recorded (empty when it ended in an error).
    """

    label: str
    budget: Budget
    charge: Budget
    outcome: str = attrs.field(validator=attrs.validators.in_(OUTCOMES))
    events: tuple[PrivacyEvent, ...] = attrs.field(default=(), converter=_as_events)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready table (the session file stores one per call)."""
        return {
            "label": self.label,
            "budget": budget_to_table(self.budget),
            "charge": budget_to_table(self.charge),
            "outcome": self.outcome,
            "events": [event.to_dict() for event in self.events],
        }

    @classmethod
    def from_dict(cls, table: Mapping[str, Any], path: str) -> SessionCall:
        """The call a :meth:`to_dict` table describes; errors name ``path``."""
        if not isinstance(table, Mapping):
            raise ConfigError("expected a table", path=path)
        for key in ("budget", "charge"):
            if not isinstance(table.get(key), Mapping):
                raise ConfigError("expected a budget table", path=f"{path}.{key}")
        outcome = table.get("outcome")
        if outcome not in OUTCOMES:
            raise ConfigError(f"expected one of {', '.join(OUTCOMES)}", path=f"{path}.outcome")
        events = table.get("events", [])
        if not isinstance(events, list):
            raise ConfigError("expected a list", path=f"{path}.events")
        return cls(
            label=str(table.get("label", "")),
            budget=budget_from_table(table["budget"], f"{path}.budget"),
            charge=budget_from_table(table["charge"], f"{path}.charge"),
            outcome=outcome,
            events=[PrivacyEvent.from_dict(event, f"{path}.events.{i}") for i, event in enumerate(events)],
        )


def call_charge(budget: Budget, total: Budget, spent: Budget | None) -> Budget:
    """What a call with ``budget`` is charged in a session with ``total`` that has ``spent`` so far.

    GDP session: GDP calls as they are, pure ones as ``pure_dp_gdp_mu(eps)``-GDP, (eps, delta) ones refused.
    (eps, delta) or pure session: pure and (eps, delta) calls as they are; ``GDP(mu, d)`` as
    ``(eps(d'), d + d')``-DP with ``d'`` half of the delta left after ``d`` (refused when none is left).
    """
    if isinstance(total, GDP):
        if isinstance(budget, ApproxDP):
            raise BudgetError(
                "an (epsilon, delta) call cannot be charged to a GDP session; use a pf.ApproxDP session", path="budget"
            )
        if isinstance(budget, PureDP):
            return GDP(accounting.pure_dp_gdp_mu(budget.epsilon))
        return budget
    if not isinstance(budget, GDP):
        return budget
    spare = _delta(total) - (0.0 if spent is None else _delta(spent)) - budget.delta
    if spare <= 0.0:
        raise BudgetError(
            "a GDP call needs some of the session's delta to convert to (epsilon, delta); none is left", path="budget"
        )
    converted = GDP(budget.mu).to_approx_dp(spare / 2.0)
    return ApproxDP(converted.epsilon, budget.delta + spare / 2.0)


def compose_charges(charges: Sequence[Budget], total: Budget) -> Budget | None:
    """The filter composition of ``charges`` in the unit of ``total`` (None when there are none)."""
    if not charges:
        return None
    if isinstance(total, GDP):
        mus = [charge.mu for charge in charges if isinstance(charge, GDP)]
        deltas = [charge.delta for charge in charges if isinstance(charge, GDP)]
        return GDP(math.sqrt(math.fsum(mu * mu for mu in mus)), delta=math.fsum(deltas))
    eps = math.fsum(charge.epsilon for charge in charges if not isinstance(charge, GDP))
    delta = math.fsum(_delta(charge) for charge in charges)
    return PureDP(eps) if delta == 0.0 else ApproxDP(eps, min(delta, math.nextafter(1.0, 0.0)))


def _delta(budget: Budget) -> float:
    return budget.delta if isinstance(budget, (GDP, ApproxDP)) else 0.0


def _fits(spent: Budget, total: Budget) -> bool:
    if isinstance(total, GDP):
        assert isinstance(spent, GDP)
        return spent.mu <= total.mu * (1 + _REL_TOL) and spent.delta <= total.delta * (1 + _REL_TOL)
    assert not isinstance(spent, GDP)
    return spent.epsilon <= total.epsilon * (1 + _REL_TOL) and _delta(spent) <= _delta(total) * (1 + _REL_TOL)


class Session:
    """A total privacy budget for one dataset, charged call by call.

    Parameters
    ----------
    budget : GDP, ApproxDP or PureDP
        The most all calls on the dataset may spend together.
    calls : sequence of SessionCall, optional
        Calls already charged (as loaded from a session file).

    Examples
    --------
    >>> import numpy as np, privframe as pf
    >>> x = np.random.default_rng(0).uniform(size=2000)
    >>> session = pf.Session(pf.GDP(1.0))
    >>> first = session.confidence_interval(x, "mean", method="cr-gs", budget=pf.GDP(0.8), bounds=(0, 1))
    >>> session.spent, round(session.remaining.mu, 6)
    (GDP(mu=0.8, delta=0.0), 0.6)
    >>> session.fits(pf.GDP(0.8)), session.fits(pf.GDP(0.6))
    (False, True)
    >>> session.confidence_interval(x, "mean", method="cr-gs", budget=pf.GDP(0.8), bounds=(0, 1))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    privframe.errors.BudgetError: budget: this 0.8-GDP call would bring the session to 1.13137-GDP, over its ...
    """

    def __init__(self, budget: Budget, *, calls: Sequence[SessionCall] = ()) -> None:
        if not isinstance(budget, (GDP, ApproxDP, PureDP)):
            raise BudgetError("expected pf.GDP, pf.ApproxDP or pf.PureDP", path="budget")
        self._budget = budget
        self._calls: list[SessionCall] = list(calls)
        self._path: Path | None = None
        self._check_recorded()

    # -- state --------------------------------------------------------------------------------------------

    @property
    def budget(self) -> Budget:
        """The session's total."""
        return self._budget

    @property
    def calls(self) -> tuple[SessionCall, ...]:
        """Every call charged so far, in order."""
        return tuple(self._calls)

    @property
    def spent(self) -> Budget | None:
        """What the calls spend together, in the session's unit (None before the first call)."""
        return compose_charges([call.charge for call in self._calls], self._budget)

    @property
    def remaining(self) -> Budget | None:
        """The largest further budget that fits on its own (None when nothing is left).

        For a GDP session that is ``sqrt(mu^2 - spent^2)`` (and the delta left); for (epsilon, delta) the
        epsilon and delta left. A GDP call in an (epsilon, delta) session is charged more than its face value
        (see :func:`call_charge`); :meth:`fits` says exactly whether a call fits.
        """
        spent, total = self.spent, self._budget
        if spent is None:
            return total
        if isinstance(total, GDP):
            assert isinstance(spent, GDP)
            mu_sq = total.mu * total.mu - spent.mu * spent.mu
            if mu_sq <= 0.0 or math.sqrt(mu_sq) <= total.mu * _REL_TOL:
                return None
            return GDP(math.sqrt(mu_sq), delta=max(total.delta - spent.delta, 0.0))
        assert not isinstance(spent, GDP)
        eps = total.epsilon - spent.epsilon
        if eps <= total.epsilon * _REL_TOL:
            return None
        delta = (total.delta if isinstance(total, ApproxDP) else 0.0) - (
            spent.delta if isinstance(spent, ApproxDP) else 0.0
        )
        return ApproxDP(eps, delta) if delta > 0.0 else PureDP(eps)

    @property
    def ledger(self) -> Ledger:
        """Every event of every call, labelled ``"call k: label"``, with the session's spent total."""
        events = [
            attrs.evolve(event, label=f"{call.label}: {event.label}") for call in self._calls for event in call.events
        ]
        return Ledger(events, self.spent, accountant="session")

    def fits(self, budget: Budget) -> bool:
        """Whether a call with ``budget`` would fit the session now."""
        try:
            self._admit(budget)
        except BudgetError:
            return False
        return True

    def summary(self) -> str:
        """One line: calls, spent, remaining and total."""
        spent = "nothing" if self.spent is None else str(self.spent)
        remaining = "nothing" if self.remaining is None else str(self.remaining)
        calls = len(self._calls)
        return f"{calls} call{'' if calls == 1 else 's'} spent {spent} of {self._budget}; remaining {remaining}"

    # -- calls --------------------------------------------------------------------------------------------

    def run(self, pipeline: Pipeline, x: npt.ArrayLike, rng: RngLike = None) -> IntervalResult | RegionResult:
        """:meth:`Pipeline.run`, charged to the session first (the pipeline's budget is the charge)."""
        if not isinstance(pipeline, Pipeline):
            raise ConfigError("expected a pf.Pipeline", path="pipeline")
        self._admit(pipeline.budget)
        return self._run(pipeline, x, rng, region=False)

    def _after(self, budget: Budget | None) -> Budget:
        """The charge of a call with ``budget`` if it fits now, else ``BudgetError`` (nothing recorded)."""
        if budget is None:
            raise BudgetError(
                "a session runs private calls only; a non-private reference would ignore its budget", path="budget"
            )
        if not isinstance(budget, (GDP, ApproxDP, PureDP)):
            raise BudgetError("expected pf.GDP, pf.ApproxDP or pf.PureDP", path="budget")
        charge = call_charge(budget, self._budget, self.spent)
        after = compose_charges([*(call.charge for call in self._calls), charge], self._budget)
        assert after is not None
        if not _fits(after, self._budget):
            raise BudgetError(
                f"this {budget} call would bring the session to {after}, over its total {self._budget}; "
                "nothing was run",
                path="budget",
            )
        return charge

    def _admit(self, budget: Budget | None) -> None:
        """Refuse a call that is not private or does not fit, before anything else happens."""
        with self._locked():
            self._reload()
            self._after(budget)

    def _run(self, pipe: Pipeline, x: npt.ArrayLike, rng: RngLike, *, region: bool) -> IntervalResult | RegionResult:
        # The public schema check: a malformed input is not a release and costs nothing (a Dask array's
        # values are checked on the workers, before anything is released).
        data = pipe.prepare(x)
        n = data.n if isinstance(data, DistributedData) else int(data.shape[0])
        pipe = pipe.select(n)  # method="auto" chooses from n (public) before anything is charged
        pipe.check(n)  # a refusal that needs only n (blbquant's min_block) costs nothing either
        with self._locked():  # admit and record in one step, so two processes cannot both spend the rest
            self._reload()
            budget = pipe.budget
            charge = self._after(budget)
            assert budget is not None
            call = SessionCall(f"call {len(self._calls) + 1}", budget, charge, "running")
            self._calls.append(call)
            self._store()
        try:
            result = pipe.execute(data, rng, region=region)
        except PTRFailed as exc:
            self._finish(call, "ptr-failed", exc.ledger.events if exc.ledger is not None else ())
            raise
        except BaseException:
            self._finish(call, "error", ())
            raise
        self._finish(call, "released", result.privacy.events)
        return result

    def _finish(self, call: SessionCall, outcome: str, events: Sequence[PrivacyEvent]) -> None:
        with self._locked():
            self._reload()
            done = attrs.evolve(call, outcome=outcome, events=events)
            self._calls = [done if recorded.label == call.label else recorded for recorded in self._calls]
            self._store()

    def _check_recorded(self) -> None:
        gdp = isinstance(self._budget, GDP)
        if any(isinstance(call.charge, GDP) != gdp for call in self._calls):
            raise ConfigError("a recorded charge is not in the session's unit", path="calls")
        spent = self.spent
        if spent is not None and not _fits(spent, self._budget):
            raise ConfigError("the recorded calls already spend more than the session's total", path="calls")

    def _interval(self, x: Any, req: Request) -> IntervalResult:
        """:func:`privframe.confidence_interval`, charged to the session first.

        The call is admitted (its budget must fit what is left) before anything is built or read, and charged
        once its pipeline has been checked at n.

        {parameters}

        Returns
        -------
        IntervalResult
        """
        self._admit(req.budget)
        pipe = assemble_request(attrs.evolve(req, rng=None))
        return as_interval(pipe, self._run(pipe, x, req.rng, region=False))

    def _region(self, x: Any, req: Request) -> RegionResult:
        """:func:`privframe.confidence_region`, charged to the session first.

        {parameters}

        Returns
        -------
        RegionResult
        """
        self._admit(req.budget)
        pipe = assemble_request(attrs.evolve(req, rng=None))
        return as_region(self._run(pipe, x, req.rng, region=True))

    confidence_interval = session_method(request, _interval)
    confidence_region = session_method(request, _region)

    # -- files --------------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """An exclusive lock on the session file's lock file (nothing for a session in memory)."""
        if self._path is None or fcntl is None:
            yield
            return
        lock = self._path.with_name(self._path.name + ".lock")
        try:
            handle = os.open(lock, os.O_CREAT | os.O_RDWR, 0o600)
        except OSError as exc:
            raise PrivframeError(f"cannot open the session's lock file ({exc.strerror})", path="session") from exc
        try:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield
        finally:
            os.close(handle)  # closing releases the lock

    def _reload(self) -> None:
        """Read the calls other processes recorded in the file since this session last looked."""
        if self._path is not None and self._path.exists():
            stored = Session.from_dict(_read(self._path))
            if stored.budget != self._budget:
                raise ConfigError("the session file's total changed underneath this session", path="session")
            self._calls = list(stored.calls)

    def _store(self) -> None:
        if self._path is not None:
            self.save(self._path)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready table: the total and every call with its events."""
        return {
            "format": _FORMAT,
            "budget": budget_to_table(self._budget),
            "calls": [call.to_dict() for call in self._calls],
        }

    @classmethod
    def from_dict(cls, table: Mapping[str, Any], path: str = "session") -> Session:
        """The session a :meth:`to_dict` table describes; errors name ``path``."""
        if not isinstance(table, Mapping) or table.get("format") != _FORMAT:
            raise ConfigError(f"not a privframe session (expected format '{_FORMAT}')", path=path)
        budget = table.get("budget")
        calls = table.get("calls", [])
        if not isinstance(budget, Mapping):
            raise ConfigError("expected a budget table", path=f"{path}.budget")
        if not isinstance(calls, list):
            raise ConfigError("expected a list", path=f"{path}.calls")
        return cls(
            budget_from_table(budget, f"{path}.budget"),
            calls=[SessionCall.from_dict(call, f"{path}.calls.{i}") for i, call in enumerate(calls)],
        )

    @classmethod
    def open(cls, path: str | Path, budget: Budget | None = None) -> Session:
        """The session stored at ``path``, created with total ``budget`` if the file does not exist.

        Every call is written back to the file before it reads the data and again when it ends, so a
        process that dies mid-call still leaves the charge on record.
        """
        file = Path(path)
        if file.exists():
            session = cls.from_dict(_read(file))
            if budget is not None and budget != session.budget:
                raise ConfigError(
                    f"the session file's total is {session.budget}, not {budget}; a session's total never changes",
                    path="session",
                )
        elif budget is None:
            raise ConfigError("a new session file needs its total budget", path="session-budget")
        else:
            session = cls(budget)
            session.save(file)
        session._path = file
        return session

    def save(self, path: str | Path) -> None:
        """Write the session as JSON, atomically (a reader never sees half a file)."""
        file = Path(path)
        text = json.dumps(self.to_dict(), indent=1)
        temporary = None
        try:
            handle, temporary = tempfile.mkstemp(dir=file.parent or Path("."), prefix=f".{file.name}.")
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                stream.write(text)
            os.replace(temporary, file)
        except OSError as exc:
            if temporary is not None:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
            raise PrivframeError(f"cannot write the session file ({exc.strerror})", path="session") from exc


def _read(file: Path) -> Mapping[str, Any]:
    try:
        table = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError("cannot read the session file (not UTF-8 JSON)", path="session") from exc
    if not isinstance(table, Mapping):
        raise ConfigError("not a privframe session", path="session")
    return table
