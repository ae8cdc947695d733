"""The documentation site shows what a reader should see.

``tools/docs_hooks.py`` rewrites each doctest block of ``docs/`` for the rendered pages and
``tools/check_site.py`` checks a built site. The hook and the checker are tested here without mkdocs (on
every page's Markdown and on hand-made HTML); when mkdocs is installed (the ``docs`` extra) the site is
built with ``mkdocs build --strict`` and checked as CI checks it, and where a headless Chromium is
installed the algorithm reference is opened in it to see its formulas typeset.
"""

from __future__ import annotations

import doctest
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from _support import load_file

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _load(name: str) -> ModuleType:
    return load_file(ROOT / "tools" / f"{name}.py")


hooks = _load("docs_hooks")
check_site = _load("check_site")

_FENCE = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


# -- the hook -----------------------------------------------------------------------------------------------


def test_directives_go_and_an_elided_number_keeps_its_digits() -> None:
    shown = hooks.render_session(">>> round(0.283, 3), 1 / 3  # doctest: +ELLIPSIS\n(0.283, 0.33...)\n\n")
    assert shown == ">>> round(0.283, 3), 1 / 3\n(0.283, 0.33\N{HORIZONTAL ELLIPSIS})\n"


def test_an_elided_line_and_a_traceback_read_as_what_they_stand_for() -> None:
    source = (
        ">>> print(list(range(3)))  # doctest: +ELLIPSIS\n[0, ...\n...\n"
        ">>> int('x')\nTraceback (most recent call last):\n...\nValueError: invalid literal ... 'x'\n"
    )
    assert hooks.render_session(source).splitlines() == [
        ">>> print(list(range(3)))",
        "[0, \N{HORIZONTAL ELLIPSIS}",
        "(output abbreviated)",
        ">>> int('x')",
        "Traceback (most recent call last):",
        "  (traceback frames omitted)",
        "ValueError: invalid literal ... 'x'",  # no ELLIPSIS here: doctest compares it as written
    ]


def test_a_closing_continuation_line_goes_and_a_blank_one_stays_blank() -> None:
    source = '>>> for i in range(2):\n...     s = """a\n...\n... b"""\n...\n>>> i\n1\n'
    assert hooks.render_session(source) == '>>> for i in range(2):\n...     s = """a\n\n... b"""\n>>> i\n1\n'


def test_blocks_that_are_not_doctests_are_left_alone() -> None:
    page = "```python\nimport numpy\n...\n```\n\n```text\n$ privframe run\n...\n```\n"
    assert hooks.on_page_markdown(page) == page


