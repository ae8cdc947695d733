// Typesets the formulas of the site with the KaTeX copy vendored beside this file (no network).
//
// pymdownx.arithmatex (generic mode) leaves each formula as its TeX source in
// <span class="arithmatex">\( ... \)</span> (inline) or <div class="arithmatex">\[ ... \]</div>
// (display). This renders each one in place. A formula KaTeX refuses keeps its source, gets the class
// "katex-failed" and the error as its title, and is counted in window.privframeMath (to inspect from a
// browser console).
(function () {
  "use strict";

  var state = { rendered: 0, failed: [] };
  window.privframeMath = state;

  function source(element) {
    var tex = element.textContent.trim();
    var inline = tex.startsWith("\\(") && tex.endsWith("\\)");
    var display = tex.startsWith("\\[") && tex.endsWith("\\]");
    return inline || display ? tex.slice(2, -2) : tex;
  }

  function render(root) {
    root.querySelectorAll(".arithmatex").forEach(function (element) {
      if (element.getAttribute("data-math") !== null) {
        return;
      }
      var tex = source(element);
      element.setAttribute("data-math", tex);
      try {
        katex.render(tex, element, {
          displayMode: element.tagName === "DIV",
          throwOnError: true,
          strict: "error",
          output: "htmlAndMathml",
        });
        state.rendered += 1;
      } catch (error) {
        element.classList.add("katex-failed");
        element.title = String(error);
        state.failed.push({ tex: tex, error: String(error) });
      }
    });
  }

  if (typeof document$ !== "undefined") {
    document$.subscribe(function () {
      render(document.body);
    });
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () {
      render(document.body);
    });
  } else {
    render(document.body);
  }
})();
