"""MkDocs hook: the examples on the rendered pages read as console sessions, not as doctests.

Every ``python`` code block of ``docs/`` is a doctest (``--doctest-glob=*.md``), so its source carries what
doctest needs: ``# doctest: +ELLIPSIS`` directives, output abbreviated with ``...``, and ``<BLANKLINE>``.
The source stays as it is (the test suite runs it); this hook rewrites only the Markdown that MkDocs
renders, block by block, using doctest's own parser to tell code from output:

- directive comments (``# doctest: ...``) are removed from the code;
- in the output of an example that runs under ``ELLIPSIS``, a ``...`` inside a line (doctest's "anything
  here") is shown as a typographic ellipsis, so an abbreviated number reads ``0.28…`` (the digits shown
  are the digits printed), and a line that is only ``...`` reads ``(output abbreviated)``;
- a traceback shows its header and its exception, with ``  (traceback frames omitted)`` between them
  (doctest never compares the frames);
- the ``...`` line that closes a compound statement is dropped, and a blank line inside a statement is
  shown blank: no code line is a bare ``...``;
- ``<BLANKLINE>`` is shown as the empty line it stands for;
- the block is highlighted as a console session (``pycon``), prompts apart from output.

Anything that is not a doctest (shell, TOML, text blocks) is left alone. ``tests/test_docs_site.py`` builds the
site and ``tools/check_site.py`` checks the result.
"""

from __future__ import annotations

import doctest
import re
from typing import Any

__all__ = ["on_page_markdown", "render_session"]

_FENCE = re.compile(
    r"^(?P<fence>`{3,})(?P<lang>python|pycon|py)[ \t]*\n(?P<body>.*?)^(?P=fence)[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
_DIRECTIVE = re.compile(r"\s*#\s*doctest:[^\n]*$")
_ELLIPSIS = "\N{HORIZONTAL ELLIPSIS}"
_FRAMES = "  (traceback frames omitted)"
_OMITTED = "(output abbreviated)"
_PARSER = doctest.DocTestParser()


def _source_lines(example: doctest.Example) -> list[str]:
    lines = [_DIRECTIVE.sub("", line).rstrip() for line in example.source.rstrip("\n").split("\n")]
    while len(lines) > 1 and not lines[-1].strip():
        lines.pop()  # the "..." line that closes a compound statement: a reader does not need it
    if len(lines) == 1 and not lines[0].strip():
        return []  # an example that was nothing but a directive
    pad = " " * example.indent
    shown = [f"{pad}>>> {lines[0]}"]
    # A blank line inside a statement (within a string, between methods) is shown blank, not as "...".
    shown.extend(f"{pad}... {line}" if line.strip() else "" for line in lines[1:])
    return shown


def _want_lines(example: doctest.Example) -> list[str]:
    if not example.want:
        return []
    ellipsis = bool(example.options.get(doctest.ELLIPSIS, False))
    lines = example.want.rstrip("\n").split("\n")
    if example.exc_msg is not None and lines[0].startswith("Traceback ("):
        # doctest compares only the header and the exception; what lies between is never checked.
        message = example.exc_msg.rstrip("\n").split("\n")
        lines = [lines[0], _FRAMES, *lines[len(lines) - len(message) :]]
    shown = []
    for line in lines:
        if line == doctest.BLANKLINE_MARKER:
            line = ""
        elif ellipsis and line.strip() == doctest.ELLIPSIS_MARKER:
            line = _OMITTED  # a whole line (or several) left out of the output
        elif ellipsis:
            line = line.replace(doctest.ELLIPSIS_MARKER, _ELLIPSIS)
        shown.append(" " * example.indent + line if line else "")
    return shown


def render_session(body: str) -> str:
    """The text of a doctest block as a reader should see it (see the module docstring)."""
    shown: list[str] = []
    for piece in _PARSER.parse(body):
        if isinstance(piece, doctest.Example):
            shown.extend(_source_lines(piece))
            shown.extend(_want_lines(piece))
        elif piece:
            shown.extend(piece.split("\n")[:-1] if piece.endswith("\n") else piece.split("\n"))
    while shown and not shown[-1].strip():
        shown.pop()  # the blank line doctest needs before the closing fence
    return "\n".join(shown) + "\n"


def _rewrite(match: re.Match[str]) -> str:
    body = match.group("body")
    if ">>>" not in body:
        return match.group(0)
    return f"{match.group('fence')}pycon\n{render_session(body)}{match.group('fence')}"


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """MkDocs event: rewrite every doctest block of the page before it is rendered."""
    return _FENCE.sub(_rewrite, markdown)
