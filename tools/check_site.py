"""Checks a built documentation site (the output of ``mkdocs build``): what a reader would see.

Usage: ``python tools/check_site.py SITE_DIR`` (CI runs it after ``mkdocs build --strict``;
``tests/test_docs_site.py`` runs it on a site it builds). It exits non-zero and names every problem it
finds. It reads the built HTML, and opens the pages with formulas in a headless browser where one is
installed:

- every page: no visible text contains ``doctest:``; no line of a ``<pre>``/``<code>`` block is a bare
  ``...`` (or ``…``); no script or stylesheet is loaded from another host (the site works offline);
- the pages with formulas (``MATH_PAGES``) carry pymdownx.arithmatex's output (``class="arithmatex"``,
  TeX between ``\\( \\)`` / ``\\[ \\]``) and no ``$$`` left over, and they load the vendored KaTeX
  (``katex.min.js``, ``katex.min.css``, ``katex-init.js``) by a relative URL, and those files, KaTeX's
  fonts and its licence are in the site;
- every formula typesets with the site's KaTeX under the options the site uses (``strict``, errors
  thrown), when ``node`` is installed (it runs ``katex.renderToString``; without node this is skipped,
  and said);
- where a headless Chromium is installed, each page with formulas is opened from disk with its scripts
  run, and every formula must come out typeset by KaTeX (``--screenshots DIR`` also saves a PNG of each);
- the home page and a method page exist, and their navigation has the five sections ``SECTIONS``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

__all__ = ["MATH_PAGES", "SECTIONS", "check_site", "main"]

SECTIONS = ("Start", "Guides", "Methods", "Reference", "Project")
MATH_PAGES = (
    "algorithms.html",
    "methods/cr-gs.html",
    "methods/cr-ss.html",
    "methods/privsub.html",
    "methods/blbquant.html",
    "methods/dette-graw.html",
    "methods/privboot.html",
    "methods/rank-quantile.html",
    "methods/private-variance.html",
)
KATEX_FILES = ("katex/katex.min.js", "katex/katex.min.css", "katex-init.js", "katex/LICENSE")
_BARE = {"...", "\N{HORIZONTAL ELLIPSIS}"}
_TOP_LABEL = re.compile(r"^__nav_\d+_label$")
_REMOTE = re.compile(r"^(https?:)?//", re.IGNORECASE)


class _Page(HTMLParser):
    """The parts of one built page that the checks read."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []  # visible text (not scripts or styles)
        self.prose: list[str] = []  # visible text outside <pre> and <code>
        self.blocks: list[str] = []  # the text of each <pre> (or <code> outside one)
        self.tabs: list[str] = []  # the labels of the navigation tabs
        self.sections: list[str] = []  # the labels of the top-level sections of the side navigation
        self.assets: list[str] = []  # src of scripts, href of stylesheets
        self.math = 0  # elements with class "arithmatex"
        self.formulas: list[tuple[str, bool]] = []  # (TeX, display) of each
        self._formula: tuple[str, list[str]] | None = None  # the open arithmatex element: its tag, its text
        self._skip = 0
        self._pre: list[str] | None = None
        self._code: list[str] | None = None
        self._tab: list[str] | None = None
        self._section_label: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs}
        classes = attributes.get("class", "").split()
        if tag in ("script", "style"):
            self._skip += 1
            if tag == "script" and attributes.get("src"):
                self.assets.append(attributes["src"])
        if tag == "link" and attributes.get("rel") == "stylesheet":
            self.assets.append(attributes.get("href", ""))
        if "arithmatex" in classes:
            self.math += 1
            self._formula = (tag, [])
        if tag == "pre":
            self._pre = []
        elif tag == "code" and self._pre is None:
            self._code = []
        if tag == "a" and "md-tabs__link" in classes:
            self._tab = []
        # Material's sidebar: the label of a top-level section has the id "__nav_<N>_label".
        if tag == "label" and _TOP_LABEL.match(attributes.get("id", "")):
            self._section_label = []

    def handle_endtag(self, tag: str) -> None:
        if self._formula is not None and tag == self._formula[0]:
            tex = "".join(self._formula[1]).strip()
            if tex[:2] in ("\\(", "\\[") and tex[-2:] in ("\\)", "\\]"):
                tex = tex[2:-2]
            self.formulas.append((tex, tag == "div"))
            self._formula = None
        if tag in ("script", "style") and self._skip:
            self._skip -= 1
        if tag == "pre" and self._pre is not None:
            self.blocks.append("".join(self._pre))
            self._pre = None
        elif tag == "code" and self._code is not None:
            self.blocks.append("".join(self._code))
            self._code = None
        if tag == "a" and self._tab is not None:
            self.tabs.append(" ".join("".join(self._tab).split()))
            self._tab = None
        if tag == "label" and self._section_label is not None:
            self.sections.append(" ".join("".join(self._section_label).split()))
            self._section_label = None

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        self.text.append(data)
        if self._pre is None and self._code is None:
            self.prose.append(data)
        if self._formula is not None:
            self._formula[1].append(data)
        for part in (self._pre, self._code, self._tab):
            if part is not None:
                part.append(data)
        if self._section_label is not None:
            self._section_label.append(data)


