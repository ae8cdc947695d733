"""The ``privframe`` command line: plugins, budget, run, audit, experiment, demo."""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from privframe._typing import Array
from privframe.data.arrays import load_data
from privframe.data.files import connect, is_distributed_path, load_distributed
from privframe.errors import BudgetError, ConfigError, PrivframeError
from privframe.pipeline.build import Pipeline
from privframe.pipeline.methodmap import CANDIDATE_RULE_SHORT
from privframe.plugin.protocols import SelectionMechanism
from privframe.plugin.registry import registry
from privframe.privacy import accounting
from privframe.privacy.budgets import GDP, ApproxDP, Budget, PureDP
from privframe.results import IntervalResult, RegionResult
from privframe.session import Session

__all__ = ["build_parser", "demo_data", "main"]

DEMO_N = 20_000
DEMO_TRUTH = 2.0 / 7.0


def demo_data(n: int = DEMO_N) -> Array:
    """The embedded demo dataset: n draws from Beta(2, 5) on the public range [0, 1] (true mean 2/7).

    Generated from a fixed seed so the data are the same every time; the privacy noise is not.
    """
    return np.random.default_rng(20261129).beta(2.0, 5.0, size=n)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (the CLI reference in the docs is checked against it)."""
    parser = argparse.ArgumentParser(
        prog="privframe", description="Differentially private confidence intervals and regions via resampling."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("plugins", help="list registered plugins (name, kind, providing distribution)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument(
        "--explain",
        metavar="STATISTIC",
        help="which methods accept this registered statistic, and why the others refuse it",
    )

    p = sub.add_parser("budget", help="convert a privacy budget between units")
    p.add_argument("--mu", type=float, help="GDP parameter mu")
    p.add_argument("--gdp-delta", type=float, help="delta of a (mu, delta)-GDP budget (with --mu; default 0)")
    p.add_argument("--epsilon", type=float, help="epsilon of (epsilon, delta)-DP")
    p.add_argument("--delta", type=float, help="delta of (epsilon, delta)-DP")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("run", help="run a pipeline from a TOML or JSON config")
    p.add_argument("config", help="pipeline file (.toml or .json)")
    p.add_argument("--data", help="data file (.csv with a header row, or .npy)")
    p.add_argument("--demo", action="store_true", help="run on the built-in demo dataset instead of --data")
    p.add_argument("--column", help="CSV column to use (required when the CSV has several columns)")
    p.add_argument("--columns", help="several CSV columns, comma-separated, in order (records of dimension d)")
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="Dask scheduler (tcp://host:8786) that reads and reduces a glob or Parquet --data (docs/cluster.md)",
    )
    p.add_argument("--seed", type=int, help="seed for a reproducible run (voids privacy for anyone who knows it)")
    p.add_argument(
        "--session",
        metavar="FILE",
        help="charge the run to this session file (a hash-chained log, created if missing): repeated runs compose",
    )
    p.add_argument(
        "--session-budget",
        metavar="SPEC",
        help="total budget of a new session file: mu=M[,delta=D] or epsilon=E[,delta=D]",
    )
    p.add_argument(
        "--session-expect-head",
        metavar="HEAD",
        help="refuse a session file that does not hold this head (printed by an earlier run): an older copy",
    )
    p.add_argument(
        "--session-key-file",
        metavar="KEYFILE",
        help="seal the session file with HMAC-SHA256 under the secret in this file (its bytes, >= 16)",
    )
    p.add_argument(
        "--session-allow-asymptotic",
        action="store_true",
        help="admit pipelines whose guarantee holds only asymptotically to the session (refused by default)",
    )
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("audit", help="audit a registered mechanism on its worst-case pair of neighbours")
    p.add_argument("mechanism", help="registered mechanism name (see privframe plugins)")
    p.add_argument("--mu", type=float, help="claimed GDP budget mu (with --delta: (mu, delta)-GDP)")
    p.add_argument("--epsilon", type=float, help="claimed epsilon (with --delta: (epsilon, delta)-DP; else pure DP)")
    p.add_argument("--delta", type=float, help="delta of the claimed budget")
    p.add_argument("--gamma", type=float, help="log-smoothness, smooth-bound mechanisms only (default 0.1)")
    p.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a mechanism option (repeatable; VALUE read as JSON, else as text), e.g. --option exact=false",
    )
    p.add_argument("--sensitivity", type=float, default=1.0, help="sensitivity (or smooth bound) audited (1)")
    p.add_argument("--dimension", type=int, default=1, help="dimension of an additive release (1)")
    p.add_argument("--statistic", default="median", help="statistic a selection mechanism releases (median)")
    p.add_argument(
        "--statistic-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an option of --statistic (repeatable), e.g. --statistic quantile --statistic-option q=0.9",
    )
    p.add_argument("--samples", type=int, default=100_000, help="releases per dataset (default 100000)")
    p.add_argument("--seed", type=int, help="seed for a reproducible audit")
    p.add_argument("--json", action="store_true", help="print JSON")

    from privframe.experiments import cli as experiment_cli  # the harness is a client: loaded only for the CLI

    experiment_cli.add_parser(sub)

    p = sub.add_parser("demo", help="a private 90%% interval for the mean of the embedded demo data")
    p.add_argument("--mu", type=float, default=1.0, help="GDP budget (default 1)")
    p.add_argument("--seed", type=int, help="seed for a reproducible run (voids privacy for anyone who knows it)")
    p.add_argument("--json", action="store_true", help="print JSON")
    return parser


def _print_result(result: IntervalResult | RegionResult) -> None:
    if isinstance(result, IntervalResult):
        print(f"{result.confidence:.0%} confidence interval: [{result.low:.6g}, {result.high:.6g}]")
        print(f"  center {result.center:.6g}, width {result.width:.6g}")
    else:
        center = np.array2string(result.center, precision=6)
        print(f"{result.confidence:.0%} confidence ball: center {center}, radius {result.radius:.6g}")
    params = result.parameters
    shown = ", ".join(f"{k}={params[k]}" for k in ("statistic", "sampler", "n", "m", "B", "kappa") if k in params)
    print(f"  method {result.method} ({shown})")
    if "auto" in result.diagnostics:
        cell = result.diagnostics["auto"]["cell"]
        print(
            f"  chosen by method='auto' from the method map's cell {cell['statistic']}, n = {cell['n']}, "
            f"{cell['budget']} (the narrowest method with {CANDIDATE_RULE_SHORT} there)"
        )
    print(f"  privacy: {result.privacy.summary(1e-6)}")
    for event in result.privacy.events:
        # Smooth-bound and selection mechanisms have no fixed noise scale (it is data-dependent or absent).
        scale = "" if event.noise_scale is None else f", noise scale {event.noise_scale:.4g}"
        count = "" if event.count == 1 else f" x {event.count}"
        print(f"    {event.label}: {event.mechanism}, {event.budget}{count}{scale}")


def _cmd_explain(name: str, as_json: bool) -> int:
    from privframe.plugin.contracts import explain_statistic
    from privframe.plugin.traits import traits_of

    entry = registry.get("statistic", name, path="explain")
    try:
        statistic: Any = entry.create({}, "explain")
    except PrivframeError:  # a statistic with a required option (ks: reference): its class declares the same
        statistic = entry.factory
    traits = traits_of(statistic)
    verdicts = explain_statistic(statistic, registry)
    if as_json:
        rows = [{"method": v.method, "accepts": v.accepts, "private": v.private, "reason": v.reason} for v in verdicts]
        print(json.dumps({"statistic": name, "traits": _traits_table(traits), "methods": rows}, indent=2))
        return 0
    print(f"statistic '{name}': {', '.join(f'{k} = {v}' for k, v in _traits_table(traits).items())}")
    for verdict in verdicts:
        kind = "" if verdict.private else " (non-private reference)"
        if verdict.accepts:
            print(f"  {verdict.method}{kind}: accepts it")
        else:
            print(f"  {verdict.method}{kind}: refuses it: {verdict.reason}")
    print("(from the statistic's declarations; a method may still refuse a budget, bounds or a data shape)")
    return 0


def _traits_table(traits: Any) -> dict[str, object]:
    mechanisms = {kind.__name__: name for kind, name in traits.default_mechanisms.items()}
    return {
        "requires_bounds": traits.requires_bounds,
        "centred": traits.centred,
        "bootstrap_consistent": traits.bootstrap_consistent,
        "quantile": traits.quantile,
        "default_mechanisms": mechanisms or None,
    }


def _cmd_plugins(args: argparse.Namespace) -> int:
    if args.explain is not None:
        return _cmd_explain(args.explain, args.json)
    entries = registry.entries()
    rows = [
        {
            "name": e.name,
            "kind": e.kind,
            "plugin": e.plugin,
            "distribution": e.distribution,
            "privacy": "asserted by plugin" if e.asserts_privacy else "",
        }
        for e in entries
    ]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    headers = ["name", "kind", "plugin", "distribution", "privacy"]
    widths = [max(len(h), *(len(str(r[h])) for r in rows)) for h in headers]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
    for r in rows:
        print("  ".join(str(r[h]).ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
    return 0


def _cmd_budget(args: argparse.Namespace) -> int:
    if args.gdp_delta is not None and args.mu is None:
        raise PrivframeError("only meaningful with --mu", path="gdp-delta")
    if args.mu is not None:
        try:
            budget = GDP(args.mu, delta=args.gdp_delta or 0.0)
        except PrivframeError as exc:  # GDP's own delta is --gdp-delta here (--delta is the target)
            raise type(exc)(exc.message, path="gdp-delta" if exc.path == "delta" else exc.path) from None
        if args.epsilon is not None and args.delta is not None:
            raise PrivframeError("with --mu give either --epsilon or --delta, not both", path="budget")
        if args.epsilon is not None:
            delta = budget.delta_at(args.epsilon)
            out = {"mu": budget.mu, "gdp_delta": budget.delta, "epsilon": args.epsilon, "delta": delta}
            text = f"{budget} implies ({args.epsilon:g}, {delta:.6g})-DP"
        else:
            if args.delta is None and budget.delta > 0:
                raise PrivframeError("give the target --delta (it must exceed --gdp-delta)", path="delta")
            target = 1e-6 if args.delta is None else args.delta
            eps = budget.to_approx_dp(target).epsilon
            out = {"mu": budget.mu, "gdp_delta": budget.delta, "epsilon": eps, "delta": target}
            text = f"{budget} implies ({eps:.6g}, {target:g})-DP"
    elif args.epsilon is not None and args.delta is not None:
        target = ApproxDP(args.epsilon, args.delta)  # validated where it is built (delta <= pf.MAX_DELTA)
        if target.delta == 0:  # pure DP: no mu-GDP budget implies it (the tradeoff curve never reaches 0)
            raise BudgetError(
                "must be > 0 to convert to GDP: no mu-GDP budget implies (epsilon, 0)-DP; "
                "--epsilon E alone converts pure DP",
                path="delta",
            )
        mu = accounting.gdp_mu_for(target.epsilon, target.delta)
        out = {"epsilon": args.epsilon, "delta": args.delta, "mu": mu}
        text = f"{mu:.6g}-GDP is the largest GDP budget that implies ({args.epsilon:g}, {args.delta:g})-DP"
    elif args.epsilon is not None:
        pure = PureDP(args.epsilon)
        mu = accounting.pure_dp_gdp_mu(pure.epsilon)
        out = {"epsilon": pure.epsilon, "delta": 0.0, "mu": mu}
        text = f"every {pure} mechanism is {mu:.6g}-GDP, and ({pure.epsilon:g}, delta)-DP for every delta"
    else:
        raise PrivframeError(
            "give --mu [--delta D | --epsilon E], --epsilon E --delta D, or --epsilon E", path="budget"
        )
    print(json.dumps(out) if args.json else text)
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    pipe = Pipeline.from_config(args.config)
    distributed = args.data is not None and is_distributed_path(args.data)
    if args.scheduler is not None and not distributed:
        raise PrivframeError("only meaningful with a glob or Parquet --data", path="scheduler")
    with connect(args.scheduler):  # a glob or Parquet is read and reduced by Dask, never gathered here
        data = _run_data(args)
        session = _open_session(args)
        try:
            result = pipe.run(data, rng=args.seed) if session is None else session.run(pipe, data, rng=args.seed)
        except PrivframeError as exc:
            # A method's or the session's refusal of the budget names "budget": in the file it is the
            # config's budget table (pipeline.budget).
            if exc.path in ("budget", "method") and pipe.prefix:
                raise exc.with_prefix(pipe.prefix) from exc
            raise
    if args.json:
        out = result.to_dict()  # the privframe-result/1 document, as result.to_json() (docs/results-io.md)
        if session is not None:
            out["session"] = _session_dict(session)
        print(json.dumps(out, indent=2, allow_nan=False))
    else:
        _print_result(result)
        if session is not None:
            print(f"  session {args.session}: {session.summary()}")
            print(f"  session head {session.head} (keep it elsewhere; check later with --session-expect-head)")
    return 0


def _run_data(args: argparse.Namespace) -> Any:
    """The data of ``privframe run``: the demo data, a file in memory, or a Dask array for a glob or Parquet."""
    if args.data is None:
        if not args.demo:
            raise PrivframeError(
                "give the data to run on (a .csv or .npy file), or --demo for the demo data", path="data"
            )
        if args.column is not None or args.columns is not None:
            raise PrivframeError("only meaningful with --data", path="column" if args.column else "columns")
        return demo_data()
    if args.demo:
        raise PrivframeError("give either --data or --demo, not both", path="demo")
    columns = None if args.columns is None else [name.strip() for name in args.columns.split(",")]
    if is_distributed_path(args.data):
        return load_distributed(args.data, args.column, columns)
    return load_data(args.data, args.column, columns)


def _budget_spec(spec: str, path: str) -> Budget:
    """``mu=1[,delta=1e-6]``, ``epsilon=2,delta=1e-6`` or ``epsilon=2`` as a budget; errors name ``path``."""
    fields: dict[str, float] = {}
    for item in spec.split(","):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or key not in ("mu", "epsilon", "delta") or key in fields:
            raise PrivframeError("expected mu=M[,delta=D] or epsilon=E[,delta=D]", path=path)
        try:
            fields[key] = float(value)
        except ValueError:
            raise PrivframeError(f"'{key}' must be a number", path=path) from None
    if ("mu" in fields) == ("epsilon" in fields):
        raise PrivframeError("give exactly one of mu= or epsilon=", path=path)
    delta = fields.get("delta")
    try:
        if "mu" in fields:
            return GDP(fields["mu"], delta=delta or 0.0)
        return ApproxDP(fields["epsilon"], delta) if delta is not None else PureDP(fields["epsilon"])
    except PrivframeError as exc:
        raise exc.with_prefix(path) from None


def _open_session(args: argparse.Namespace) -> Session | None:
    if args.session is None:
        for name in ("session_budget", "session_expect_head", "session_key_file", "session_allow_asymptotic"):
            if getattr(args, name) not in (None, False):
                raise PrivframeError("only meaningful with --session", path=name.replace("_", "-"))
        return None
    if not args.session:
        raise ConfigError("is empty; give a session file", path="session")
    if not Path(args.session).name or Path(args.session).is_dir():  # "." has no name to lock the file beside
        raise ConfigError(f"{args.session} is a directory; give a session file", path="session")
    total = None if args.session_budget is None else _budget_spec(args.session_budget, "session-budget")
    key = _session_key(args.session_key_file)
    try:
        return Session.open(
            args.session,
            total,
            key=key,
            expect_head=args.session_expect_head,
            allow_asymptotic=args.session_allow_asymptotic,
        )
    except PrivframeError as exc:
        option = {"key": "session-key-file", "expect_head": "session-expect-head"}.get(exc.path or "")
        if option is None:
            raise
        raise type(exc)(exc.message, path=option) from None


def _session_key(path: str | None) -> bytes | None:
    """The bytes of the key file (never printed), or None."""
    if path is None:
        return None
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise PrivframeError(f"cannot read the key file ({exc.strerror})", path="session-key-file") from None


def _session_dict(session: Session) -> dict[str, Any]:
    return {
        "total": str(session.budget),
        "spent": None if session.spent is None else str(session.spent),
        "remaining": None if session.remaining is None else str(session.remaining),
        "calls": len(session.calls),
        "id": session.id,
        "head": session.head,
    }


def _cmd_demo(args: argparse.Namespace) -> int:
    pipe = Pipeline.build("mean", method="cr-gs", budget=GDP(args.mu), bounds=(0.0, 1.0), confidence=0.9)
    data = demo_data()
    result = pipe.run(data, rng=args.seed)
    if args.json:
        print(result.to_json())
        return 0
    print(f"privframe demo: mean of {data.shape[0]} records on the public range [0, 1] (true mean {DEMO_TRUTH:.6g})")
    _print_result(result)
    return 0


def _audit_budget(args: argparse.Namespace) -> Budget:
    if args.mu is not None and args.epsilon is not None:
        raise PrivframeError("give either --mu or --epsilon, not both", path="budget")
    if args.mu is not None:
        return GDP(args.mu, delta=args.delta or 0.0)
    if args.epsilon is not None:
        return ApproxDP(args.epsilon, args.delta) if args.delta is not None else PureDP(args.epsilon)
    raise PrivframeError("give the claimed budget: --mu MU [--delta D] or --epsilon E [--delta D]", path="budget")


def _cmd_audit(args: argparse.Namespace) -> int:
    budget = _audit_budget(args)
    if args.samples < 100:
        raise PrivframeError("must be at least 100", path="samples")
    mechanism = registry.create("mechanism", args.mechanism, _audit_options(args.option, "--option"), path="mechanism")
    statistic = None
    if isinstance(mechanism, SelectionMechanism):
        statistic = registry.create(
            "statistic", args.statistic, _audit_options(args.statistic_option, "--statistic-option"), path="statistic"
        )
    from privframe import audit  # the auditor is a client of the core, loaded for this command only

    result = audit.audit_registered_mechanism(
        mechanism,
        budget,
        n_samples=args.samples,
        rng=args.seed,
        gamma=args.gamma,
        statistic=statistic,
        sensitivity=args.sensitivity,
        dimension=args.dimension,
    )
    if args.json:
        out = {
            "mechanism": args.mechanism,
            "claimed": str(result.claimed),
            "unit": result.unit,
            "claimed_value": result.claimed_value,
            "empirical_lower_bound": result.empirical_lower_bound,
            "n_samples": result.n_samples,
            "significance": result.significance,
            "tests": len(result.points),
            "violations": len(result.violations),
            "passed": result.passed,
            "verdict": result.verdict,
            "detectable_limit": result.detectable_limit,
            "samples_needed": result.samples_needed,
        }
        print(json.dumps(out, indent=2))
    else:
        print(f"audit of mechanism '{args.mechanism}' on its worst-case pair, {result.n_samples} releases per dataset")
        print(f"  claimed: {result.claimed}")
        print(
            f"  empirical lower bound: {result.unit} >= {result.empirical_lower_bound:.4g} "
            f"({1 - result.significance:.0%} confidence, {len(result.points)} tests)"
        )
        if result.verdict == "passed":
            print("  passed: no test violates the claimed tradeoff curve")
        elif result.verdict == "inconclusive":
            needed = f"; about {result.samples_needed} would" if result.samples_needed else ""
            print(
                f"  INCONCLUSIVE: no violation, but {result.n_samples} samples can refute at most "
                f"{result.unit} = {result.detectable_limit:.4g}, below the claim{needed} (--samples)"
            )
        else:
            print(f"  VIOLATION: {len(result.violations)} tests fall below the claimed tradeoff curve")
    return {"passed": 0, "failed": 1, "inconclusive": AUDIT_INCONCLUSIVE}[result.verdict]


AUDIT_INCONCLUSIVE = 3
"""Exit status of ``privframe audit`` when the sample size cannot refute the claim (0 passed, 1 failed)."""


def _cmd_experiment(args: argparse.Namespace) -> int:
    from privframe.experiments import cli as experiment_cli

    status: int = experiment_cli.command(args)
    return status


def _audit_options(pairs: list[str], flag: str) -> dict[str, object]:
    """``KEY=VALUE`` pairs given with ``flag`` as options: VALUE parsed as JSON (numbers, booleans, null), else
    kept as text. A key given twice is refused (neither value would be the one the user meant)."""
    options: dict[str, object] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"expected KEY=VALUE, got {pair!r}", path=flag)
        if key in options:
            raise ConfigError(f"'{key}' is given twice; give each option once", path=flag)
        try:
            options[key] = json.loads(raw)
        except json.JSONDecodeError:
            options[key] = raw
    return options


# -- speaking CLI ---------------------------------------------------------------------------------------------
# The errors raised below the command line name Python parameters (path "delta") and give Python advice
# ("give pf.PureDP"). Each command says the same in its own terms: a path that is one of its options becomes
# the flag (--delta), and the library's fixed vocabulary of Python spellings becomes flags (audit, budget,
# demo) or the pipeline file's spelling (run). A spelling with no command-line form says "from Python".

_FLAG_WORDS: tuple[tuple[str, str], ...] = (
    ("pf.PureDP or pf.ApproxDP", "--epsilon E [--delta D]"),
    ("pf.GDP(...) or pf.ApproxDP(...)", "--mu M or --epsilon E --delta D"),
    ("pf.GDP(mu, delta=...)", "--mu M --delta D"),
    ("pf.ApproxDP(epsilon, delta)", "--epsilon E --delta D"),
    ("pf.PureDP(epsilon)", "--epsilon E"),
    ("see pf.MAX_DELTA", "docs/concepts.md, privacy budgets"),
    ("audit it with pf.audit.audit_mechanism", "audit it from Python with pf.audit.audit_mechanism"),
)

_GDP_TABLE = '{ unit = "gdp", mu = M }'
_APPROX_TABLE = '{ unit = "approx-dp", epsilon = E, delta = D }'
_PURE_TABLE = '{ unit = "pure-dp", epsilon = E }'

_CONFIG_WORDS: tuple[tuple[str, str], ...] = (
    ("pf.PureDP or pf.ApproxDP", f"a budget {_PURE_TABLE} or {_APPROX_TABLE}"),
    ("pf.GDP(...) or pf.ApproxDP(...)", f"a budget {_GDP_TABLE} or {_APPROX_TABLE}"),
    (
        "pf.GDP(mu, delta=...) or pf.ApproxDP(epsilon, delta)",
        f'{{ unit = "gdp", mu = M, delta = D }} or {_APPROX_TABLE}',
    ),
    ("pf.GDP(mu, delta=...)", '{ unit = "gdp", mu = M, delta = D }'),
    ("pf.GDP(mu).to_approx_dp(1e-6) is", "privframe budget --mu M prints"),
    ("pf.GDP(...)", _GDP_TABLE),
    ("pf.ApproxDP(epsilon, delta)", _APPROX_TABLE),
    ("pf.ApproxDP(...)", _APPROX_TABLE),
    ("pf.PureDP(epsilon) (or pf.ApproxDP,", f'{_PURE_TABLE} (or unit = "approx-dp",'),
    ("pass budget=None", "leave the budget out of the pipeline file"),
    ("accounting='asymptotic'", 'the method option accounting = "asymptotic"'),
    ("(low, high), pf.Bounds(low, high) or pf.L2Ball(radius)", "[low, high], { low = L, high = H } or { radius = R }"),
    ("(low, high) or pf.L2Ball(radius)", "[low, high] or { radius = R }"),
    ("a number > 0 or pf.L2Ball", "a number > 0 or { radius = R }"),
    ("use pf.L2Ball for vectors", "use { radius = R } for vectors"),
    ("open the session with allow_asymptotic=True", "run with --session-allow-asymptotic"),
    ("use a pf.ApproxDP session", "use a session file whose --session-budget is epsilon=E,delta=D"),
    ("see pf.MAX_DELTA", "docs/concepts.md, privacy budgets"),
    (
        "(e.g. privframe.privacy.accounting.gdp_pure_epsilon(mu))",
        "(privframe budget --epsilon E prints the mu-GDP that E-DP implies)",
    ),
    ("pf.Session.upgrade(path)", "pf.Session.upgrade(path) from Python"),
)

_WORDS = {"audit": _FLAG_WORDS, "budget": _FLAG_WORDS, "demo": _FLAG_WORDS, "run": _CONFIG_WORDS}


@functools.cache
def _long_options() -> dict[str, frozenset[str]]:
    """Each command's long options without their dashes (``{"audit": {"mu", "epsilon", ...}}``)."""
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {
        name: frozenset(
            option[2:] for action in sub._actions for option in action.option_strings if option.startswith("--")
        )
        for name, sub in commands.choices.items()
    }


