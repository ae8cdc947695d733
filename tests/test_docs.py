"""The documentation cannot drift from the code it describes.

The code blocks in ``docs/*.md`` run as doctests (``--doctest-glob=*.md``). This module checks what
doctests cannot: that ``docs/cli.md`` documents every command, option and positional argument of the
real parser (and no option that does not exist); that every page in the ``mkdocs.yml`` nav exists;
that ``docs/configuration.md`` documents every option of every standard part with its real default;
that every method has a page with the required sections; and that the README's list of parts matches
the registry.
"""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest

import privframe as pf
from privframe.cli import build_parser
from privframe.plugin.registration import PluginEntry

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
CLI_MD = DOCS / "cli.md"
CONFIGURATION_MD = DOCS / "configuration.md"
README = ROOT / "README.md"
MKDOCS = ROOT / "mkdocs.yml"

# A documented option or positional: a bullet whose first backticked word is the name, e.g.
# "- `--json`: ...", "- `--mu MU`: ..." or "- `config`: ...".
_BULLET = re.compile(r"^- `([^`\s]+)[^`]*`", re.MULTILINE)
_LONG_OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
_HEADING = re.compile(r"^## privframe (\S+)\s*$", re.MULTILINE)


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert len(actions) == 1, "expected exactly one set of subcommands"
    return dict(actions[0].choices)


def _documented_arguments(parser: argparse.ArgumentParser) -> set[str]:
    """The long option strings and positional dests a command's reference must list (help excluded)."""
    names: set[str] = set()
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if action.option_strings:
            longs = [s for s in action.option_strings if s.startswith("--")]
            names.add(longs[0] if longs else action.option_strings[0])
        else:
            names.add(action.dest)
    return names


def _all_option_strings() -> set[str]:
    parser = build_parser()
    strings = {s for a in parser._actions for s in a.option_strings}
    for sub in _subcommands().values():
        strings.update(s for a in sub._actions for s in a.option_strings)
    return strings


def _sections(text: str) -> dict[str, str]:
    """``## privframe CMD`` heading -> the text up to the next ``## `` heading."""
    starts = list(_HEADING.finditer(text))
    sections: dict[str, str] = {}
    for match in starts:
        rest = text[match.end() :]
        following = re.search(r"^## ", rest, re.MULTILINE)
        sections[match.group(1)] = rest[: following.start()] if following else rest
    return sections


@pytest.fixture(scope="module")
def cli_text() -> str:
    return CLI_MD.read_text(encoding="utf-8")


@pytest.mark.parametrize("command", sorted(_subcommands()))
def test_every_command_and_argument_is_documented(command: str, cli_text: str) -> None:
    sections = _sections(cli_text)
    assert command in sections, f"docs/cli.md has no '## privframe {command}' heading"
    documented = set(_BULLET.findall(sections[command]))
    required = _documented_arguments(_subcommands()[command])
    missing = required - documented
    assert not missing, f"docs/cli.md, privframe {command}: no bullet for {sorted(missing)}"
    extra = documented - required
    assert not extra, f"docs/cli.md, privframe {command}: bullets for arguments the parser lacks: {sorted(extra)}"