def test_the_hook_keeps_every_example_of_the_docs_as_doctest_reads_it() -> None:
    """On every page: no directive or bare '...' is left, and each example's code is still the code."""
    parser = doctest.DocTestParser()
    blocks = 0
    for page in sorted(DOCS.rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        for body in _FENCE.findall(text):
            if ">>>" not in body:
                continue
            blocks += 1
            shown = hooks.render_session(body)
            where = f"{page.relative_to(DOCS)}: {body.splitlines()[0]}"
            assert "doctest:" not in shown, where
            assert not [line for line in shown.splitlines() if line.strip() in ("...", "\N{HORIZONTAL ELLIPSIS}")], (
                where
            )
            before = [e.source for e in parser.get_examples(body)]
            after = [e.source for e in parser.get_examples(shown)]
            assert len(after) == len(before), where
    assert blocks > 50


def _prose_of_pages() -> dict[str, str]:
    """Each page's Markdown outside its doctest blocks, and the root files the pages include (snippets)."""
    texts: dict[str, str] = {}
    for page in sorted(DOCS.rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        texts[page.relative_to(ROOT).as_posix()] = _FENCE.sub("", text)
        for included in re.findall(r'^--8<-- "([^"]+)"', text, re.MULTILINE):
            texts[included] = _FENCE.sub("", (ROOT / included).read_text(encoding="utf-8"))
    return texts


def test_no_page_says_doctest_colon_or_shows_a_bare_ellipsis_in_its_prose() -> None:
    texts = _prose_of_pages()
    assert "CHANGELOG.md" in texts  # docs/changelog.md includes it
    for name, text in texts.items():
        assert "doctest:" not in text, f"{name}: 'doctest:' on a rendered page"
        single = re.sub(r"``.+?``", "", text)  # a double-backtick span shows its backticks: not bare
        assert not re.search(r"`(\.\.\.|\N{HORIZONTAL ELLIPSIS})`", single), f"{name}: a bare ellipsis in code"
        assert not re.search(r"^\s*\.\.\.\s*$", text, re.MULTILINE), f"{name}: a line that is a bare '...'"


# -- the checker --------------------------------------------------------------------------------------------


def _page(body: str, tabs: tuple[str, ...] = check_site.SECTIONS, prefix: str = "") -> str:
    links = "".join(f'<a href="#" class="md-tabs__link">{label}</a>' for label in tabs)
    sections = "".join(
        f'<label class="md-nav__link" for="__nav_{i}" id="__nav_{i}_label">{label}</label>'
        for i, label in enumerate(tabs, 1)
    )
    scripts = "".join(
        f'<script src="{prefix}javascripts/{name}"></script>' for name in ("katex/katex.min.js", "katex-init.js")
    )
    css = f'<link rel="stylesheet" href="{prefix}javascripts/katex/katex.min.css">'
    return f"<html><head>{css}</head><body>{links}{sections}{body}{scripts}</body></html>"


def _site(tmp_path: Path, body: str = "", tabs: tuple[str, ...] = check_site.SECTIONS) -> Path:
    katex = tmp_path / "javascripts" / "katex"
    (katex / "fonts").mkdir(parents=True)
    for name in ("katex.min.js", "katex.min.css", "LICENSE"):
        (katex / name).write_text("", encoding="utf-8")
    (tmp_path / "javascripts" / "katex-init.js").write_text("", encoding="utf-8")
    formula = '<span class="arithmatex">\\(x\\)</span>'
    (tmp_path / "index.html").write_text(_page(body, tabs), encoding="utf-8")
    for name in check_site.MATH_PAGES:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_page(formula, tabs, "../" * name.count("/")), encoding="utf-8")
    return tmp_path


def test_the_checker_passes_a_clean_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(check_site, "typeset", lambda site, formulas: [])  # the fake KaTeX is empty
    site = _site(tmp_path, "<pre><code>&gt;&gt;&gt; 1\n1</code></pre>")
    assert check_site.check_site(site, browser=False) == []


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("<p>x = 1  # doctest: +ELLIPSIS</p>", "index.html: shows 'doctest:'"),
        ("<pre><code>&gt;&gt;&gt; f()\n...\n</code></pre>", "index.html: a code line is a bare '...'"),
        (
            "<pre><code>Traceback\n  \N{HORIZONTAL ELLIPSIS}\n</code></pre>",
            "a code line is a bare '\N{HORIZONTAL ELLIPSIS}'",
        ),
        (
            '<script src="https://cdn.example/katex.js"></script>',
            "loads https://cdn.example/katex.js from another host",
        ),
        ("<p>$$\nx^2\n$$</p>", "index.html: a '$$' left over"),
        ("<p>see <code>$$</code> for display</p>", None),  # naming the syntax in code is fine
    ],
)
def test_the_checker_finds_what_a_reader_should_not_see(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str, problem: str | None
) -> None:
    monkeypatch.setattr(check_site, "typeset", lambda site, formulas: [])
    problems = check_site.check_site(_site(tmp_path, body), browser=False)
    if problem is None:
        assert problems == []
    else:
        assert any(problem in p for p in problems), problems


def test_the_checker_wants_the_five_sections(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(check_site, "typeset", lambda site, formulas: [])
    problems = check_site.check_site(_site(tmp_path, tabs=("Start", "Guides", "Methods", "Reference")), browser=False)
    assert any(p.startswith("index.html: navigation tabs") for p in problems), problems


# -- the built site -----------------------------------------------------------------------------------------


def test_the_site_builds_strictly_and_reads_right(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="the docs extra is not installed (CI builds and checks the site then)")
    pytest.importorskip("material", reason="the docs extra is not installed (CI builds and checks the site then)")
    site = tmp_path / "site"
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-4000:]
    assert check_site.check_site(site, browser=False) == []  # CI opens every page with formulas
    algorithms = (site / "algorithms.html").read_text(encoding="utf-8")
    formulas = algorithms.count('class="arithmatex"')
    assert formulas >= 50  # the formulas of the algorithm reference
    if check_site._browser() is None:
        return
    # In a real (headless) browser, from disk: every formula typeset, and a page without KaTeX is caught.
    assert check_site.in_browser(site, {"algorithms.html": formulas}) == []
    (site / "javascripts" / "katex-init.js").write_text("", encoding="utf-8")
    problems = check_site.in_browser(site, {"algorithms.html": formulas})
    assert problems == [f"algorithms.html: the browser typeset 0 of its {formulas} formulas"]
