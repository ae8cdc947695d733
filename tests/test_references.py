"""Every Markdown file that the code's docstrings and comments or the docs cite exists in the repository.

The repository stands alone: a formula, a definition or a list that the code or the docs point to lives
in one of its own files (the mathematics in ``docs/algorithms.md``), never in a document outside it.

Scanned: the docstrings and comments of ``privframe/**/*.py`` and ``plugins/**/*.py``, and the whole text
of ``docs/**/*.md``, ``README.md``, ``CONTRIBUTING.md`` and ``CHANGELOG.md``. A citation is a token ending
in ``.md`` (URLs are ignored). It resolves against the repository root and, for a Markdown page, also
against the page's own folder (so relative links between pages count).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

_CITATION = re.compile(r"(?<![\w./-])([\w./-]*\w[\w./-]*\.md)(?![\w-])")
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s)>\]`'\"]*", re.IGNORECASE)


def _python_text(source: str) -> list[tuple[int, str]]:
    """``(line, text)`` of every docstring (any string statement) and comment of a Python module."""
    pieces: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            pieces.append((node.lineno, node.value.value))
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            pieces.append((token.start[0], token.string))
    return pieces


def citations(text: str) -> list[str]:
    """The ``.md`` paths cited in ``text``, URLs left out."""
    return _CITATION.findall(_URL.sub(" ", text))


def missing_citations(path: Path, root: Path = ROOT) -> list[str]:
    """``"file:line: cited"`` for every citation in ``path`` that resolves to no file of the repository."""
    source = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        pieces = _python_text(source)
        bases = [root]
    else:
        pieces = [(number, line) for number, line in enumerate(source.splitlines(), start=1)]
        bases = [root, path.parent]
    missing: list[str] = []
    for number, text in pieces:
        for cited in citations(text):
            if not any((base / cited).is_file() for base in bases):
                missing.append(f"{path.relative_to(root).as_posix()}:{number}: {cited}")
    return missing


def _scanned(root: Path = ROOT) -> list[Path]:
    files = [*root.glob("privframe/**/*.py"), *root.glob("plugins/**/*.py"), *root.glob("docs/**/*.md")]
    files += [root / name for name in ("README.md", "CONTRIBUTING.md", "CHANGELOG.md")]
    return sorted(path for path in files if path.is_file() and "build" not in path.relative_to(root).parts)


def test_the_scan_covers_code_and_docs() -> None:
    scanned = {path.relative_to(ROOT).as_posix() for path in _scanned()}
    for expected in ("privframe/privacy/accounting.py", "docs/algorithms.md", "docs/methods/cr-ss.md", "README.md"):
        assert expected in scanned


def test_every_cited_markdown_file_exists() -> None:
    missing = [entry for path in _scanned() for entry in missing_citations(path)]
    assert not missing, "citations of Markdown files that are not in the repository:\n" + "\n".join(missing)


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("mod.py", '"""See ``docs/algorithms.md``, section 3.2."""\n', []),
        ("mod.py", '"""The formulas (algorithms.md section 3.2)."""\n', ["algorithms.md"]),
        ("mod.py", "x = 1  # design.md section 4\n", ["design.md"]),
        ("mod.py", 'MESSAGE = "a runtime string is not a docstring: missing.md"\n', []),
        ("mod.py", '"""Online: https://example.org/spec/algorithms.md."""\n', []),
        ("docs/page.md", "See [the reference](algorithms.md#1-privacy) and `docs/algorithms.md`.\n", []),
        ("docs/page.md", "As in the spec (experiments.md, and ../design.md).\n", ["experiments.md", "../design.md"]),
    ],
)
def test_a_citation_of_a_missing_file_is_caught(tmp_path: Path, name: str, text: str, expected: list[str]) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "algorithms.md").write_text("# Algorithm reference\n", encoding="utf-8")
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert [entry.rsplit(": ", 1)[1] for entry in missing_citations(path, tmp_path)] == expected
