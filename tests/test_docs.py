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