# The options of docs/javascripts/katex-init.js: a formula KaTeX would refuse in the browser fails here.
_TYPESET = """
const katex = require(process.argv[1]);
const formulas = JSON.parse(require("fs").readFileSync(0, "utf8"));
const failed = [];
for (const [where, tex, display] of formulas) {
  try {
    katex.renderToString(tex, {displayMode: display, throwOnError: true, strict: "error", output: "htmlAndMathml"});
  } catch (error) {
    failed.push(where + ": KaTeX cannot typeset " + JSON.stringify(tex) + ": " + String(error.message));
  }
}
process.stdout.write(JSON.stringify(failed));
"""


def typeset(site: Path, formulas: list[tuple[str, str, bool]]) -> list[str] | None:
    """Each formula KaTeX (the site's copy, run by node) refuses; ``None`` when node is not installed."""
    node = shutil.which("node")
    if node is None:
        return None
    script = (site / "javascripts" / "katex" / "katex.min.js").resolve()
    done = subprocess.run(
        [node, "-e", _TYPESET, str(script)],
        input=json.dumps(formulas),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    if done.returncode != 0:
        return [f"node could not run KaTeX: {done.stderr.strip()}"]
    failed: list[str] = json.loads(done.stdout)
    return failed


_BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def _browser() -> str | None:
    for name in _BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    return None


def _headless(browser: str, *args: str) -> subprocess.CompletedProcess[str]:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--allow-file-access-from-files"]
    return subprocess.run([browser, *flags, *args], capture_output=True, text=True, check=False, timeout=120)


def in_browser(site: Path, pages: dict[str, int], screenshots: Path | None = None) -> list[str] | None:
    """Opens each page (name -> its number of formulas) from disk in a headless Chromium, with its scripts
    run, and reports a page whose formulas KaTeX did not all typeset (or marked ``katex-failed``);
    ``None`` when no Chromium is installed. With ``screenshots``, saves a PNG of each page there."""
    browser = _browser()
    if browser is None:
        return None
    problems = []
    for name, expected in pages.items():
        url = (site / name).resolve().as_uri()
        dom = _headless(browser, "--virtual-time-budget=10000", "--dump-dom", url)
        if dom.returncode != 0 or "</html>" not in dom.stdout:
            problems.append(f"{name}: the browser could not open it ({dom.stderr.strip()[-300:]})")
            continue
        typeset = dom.stdout.count('class="katex"')  # one per formula, inline or display
        if typeset < expected:
            problems.append(f"{name}: the browser typeset {typeset} of its {expected} formulas")
        if "katex-failed" in dom.stdout:
            problems.append(f"{name}: a formula KaTeX refused in the browser (class katex-failed)")
        if screenshots is not None:
            screenshots.mkdir(parents=True, exist_ok=True)
            shot = screenshots / (name.replace("/", "-").removesuffix(".html") + ".png")
            _headless(browser, "--virtual-time-budget=10000", "--window-size=1280,2400", f"--screenshot={shot}", url)
    return problems


def _read(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    return page


def check_site(site: Path, browser: bool = True, screenshots: Path | None = None) -> list[str]:
    """Every problem found in the site built into ``site`` (empty: none); ``browser=False`` skips the
    headless browser even where one is installed."""
    problems: list[str] = []
    pages = sorted(site.rglob("*.html"))
    if not pages:
        return [f"{site}: no HTML pages"]
    parsed: dict[str, _Page] = {}
    for path in pages:
        name = path.relative_to(site).as_posix()
        page = parsed[name] = _read(path)
        text = "".join(page.text)
        if "doctest:" in text:
            problems.append(f"{name}: shows 'doctest:'")
        if "$$" in "".join(page.prose):
            problems.append(f"{name}: a '$$' left over (a formula arithmatex did not take)")
        for block in page.blocks:
            for line in block.split("\n"):
                if line.strip() in _BARE:
                    problems.append(f"{name}: a code line is a bare {line.strip()!r}")
        for asset in page.assets:
            if _REMOTE.match(asset):
                problems.append(f"{name}: loads {asset} from another host")
    formulas = [(name, tex, display) for name, page in parsed.items() for tex, display in page.formulas]
    failed = typeset(site, formulas)
    if failed is None:
        print("node not found: the formulas were not typeset (only their markup was checked)", file=sys.stderr)
    else:
        problems.extend(failed)
    seen = in_browser(site, {n: parsed[n].math for n in MATH_PAGES if n in parsed}, screenshots) if browser else None
    if seen is None:
        print("no headless browser used: the formulas were not seen typeset on the pages", file=sys.stderr)
    else:
        problems.extend(seen)
    for name in MATH_PAGES:
        math_page = parsed.get(name)
        if math_page is None:
            problems.append(f"{name}: missing")
            continue
        if math_page.math == 0:
            problems.append(f"{name}: no formula marked for KaTeX (class arithmatex)")
        html = (site / name).read_text(encoding="utf-8")
        if "\\(" not in html and "\\[" not in html:
            problems.append(f"{name}: no TeX between \\( \\) or \\[ \\]")
        prefix = "../" * name.count("/")
        for needed in ("katex/katex.min.js", "katex/katex.min.css", "katex-init.js"):
            if f"{prefix}javascripts/{needed}" not in math_page.assets:
                problems.append(f"{name}: does not load javascripts/{needed} from the site")
    for needed in KATEX_FILES:
        if not (site / "javascripts" / needed).is_file():
            problems.append(f"javascripts/{needed}: not in the site")
    css = site / "javascripts" / "katex" / "katex.min.css"
    if css.is_file():
        for font in re.findall(r"url\((fonts/[^)]+\.woff2)\)", css.read_text(encoding="utf-8")):
            if not (css.parent / font).is_file():
                problems.append(f"javascripts/katex/{font}: not in the site")
    for name in ("index.html", "methods/cr-gs.html"):
        nav_page = parsed.get(name)
        if nav_page is None:
            problems.append(f"{name}: missing")
            continue
        if tuple(nav_page.tabs) != SECTIONS:
            problems.append(f"{name}: navigation tabs are {nav_page.tabs}, not {list(SECTIONS)}")
        if tuple(nav_page.sections) != SECTIONS:
            problems.append(f"{name}: navigation sections are {nav_page.sections}, not {list(SECTIONS)}")
    return problems


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    shots = None
    if len(args) == 3 and args[1] == "--screenshots":
        shots = Path(args[2])
    elif len(args) != 1:
        print("usage: python tools/check_site.py SITE_DIR [--screenshots DIR]", file=sys.stderr)
        return 2
    site = Path(args[0])
    problems = check_site(site, screenshots=shots)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"{len(problems)} problem(s) in the site at {site}", file=sys.stderr)
        return 1
    print(f"site at {site}: {len(list(site.rglob('*.html')))} pages checked, no problems")
    return 0


if __name__ == "__main__":
    sys.exit(main())