def _budget_flags(args: argparse.Namespace) -> str:
    """The flags that gave the budget of ``privframe audit`` / ``budget`` (``--mu``), or the choice."""
    given = [f"--{name}" for name in ("mu", "epsilon") if getattr(args, name, None) is not None]
    return " ".join(given) or "--mu/--epsilon"


def _cli_path(command: str, path: str | None, args: argparse.Namespace) -> str | None:
    """``path`` in the terms of ``command``'s command line: an option's flag, or the path unchanged."""
    if path is None:
        return None
    name, bracket, index = path.partition("[")  # an entry of a list option: --n[0]
    if name in _long_options().get(command, ()) and not (command == "run" and name == "columns" and not args.columns):
        return f"--{name}{bracket}{index}"  # (a pipeline file without a [pipeline] table has a key "columns" too)
    head, _, rest = path.partition(".")
    if command == "audit":  # the parts' options: --option KEY=VALUE, --statistic-option KEY=VALUE
        if head == "mechanism":
            return f"--option {rest}" if rest else "MECHANISM"
        if head == "statistic" and rest:
            return f"--statistic-option {rest}"
    if rest and head in _long_options().get(command, ()):
        return f"--{head} {rest}"  # a part of a spec: --session-budget mu
    if command in ("audit", "budget") and path in ("budget", "claimed"):
        return _budget_flags(args)
    if command == "demo" and path == "budget":
        return "--mu"
    if command == "run" and path == "config":
        return "CONFIG"
    if path == "rng" and "seed" in _long_options().get(command, ()):
        return "--seed"  # the seed is the library's rng argument
    return path