def _synopses(text: str) -> dict[str, str]:
    """The page's opening synopsis (its first code block): command -> its lines, continuations joined."""
    block = re.search(r"^```text\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    assert block, "docs/cli.md opens with no synopsis block"
    synopses: dict[str, str] = {}
    command = ""
    for line in block.group(1).splitlines():
        start = re.match(r"^privframe (\S+)", line)
        if start:
            command = start.group(1)
            synopses[command] = line
        elif command:
            synopses[command] += " " + line.strip()
    return synopses


@pytest.mark.parametrize("command", sorted(_subcommands()))
def test_the_synopsis_lists_every_option(command: str, cli_text: str) -> None:
    synopses = _synopses(cli_text)
    assert command in synopses, f"docs/cli.md's synopsis has no line for 'privframe {command}'"
    options = {name for name in _documented_arguments(_subcommands()[command]) if name.startswith("-")}
    listed = set(_LONG_OPTION.findall(synopses[command]))
    missing = sorted(options - listed)
    assert not missing, f"docs/cli.md's synopsis of 'privframe {command}' omits {missing}"


def test_no_documented_command_is_missing_from_the_parser(cli_text: str) -> None:
    extra = set(_sections(cli_text)) - set(_subcommands())
    assert not extra, f"docs/cli.md documents commands the parser lacks: {sorted(extra)}"


def test_every_option_mentioned_exists(cli_text: str) -> None:
    known = _all_option_strings()
    mentioned = set(_LONG_OPTION.findall(cli_text))
    assert mentioned, "docs/cli.md mentions no options"
    unknown = mentioned - known
    assert not unknown, f"docs/cli.md mentions options the parser does not have: {sorted(unknown)}"


def _nav_pages() -> list[str]:
    """The .md paths in the nav of mkdocs.yml (read without a YAML dependency)."""
    text = MKDOCS.read_text(encoding="utf-8")
    nav = re.search(r"^nav:\s*\n((?:[ \t]+.*\n?|\s*\n)*)", text, re.MULTILINE)
    assert nav, "mkdocs.yml has no nav"
    return re.findall(r"([\w./-]+\.md)\s*$", nav.group(1), re.MULTILINE)


def test_every_nav_page_exists() -> None:
    pages = _nav_pages()
    assert "index.md" in pages
    missing = [page for page in pages if not (DOCS / page).is_file()]
    assert not missing, f"mkdocs.yml nav lists missing pages: {missing}"


def test_every_page_is_in_the_nav() -> None:
    pages = set(_nav_pages())
    on_disk = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert on_disk <= pages, f"pages not in the mkdocs.yml nav: {sorted(on_disk - pages)}"


# -- links between pages ------------------------------------------------------------------------------------

_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """The anchor Python-Markdown's toc extension (mkdocs' default) gives a heading."""
    text = re.sub(r"[`*]", "", heading)
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _anchors(path: Path) -> set[str]:
    anchors: set[str] = set()
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"^#{1,6} ", line):
            anchors.add(_slug(line.lstrip("#").strip()))
    return anchors


def test_every_link_between_pages_resolves() -> None:
    broken: list[str] = []
    for page in sorted(DOCS.rglob("*.md")):
        for target in _LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"^[a-z]+:", target):
                continue  # an external URL
            file_part, _, anchor = target.partition("#")
            linked = (page.parent / file_part).resolve() if file_part else page
            where = f"{page.relative_to(DOCS).as_posix()} -> {target}"
            if not linked.is_file():
                broken.append(f"{where} (no such page)")
            elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
                broken.append(f"{where} (no such heading)")
    assert not broken, "broken links in docs/:\n" + "\n".join(broken)


# -- configuration.md: every option of every standard part, with its default ------------------------------

_KIND_HEADINGS = {
    "Methods": "method",
    "Statistics": "statistic",
    "Samplers": "sampler",
    "Mechanisms": "mechanism",
    "Accountants": "accountant",
}
# A documented option: "| `name` | type | `default` ... | meaning |".
_OPTION_ROW = re.compile(r"^\|\s*`([A-Za-z_]\w*)`\s*\|[^|]*\|\s*`([^`]*)`", re.MULTILINE)


def _standard_entries() -> list[PluginEntry]:
    """The parts of the standard plugins (third-party plugins document their own options)."""
    return [entry for entry in pf.registry.entries() if entry.plugin.startswith("std-")]


def _part_sections(text: str) -> dict[tuple[str, str], str]:
    """``(kind, name)`` -> the text of its ``#### `name``` section under a ``### <Kind>`` heading."""
    sections: dict[tuple[str, str], list[str]] = {}
    kind: str | None = None
    current: tuple[str, str] | None = None
    for line in text.splitlines():
        if line.startswith("## ") or line.startswith("### "):
            kind = _KIND_HEADINGS.get(line.lstrip("#").strip()) if line.startswith("### ") else None
            current = None
            continue
        heading = re.match(r"^#### `([a-z0-9-]+)`\s*$", line)
        if heading:
            current = (kind, heading.group(1)) if kind else None
            if current is not None:
                assert current not in sections, f"configuration.md documents {current} twice"
                sections[current] = []
            continue
        if current is not None:
            sections[current].append(line)
    return {key: "\n".join(lines) for key, lines in sections.items()}


