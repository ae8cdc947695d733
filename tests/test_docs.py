"""The documentation cannot drift from the code it describes.

The code blocks in ``docs/*.md`` run as doctests (``--doctest-glob=*.md``). This module checks what
doctests cannot: that ``docs/cli.md`` documents every command, option and positional argument of the
real parser (and no option that does not exist), and that every page in the ``mkdocs.yml`` nav exists.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from privframe.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
CLI_MD = DOCS / "cli.md"
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
