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

A session kept in a file (:meth:`Session.open`) appends one line when a call is admitted (before it reads
the data) and one when it ends, under an exclusive lock, so several processes share one total. The lines
form a hash chain (:mod:`privframe.privacy.session_log`), verified when the file is opened and each time it is
reread: a file that was edited, cut short or reordered is refused, never silently accepted. What the chain
cannot detect (a deleted file, an older copy, a chain rewritten with recomputed hashes), and what covers it
(a head kept elsewhere, a key), is in ``docs/concepts.md``, sessions.
"""

from __future__ import annotations

import contextlib
import datetime
import importlib.metadata
import json
import math
import os
import secrets
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy.typing as npt

from privframe import suggest
from privframe._rng import RngLike
from privframe.api import as_interval, as_region
from privframe.data.distributed import DistributedData
from privframe.errors import BudgetError, ConfigError, PrivframeError, PTRFailed
from privframe.pipeline.build import Pipeline, assemble_request
from privframe.pipeline.request import Request, request, session_method
from privframe.privacy import accounting, session_log
from privframe.privacy.budgets import GDP, ApproxDP, Budget, PureDP, budget_from_table, budget_to_table, delta_of
from privframe.privacy.events import PrivacyEvent
from privframe.privacy.ledger import Ledger
from privframe.results import IntervalResult, RegionResult

__all__ = ["Session", "SessionCall", "call_charge", "compose_charges"]

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
    spare = delta_of(total) - (0.0 if spent is None else delta_of(spent)) - budget.delta
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
    delta = math.fsum(delta_of(charge) for charge in charges)
    return PureDP(eps) if delta == 0.0 else ApproxDP(eps, min(delta, math.nextafter(1.0, 0.0)))


def _fits(spent: Budget, total: Budget) -> bool:
    if isinstance(total, GDP):
        assert isinstance(spent, GDP)
        return spent.mu <= total.mu * (1 + _REL_TOL) and spent.delta <= total.delta * (1 + _REL_TOL)
    assert not isinstance(spent, GDP)
    return spent.epsilon <= total.epsilon * (1 + _REL_TOL) and delta_of(spent) <= delta_of(total) * (1 + _REL_TOL)


def _over(value: float, limit: float) -> bool:
    return value > limit * (1 + _REL_TOL)


def _overflow(after: Budget, total: Budget, remaining: Budget | None) -> str:
    """Which component of ``total`` a refused call would overflow, and what would still fit.

    ``"delta would be 2e-06 > 1e-06; the remaining delta is 0: a pure-epsilon call of up to 4 fits"``.
    """
    if isinstance(total, GDP):
        assert isinstance(after, GDP)
        over = [
            (name, value, limit)
            for name, value, limit in (("mu", after.mu, total.mu), ("delta", after.delta, total.delta))
            if _over(value, limit)
        ]
    else:
        assert not isinstance(after, GDP)
        over = [
            (name, value, limit)
            for name, value, limit in (
                ("epsilon", after.epsilon, total.epsilon),
                ("delta", delta_of(after), delta_of(total)),
            )
            if _over(value, limit)
        ]
    said = "; ".join(f"{name} would be {value:g} > {limit:g}" for name, value, limit in over)
    if remaining is None:
        left = "mu" if isinstance(total, GDP) else "epsilon"
        return f"{said}; the remaining {left} is 0: no further call fits"
    left_delta = delta_of(remaining)
    if left_delta <= delta_of(total) * _REL_TOL:
        left_delta = 0.0
    notes = []
    for name in dict.fromkeys(name for name, _, _ in over):
        if name == "mu":
            assert isinstance(remaining, GDP)
            notes.append(f"the remaining mu is {remaining.mu:g}")
        elif name == "epsilon":
            assert not isinstance(remaining, GDP)
            notes.append(f"the remaining epsilon is {remaining.epsilon:g}")
        else:
            notes.append(f"the remaining delta is {left_delta:g}")
    if isinstance(remaining, GDP):
        fits = GDP(remaining.mu, delta=left_delta)
        room = f"a call of up to {fits} fits"
    elif left_delta == 0.0:
        room = f"a pure-epsilon call of up to {remaining.epsilon:g} fits"
    else:
        room = f"a call of up to {ApproxDP(remaining.epsilon, left_delta)} fits"
    return f"{said}; {', '.join(notes)}: {room}"


class Session:
    """A total privacy budget for one dataset, charged call by call.

    Parameters
    ----------
    budget : GDP, ApproxDP or PureDP
        The most all calls on the dataset may spend together.
    calls : sequence of SessionCall, optional
        Calls already charged (as loaded from a session file).
    allow_asymptotic : bool, default False
        Admit pipelines whose guarantee holds only asymptotically (PrivBoot's ``accounting="asymptotic"``,
        Dette-Graw's ``calibration="clt"``; :attr:`privframe.Pipeline.asymptotic`). By default they are
        refused before they are admitted, and cost nothing: the session's total is an exact guarantee.

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

    def __init__(self, budget: Budget, *, calls: Sequence[SessionCall] = (), allow_asymptotic: bool = False) -> None:
        if not isinstance(budget, (GDP, ApproxDP, PureDP)):
            raise BudgetError("expected pf.GDP, pf.ApproxDP or pf.PureDP", path="budget")
        if not isinstance(allow_asymptotic, bool):
            raise ConfigError("must be True or False", path="allow_asymptotic")
        self._budget = budget
        self._allow_asymptotic = allow_asymptotic
        self._calls: list[SessionCall] = _checked_calls(calls)
        self._path: Path | None = None
        self._log: session_log.Log | None = None
        self._key: bytes | None = None
        self._anchor: Anchor | None = None
        self._witness = _NO_WITNESS
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
        """Whether a call with ``budget`` would fit the session now (False for ``None``: a session runs
        private calls only); anything but a budget or None is a ``ConfigError``, not an answer."""
        if budget is not None and not isinstance(budget, (GDP, ApproxDP, PureDP)):
            raise ConfigError("expected pf.GDP, pf.ApproxDP or pf.PureDP", path="budget")
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
                f"this {budget} call would bring the session to {after}, over its total {self._budget}: "
                f"{_overflow(after, self._budget, self.remaining)}; nothing was run",
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
        # A refusal that needs only n and the shape (blbquant's min_block, m >= n, scalar bounds on vectors)
        # costs nothing either.
        pipe.check(n, shape=data.shape)
        if pipe.asymptotic and not self._allow_asymptotic:
            raise BudgetError(
                "this pipeline's guarantee holds only asymptotically, and the session's total is an exact one; "
                "use the method's exact default, or open the session with allow_asymptotic=True; nothing was run",
                path="method",
            )
        budget = pipe.budget
        assert budget is not None
        call = self._begin(budget)
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

    def _begin(self, budget: Budget) -> SessionCall:
        """Admit and record a call in one step (so two processes cannot both spend the rest), on file
        before the call reads the data; ``BudgetError`` when it does not fit (nothing recorded)."""
        with self._locked():
            self._reload()
            charge = self._after(budget)
            call = SessionCall(f"call {len(self._calls) + 1}", budget, charge, "running")
            self._record(_admit_record(call))
            self._calls.append(call)
        return call

    def _finish(self, call: SessionCall, outcome: str, events: Sequence[PrivacyEvent]) -> None:
        with self._locked():
            self._reload()
            done = attrs.evolve(call, outcome=outcome, events=events)
            self._record(_finish_record(done))
            self._calls = [done if recorded.label == call.label else recorded for recorded in self._calls]

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

    def suggest_bounds(
        self,
        x: npt.ArrayLike,
        budget: Budget,
        *,
        search: tuple[float, float] = suggest.DEFAULT_SEARCH,
        quantiles: tuple[float, float] = suggest.DEFAULT_QUANTILES,
        confidence: float = 0.95,
        rng: RngLike = None,
    ) -> suggest.SuggestedBounds:
        """:func:`privframe.suggest_bounds`, charged to the session first (``budget`` is the charge).

        The call must fit what is left; it is checked and planned (a refusal costs nothing), then charged
        and recorded before the selections run. What remains is the budget left for the interval.

        Parameters
        ----------
        x, budget, search, quantiles, confidence, rng
            As for :func:`privframe.suggest_bounds`.

        Returns
        -------
        SuggestedBounds

        Examples
        --------
        >>> import numpy as np, privframe as pf
        >>> x = np.random.default_rng(0).normal(40.0, 5.0, size=50_000)
        >>> session = pf.Session(pf.PureDP(1.0))
        >>> suggestion = session.suggest_bounds(x, pf.PureDP(0.2), search=(0, 1000), rng=1)
        >>> suggestion.bounds, session.remaining
        (Bounds(low=25.0, high=63.0), PureDP(epsilon=0.8))
        """
        self._admit(budget)
        prepared = suggest.prepare(x, budget, search=search, quantiles=quantiles, confidence=confidence, rng=rng)
        call = self._begin(prepared.budget)
        try:
            result = suggest.release(prepared)
        except BaseException:
            self._finish(call, "error", ())
            raise
        self._finish(call, "released", result.privacy.events)
        return result

    confidence_interval = session_method(request, _interval)
    confidence_region = session_method(request, _region)

    # -- files --------------------------------------------------------------------------------------------

    @property
    def head(self) -> str | None:
        """The hash of the last line of the session file (None for a session in memory).

        It fixes the whole file up to that line: keep it somewhere the analyst cannot rewrite (an
        append-only log, a database) and pass it back as ``Session.open(path, expect_head=...)`` to refuse
        a file that was replaced by an older copy of itself, rewritten or deleted.
        """
        return None if self._log is None else self._log.head

    @property
    def id(self) -> str | None:
        """The session file's random id (None for a session in memory)."""
        return None if self._log is None else str(self._log.header["session"])

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """An exclusive lock on the session file's lock file (nothing for a session in memory)."""
        with session_log.locked(self._path) as witness:
            self._witness = witness
            try:
                yield
            finally:
                self._witness = _NO_WITNESS

    def _reload(self) -> None:
        """Read the lines other processes appended since this session last looked (under the lock).

        The file must still hold every line this session has read or written: a file cut short, rewritten
        or replaced is a ``ConfigError``.
        """
        if self._path is None or self._log is None:
            return
        log = session_log.reread(self._path, self._key, self._log)
        self._witness.check(log)
        for record in log.records[len(self._log.records) :]:
            _apply(record, self._budget, self._calls)
        self._log = log

    def _record(self, body: dict[str, Any]) -> None:
        """Seal ``body`` as the next line, hand the new head to the anchor, append it (under the lock)."""
        if self._path is None or self._log is None:
            return
        previous = self._log.head
        record = session_log.seal(body, len(self._log.records), previous, self._key)
        if self._anchor is not None:
            self._anchor(record["hash"])  # before the line is written: a failing anchor leaves no charge
        try:
            session_log.append(self._path, [record])
        except ConfigError as failed:
            if self._anchor is not None:  # the line is not in the file: the anchor gets the file's head back
                _give_back(self._anchor, previous, failed)
            raise
        self._log = self._log.extended([record])
        self._witness.write(self._log)

    def _attach(self, file: Path, log: session_log.Log, key: bytes | None, anchor: Anchor | None) -> Session:
        self._path, self._log, self._key, self._anchor = file, log, key, anchor
        return self

    @classmethod
    def open(
        cls,
        path: str | Path,
        budget: Budget | None = None,
        *,
        key: bytes | None = None,
        expect_head: str | None = None,
        anchor: Anchor | None = None,
        allow_asymptotic: bool = False,
    ) -> Session:
        """The session stored at ``path``, created with total ``budget`` if the file does not exist.

        Every call is appended to the file before it reads the data and again when it ends, so a process
        that dies mid-call still leaves the charge on record. The file's hash chain is verified here and
        each time the session rereads it; any edited, removed, reordered, inserted or cut-short line is a
        ``ConfigError`` (``docs/concepts.md``, sessions, for what the chain can and cannot detect).

        Parameters
        ----------
        path : str or Path
            The session file (a lock file ``path.lock`` sits beside it).
        budget : Budget, optional
            The total of a new file; for an existing file it may be left out, and must equal the file's.
        key : bytes, optional
            A secret (at least 16 bytes) that seals every line with HMAC-SHA256 instead of SHA-256, so that
            whoever does not hold it cannot rewrite the file with recomputed hashes. A keyed file opens
            only with its key.
        expect_head : str, optional
            A :attr:`head` kept elsewhere: the file must hold it (extend the log that had it), and must
            exist.
        anchor : callable, optional
            Called with the new :attr:`head` each time the file is about to grow (before a call reads the
            data, and when it ends), under the session's lock, to keep the head elsewhere. If it raises,
            nothing is written and the call does not run. If the line then cannot be written (a full
            disk), the anchor is called again with the head the file still ends in.
        allow_asymptotic : bool, default False
            Admit pipelines whose guarantee holds only asymptotically (see :class:`Session`).

        Returns
        -------
        Session

        Raises
        ------
        ConfigError
            At path ``session`` when the file was altered (the session cannot be trusted), is a
            ``privframe-session/1`` file (see :meth:`upgrade`), holds another total than ``budget``, or
            cannot be written (a failed write leaves the file as it was: nothing is recorded). At the
            argument's name (``path``, ``key``, ``expect_head``, ``anchor``, ``allow_asymptotic``) when it
            has the wrong type, before any file is touched.
        BudgetError
            ``budget`` is not a budget.
        """
        file, key = _check_path(path), session_log.check_key(key)
        expected = _check_head(expect_head)
        if budget is not None and not isinstance(budget, (GDP, ApproxDP, PureDP)):
            raise BudgetError("expected pf.GDP, pf.ApproxDP or pf.PureDP", path="budget")
        _check_anchor(anchor)
        _check_flag(allow_asymptotic)
        with session_log.locked(file) as witness:
            log = _open_log(file, budget, key, expected, anchor, witness)
        total, calls = _replay(log)
        if budget is not None and budget != total:
            raise ConfigError(
                f"the session file's total is {total}, not {budget}; a session's total never changes", path="session"
            )
        if expected is not None and not log.holds(expected):
            raise session_log.altered(
                "it does not hold the head you expected: it was replaced by an older copy of itself, rewritten, "
                "or belongs to another session"
            )
        return cls(total, calls=calls, allow_asymptotic=allow_asymptotic)._attach(file, log, key, anchor)

    def save(self, path: str | Path, *, key: bytes | None = None) -> None:
        """Write this session (in memory) to a new session file; an existing file is never overwritten.

        The calls are recorded as they were charged here; :meth:`open` then continues the file.

        Parameters
        ----------
        path : str or Path
            The new session file.
        key : bytes, optional
            Seal it with HMAC-SHA256 under this secret (see :meth:`open`).
        """
        file, key = _check_path(path), session_log.check_key(key)
        with session_log.locked(file) as witness:
            if file.exists():
                raise ConfigError(
                    "the session file already exists and is never overwritten; save to a new path", path="session"
                )
            witness.refuse_missing()
            witness.write(_new_log(file, self._budget, self._calls, key, None, {}))

    @classmethod
    def upgrade(
        cls,
        path: str | Path,
        *,
        key: bytes | None = None,
        anchor: Anchor | None = None,
        allow_asymptotic: bool = False,
    ) -> Session:
        """Convert a ``privframe-session/1`` file to a hash-chained one, once, and open it.

        A version-1 file has no chain, so nothing can tell whether its calls were edited or removed: the
        new file's header records that its first calls were ``upgraded`` from an unverified file (how many
        of them), and the chain vouches only for what follows. The old file is kept beside the new one as
        ``path.v1``.

        Parameters
        ----------
        path : str or Path
            The ``privframe-session/1`` file.
        key, anchor, allow_asymptotic
            As for :meth:`open`.

        Returns
        -------
        Session
            The upgraded session, open on ``path``.
        """
        file, key = _check_path(path), session_log.check_key(key)
        _check_anchor(anchor)
        _check_flag(allow_asymptotic)
        with session_log.locked(file) as witness:
            total, calls = _read_legacy(file)
            backup = file.with_name(file.name + ".v1")
            fresh = file.with_name(f".{file.name}.upgrade")
            upgraded = {"from": session_log.LEGACY_FORMAT, "calls": len(calls), "verified": False}
            with contextlib.suppress(FileNotFoundError):
                fresh.unlink()  # left by an upgrade that died
            log = _new_log(fresh, total, calls, key, anchor, {"upgraded": upgraded})
            _link_backup(file, backup)
            os.replace(fresh, file)
            witness.write(log)
        return cls(total, calls=calls, allow_asymptotic=allow_asymptotic)._attach(file, log, key, anchor)


Anchor = Callable[[str], object]
"""A callable given each new head of a session file (``Session.open(anchor=...)``)."""

_NO_WITNESS = session_log.Witness(None, "")


def _checked_calls(calls: object) -> list[SessionCall]:
    """``calls`` as a list of :class:`SessionCall`, numbered ``"call 1"``, ``"call 2"``, ... in order (as a
    session file records them, so that :meth:`Session.save` writes a file :meth:`Session.open` reads)."""
    if isinstance(calls, str | bytes | Mapping):
        raise ConfigError("expected a sequence of privframe.session.SessionCall", path="calls")
    try:
        items: list[object] = list(calls)  # type: ignore[call-overload]
    except TypeError:
        raise ConfigError("expected a sequence of privframe.session.SessionCall", path="calls") from None
    checked: list[SessionCall] = []
    for i, call in enumerate(items):
        if not isinstance(call, SessionCall):
            raise ConfigError(
                f"expected a sequence of privframe.session.SessionCall; item {i} is {type(call).__name__}", path="calls"
            )
        if call.label != f"call {i + 1}":
            raise ConfigError(f"item {i} must be labelled 'call {i + 1}': calls are numbered in order", path="calls")
        checked.append(call)
    return checked


def _give_back(anchor: Anchor, head: str, failed: ConfigError) -> None:
    """Hand ``anchor`` the ``head`` the file still ends in after the append that ``failed``.

    The anchor was given the head of a line that was never written; left so, the next
    ``Session.open(expect_head=...)`` with it would refuse a file that is as it was. If the anchor refuses
    the old head too, the error says that it holds a head the file does not.
    """
    try:
        anchor(head)
    except Exception as undo:
        raise ConfigError(
            f"{failed.message}; the anchor was given the head of the line that was not written and refused "
            f"the file's head after it ({type(undo).__name__}): give it Session.head before it is relied on",
            path=failed.path,
        ) from undo


def _check_path(path: object) -> Path:
    if not isinstance(path, str | os.PathLike) or not isinstance(os.fspath(path), str):
        raise ConfigError("expected a file path (str or pathlib.Path)", path="path")
    return Path(path)


def _check_anchor(anchor: object) -> None:
    if anchor is not None and not callable(anchor):
        raise ConfigError("expected a callable that takes the new head (a str), or None", path="anchor")


def _check_flag(allow_asymptotic: object) -> None:
    if not isinstance(allow_asymptotic, bool):
        raise ConfigError("must be True or False", path="allow_asymptotic")


def _check_head(head: str | None) -> str | None:
    if head is None:
        return None
    if not isinstance(head, str) or len(head) != 64 or any(c not in "0123456789abcdef" for c in head):
        raise ConfigError("expected a session head: 64 lowercase hex digits, as Session.head gives", path="expect_head")
    return head


def _open_log(
    file: Path,
    budget: Budget | None,
    key: bytes | None,
    expected: str | None,
    anchor: Anchor | None,
    witness: session_log.Witness,
) -> session_log.Log:
    """The verified log in ``file``, or a new one with total ``budget`` (``witness`` holds the lock)."""
    if file.exists():
        log = session_log.read(file, key)
        witness.check(log)
        return log
    if expected is not None:
        raise session_log.altered("it is gone, yet a head was expected: it was deleted or moved")
    witness.refuse_missing()
    if budget is None:
        raise ConfigError("a new session file needs its total budget", path="session-budget")
    if not isinstance(budget, (GDP, ApproxDP, PureDP)):
        raise BudgetError("expected pf.GDP, pf.ApproxDP or pf.PureDP", path="budget")
    log = _new_log(file, budget, (), key, anchor, {})
    witness.write(log)
    return log


def _new_log(
    file: Path,
    total: Budget,
    calls: Sequence[SessionCall],
    key: bytes | None,
    anchor: Anchor | None,
    extra: Mapping[str, Any],
) -> session_log.Log:
    """Create ``file`` with a new header and the records of ``calls``; the log it holds."""
    bodies = [_header(total, key, extra)]
    for call in calls:
        bodies.append(_admit_record(call))
        if call.outcome != "running":
            bodies.append(_finish_record(call))
    records: list[dict[str, Any]] = []
    for seq, body in enumerate(bodies):
        records.append(session_log.seal(body, seq, records[-1]["hash"] if records else session_log.GENESIS, key))
    if anchor is not None:
        anchor(records[-1]["hash"])
    session_log.create(file, records)
    return session_log.Log("", ()).extended(records)


def _header(total: Budget, key: bytes | None, extra: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "format": session_log.FORMAT,
        "session": secrets.token_hex(16),
        "budget": budget_to_table(total),
        "created": _now(),
        "privframe": _version(),
        "mac": session_log.UNKEYED if key is None else session_log.KEYED,
        **extra,
    }


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def _version() -> str:
    try:
        return importlib.metadata.version("privframe")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - run from a source tree
        return "unknown"


def _admit_record(call: SessionCall) -> dict[str, Any]:
    """The line that admits ``call``: its budget and the charge fixed for it."""
    return {
        "kind": "admit",
        "call": call.label,
        "budget": budget_to_table(call.budget),
        "charge": budget_to_table(call.charge),
        "at": _now(),
    }


def _finish_record(call: SessionCall) -> dict[str, Any]:
    """The line that ends ``call``: its outcome and its events."""
    return {
        "kind": "finish",
        "call": call.label,
        "outcome": call.outcome,
        "events": [event.to_dict() for event in call.events],
    }


# -- replaying a verified log ------------------------------------------------------------------------------


def _replay(log: session_log.Log) -> tuple[Budget, list[SessionCall]]:
    """The total and the calls a verified log records; a record privframe would not write is an alteration."""
    table = log.header.get("budget")
    total = _budget(table, 0, "budget")
    if not isinstance(total, (GDP, ApproxDP, PureDP)):  # pragma: no cover - budget_from_table gives one
        raise session_log.altered("line 1 holds no total")
    calls: list[SessionCall] = []
    for record in log.records[1:]:
        _apply(record, total, calls)
    return total, calls


def _apply(record: Mapping[str, Any], total: Budget, calls: list[SessionCall]) -> None:
    """Add what ``record`` says to ``calls`` (checked: the log may have been forged with valid hashes)."""
    seq = int(record["seq"])
    kind = record.get("kind")
    if kind == "admit":
        calls.append(_admitted(record, seq, total, calls))
    elif kind == "finish":
        _finished(record, seq, calls)
    else:
        raise session_log.altered(f"line {seq + 1} neither admits nor ends a call")


def _admitted(record: Mapping[str, Any], seq: int, total: Budget, calls: Sequence[SessionCall]) -> SessionCall:
    """The call an admission line records: numbered in order, charged soundly, within the total."""
    label = f"call {len(calls) + 1}"
    if record.get("call") != label:
        raise session_log.altered(f"line {seq + 1} admits a call out of order")
    budget = _budget(record.get("budget"), seq, "budget")
    charge = _budget(record.get("charge"), seq, "charge")
    if isinstance(charge, GDP) != isinstance(total, GDP) or not _covers(charge, budget):
        raise session_log.altered(f"line {seq + 1} charges less than its call's budget costs")
    after = compose_charges([*(call.charge for call in calls), charge], total)
    if after is None or not _fits(after, total):
        raise session_log.altered(f"line {seq + 1} admits a call over the session's total")
    return SessionCall(label, budget, charge, "running")


def _finished(record: Mapping[str, Any], seq: int, calls: list[SessionCall]) -> None:
    """End the running call a finish line names, with its outcome and events."""
    label = record.get("call")
    index = next((i for i, call in enumerate(calls) if call.label == label), None)
    outcome, events = record.get("outcome"), record.get("events")
    if index is None or calls[index].outcome != "running":
        raise session_log.altered(f"line {seq + 1} ends a call that is not running")
    if outcome not in OUTCOMES[1:] or not isinstance(events, list):
        raise session_log.altered(f"line {seq + 1} records no outcome")
    try:
        parsed = [PrivacyEvent.from_dict(event, f"line {seq + 1}.events.{i}") for i, event in enumerate(events)]
    except ConfigError as exc:
        raise session_log.altered(f"line {seq + 1} holds an event privframe would not write") from exc
    calls[index] = attrs.evolve(calls[index], outcome=outcome, events=parsed)


def _budget(table: object, seq: int, name: str) -> Budget:
    if not isinstance(table, Mapping):
        raise session_log.altered(f"line {seq + 1} has no {name}")
    try:
        return budget_from_table(table, name)
    except ConfigError as exc:
        raise session_log.altered(f"line {seq + 1} has an invalid {name}") from exc


def _covers(charge: Budget, budget: Budget) -> bool:
    """Whether ``charge`` implies ``budget``'s guarantee (as :func:`call_charge` ensures, up to rounding)."""
    low = 1.0 - 1e-9
    if isinstance(charge, GDP):
        if isinstance(budget, PureDP):
            return charge.mu >= accounting.pure_dp_gdp_mu(budget.epsilon) * low
        return isinstance(budget, GDP) and charge.mu >= budget.mu * low and charge.delta >= budget.delta * low
    if isinstance(budget, GDP):
        spare = delta_of(charge) - budget.delta
        return spare > 0.0 and charge.epsilon >= GDP(budget.mu).to_approx_dp(spare).epsilon * low
    return charge.epsilon >= budget.epsilon * low and delta_of(charge) >= delta_of(budget) * low


def _read_legacy(file: Path) -> tuple[Budget, list[SessionCall]]:
    """The total and calls of a ``privframe-session/1`` file (for :meth:`Session.upgrade`)."""
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("no session file to upgrade", path="session") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError("cannot read the session file (not UTF-8 JSON)", path="session") from exc
    try:
        table = json.loads(text)
    except json.JSONDecodeError:
        table = None
    if not isinstance(table, Mapping) or table.get("format") != session_log.LEGACY_FORMAT:
        raise ConfigError(
            f"only a {session_log.LEGACY_FORMAT} file can be upgraded; open any other with pf.Session.open",
            path="session",
        )
    budget, calls = table.get("budget"), table.get("calls", [])
    if not isinstance(budget, Mapping):
        raise ConfigError("expected a budget table", path="session.budget")
    if not isinstance(calls, list):
        raise ConfigError("expected a list", path="session.calls")
    total = budget_from_table(budget, "session.budget")
    recorded = [
        attrs.evolve(SessionCall.from_dict(call, f"session.calls.{i}"), label=f"call {i + 1}")
        for i, call in enumerate(calls)
    ]
    Session(total, calls=recorded)  # the unit and the total are checked
    for i, call in enumerate(recorded):
        if not _covers(call.charge, call.budget):
            raise ConfigError(
                "charges less than its budget costs: this file cannot be upgraded", path=f"session.calls.{i}"
            )
    return total, recorded


def _link_backup(file: Path, backup: Path) -> None:
    try:
        os.link(file, backup)
    except FileExistsError:
        raise ConfigError(f"{backup.name} already exists: move it away, then upgrade again", path="session") from None
    except OSError as exc:
        raise PrivframeError(f"cannot keep the old session file ({exc.strerror})", path="session") from exc