@pytest.fixture(scope="module")
def part_sections() -> dict[tuple[str, str], str]:
    return _part_sections(CONFIGURATION_MD.read_text(encoding="utf-8"))


def test_configuration_has_a_section_for_every_standard_part(part_sections: dict[tuple[str, str], str]) -> None:
    registered = {(entry.kind, entry.name) for entry in _standard_entries()}
    missing = registered - set(part_sections)
    assert not missing, f"docs/configuration.md has no '#### `name`' section for {sorted(missing)}"
    stale = set(part_sections) - registered
    assert not stale, f"docs/configuration.md documents parts that are not registered: {sorted(stale)}"


@pytest.mark.parametrize("entry", _standard_entries(), ids=lambda e: f"{e.kind}-{e.name}")
def test_configuration_documents_every_option_and_its_default(
    entry: PluginEntry, part_sections: dict[tuple[str, str], str]
) -> None:
    section = part_sections.get((entry.kind, entry.name))
    if section is None:
        pytest.skip("reported by test_configuration_has_a_section_for_every_standard_part")
    rows = dict(_OPTION_ROW.findall(section))
    declared = entry.options()
    if not declared:
        assert not rows, f"{entry.kind} '{entry.name}' has no options, but configuration.md lists {sorted(rows)}"
        assert re.search(r"\bNo options\b", section), f"say 'No options' for {entry.kind} '{entry.name}'"
        return
    assert set(rows) == set(declared), (
        f"{entry.kind} '{entry.name}': configuration.md lists {sorted(rows)}, the part declares {sorted(declared)}"
    )
    factory: Any = entry.factory  # an attrs class; typed as a plain callable by the registry
    defaults = {field.name: field.default for field in attrs.fields(factory)}
    for option, written in rows.items():
        assert ast.literal_eval(written) == defaults[option], (
            f"{entry.kind} '{entry.name}', option {option}: documented default {written}, real {defaults[option]!r}"
        )


# -- method pages --------------------------------------------------------------------------------------------

_METHOD_NAMES = re.compile(r"^Method names?: (.*?)\.", re.MULTILINE)
_REQUIRED_SECTIONS = (
    r"^## What it (releases|computes)",
    r"^## Parameters and defaults",
    r"^## Example",
    r"^## When to use it",
)


def _method_pages() -> list[str]:
    return [page for page in _nav_pages() if page.startswith("methods/")]


def test_every_method_has_a_page_in_the_nav() -> None:
    documented: set[str] = set()
    for page in _method_pages():
        for names in _METHOD_NAMES.findall((DOCS / page).read_text(encoding="utf-8")):
            documented.update(re.findall(r"`([a-z0-9-]+)`", names))
    methods = {entry.name for entry in _standard_entries() if entry.kind == "method"}
    missing = methods - documented
    assert not missing, f"no page under methods/ in the mkdocs.yml nav says 'Method name: `...`' for {sorted(missing)}"


@pytest.mark.parametrize("page", _method_pages())
def test_method_pages_have_the_required_sections(page: str) -> None:
    text = (DOCS / page).read_text(encoding="utf-8")
    assert re.search(r"^Method names?: ", text, re.MULTILINE), f"{page}: no 'Method name: `...`' line"
    assert "Guarantee: " in text.split("\n## ", 1)[0], f"{page}: the introduction must state 'Guarantee: ...'"
    for pattern in _REQUIRED_SECTIONS:
        assert re.search(pattern, text, re.MULTILINE), f"{page}: no section matching {pattern!r}"


# -- README ----------------------------------------------------------------------------------------------


def test_readme_lists_every_standard_part() -> None:
    text = README.read_text(encoding="utf-8")
    box = re.search(r"^## What is in the box\n(.*?)(?=^## )", text, re.MULTILINE | re.DOTALL)
    assert box, "README.md has no '## What is in the box' section"
    listed = set(re.findall(r"`([a-z0-9-]+)`", box.group(1)))
    missing = {entry.name for entry in _standard_entries()} - listed
    assert not missing, f"README.md 'What is in the box' does not list {sorted(missing)} (see privframe plugins)"