def _in_cli_terms(exc: PrivframeError, command: str, args: argparse.Namespace) -> PrivframeError:
    """``exc`` said in ``command``'s terms: its path as the flag, Python spellings as flags or file keys."""
    message = exc.message
    for python, cli in _WORDS.get(command, ()):
        message = message.replace(python, cli)
    path = _cli_path(command, exc.path, args)
    if message == exc.message and path == exc.path:
        return exc
    error = type(exc)(message, path=path)
    error.__dict__.update({k: v for k, v in exc.__dict__.items() if k not in ("message", "path")})
    return error


def _speaks_cli(command: str, run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    @functools.wraps(run)
    def call(args: argparse.Namespace) -> int:
        try:
            return run(args)
        except PrivframeError as exc:
            said = _in_cli_terms(exc, command, args)
            if said is exc:
                raise
            raise said from exc

    return call


_COMMANDS = {
    "plugins": _speaks_cli("plugins", _cmd_plugins),
    "budget": _speaks_cli("budget", _cmd_budget),
    "run": _speaks_cli("run", _cmd_run),
    "audit": _speaks_cli("audit", _cmd_audit),
    "experiment": _speaks_cli("experiment", _cmd_experiment),
    "demo": _speaks_cli("demo", _cmd_demo),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``privframe`` console script; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return _COMMANDS[args.command](args)
    except PrivframeError as exc:
        print(f"privframe: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (``privframe run ... | head -1``): stop quietly, as Unix tools do. Python
        # would flush stdout again at exit and print a traceback, so point it at /dev/null first.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return BROKEN_PIPE


BROKEN_PIPE = 141
"""Exit status when the output pipe closes early (128 + SIGPIPE, as a shell reports it)."""


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