# -- statements that the code decides -------------------------------------------------------------------------

QUICKSTART_MD = DOCS / "quickstart.md"
CHOOSING_MD = DOCS / "choosing.md"


def _prose(text: str) -> str:
    """A page's text with its blockquote markers dropped and its whitespace collapsed (to find a phrase)."""
    return " ".join(re.sub(r"^> ?", "", text, flags=re.MULTILINE).split())


def test_quickstart_states_the_candidate_rule_of_the_code() -> None:
    from privframe.pipeline.methodmap import CANDIDATE_RULE, CANDIDATE_RULE_SHORT

    text = _prose(QUICKSTART_MD.read_text(encoding="utf-8"))
    assert " ".join(CANDIDATE_RULE.split()) in text, "docs/quickstart.md must quote methodmap.CANDIDATE_RULE"
    assert CANDIDATE_RULE_SHORT in text, "docs/quickstart.md must give what privframe run prints"


def test_quickstart_lists_the_dependencies_of_pyproject() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    required: dict[str, str] = {}
    for spec in project["dependencies"]:
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*>=\s*([0-9.]+)", spec.strip())
        assert match, f"pyproject dependency {spec!r}: expected 'name>=version'"
        required[match.group(1).lower()] = match.group(2)
    install = _prose(QUICKSTART_MD.read_text(encoding="utf-8").split("## Install", 1)[1].split("\n## ", 1)[0])
    sentence = re.search(r"its dependencies are (.*?)\. From", install)
    assert sentence, "docs/quickstart.md, Install: no 'its dependencies are ...' sentence"
    listed = dict(re.findall(r"([A-Za-z0-9_.-]+) \(>= ([0-9.]+)", sentence.group(1)))
    assert listed == required, f"docs/quickstart.md lists {listed}; pyproject.toml requires {required}"
    python = re.search(r"needs Python ([0-9.]+) or later", install)
    assert python, "docs/quickstart.md, Install: no 'needs Python X or later'"
    assert project["requires-python"] == f">={python.group(1)}"


def _refusing(budget: pf.Budget) -> set[str]:
    """The private standard methods that refuse ``budget`` (a BudgetError), run on 500 records."""
    x = np.random.default_rng(0).uniform(size=500)
    refusing: set[str] = set()
    for entry in _standard_entries():
        if entry.kind != "method":
            continue
        statistic = "mean" if entry.name == "private-variance" else "median"
        options: dict[str, Any] = {"min_block": 0} if entry.name == "blbquant" else {}  # n = 500 is below it
        try:  # a private method refuses to run without a budget; a non-private one runs
            pf.confidence_interval(x, statistic, method=entry.name, budget=None, bounds=(0, 1), rng=1)
        except pf.BudgetError:
            pass
        else:
            continue
        try:
            pf.confidence_interval(x, statistic, method=entry.name, budget=budget, bounds=(0, 1), rng=1, **options)
        except pf.BudgetError:
            refusing.add(entry.name)
    return refusing


def _named(page: Path, phrase: str) -> set[str]:
    text = _prose(page.read_text(encoding="utf-8"))
    match = re.search(re.escape(phrase) + r" (.*?) only", text)
    assert match, f"docs/{page.relative_to(DOCS)} does not say '{phrase} ... only'"
    return set(re.findall(r"`([a-z0-9-]+)`", match.group(1)))


def test_the_methods_said_to_refuse_a_pure_budget_are_those_that_do() -> None:
    refusing = _refusing(pf.PureDP(1.0))
    assert "cr-gs" not in refusing  # it runs a pure budget with Laplace noise
    for page in (CONFIGURATION_MD, CHOOSING_MD):
        assert _named(page, "pure epsilon-DP (`pf.PureDP`) is refused by") == refusing, page.name


def test_the_methods_said_to_refuse_a_plain_gdp_budget_are_those_that_do() -> None:
    refusing = _refusing(pf.GDP(1.0))
    assert _named(CONFIGURATION_MD, "a plain GDP budget (`pf.GDP(mu)`, no delta) by") == refusing
