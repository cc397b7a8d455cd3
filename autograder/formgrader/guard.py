"""A Jupyter server extension that keeps formgrader from running student code or overwriting sandboxed scores.

Threat model: nbgrader's formgrader has an Autograde button per submission (and
Generate Feedback / Release Feedback buttons per submission and per
assignment). Autograde posts to
`/formgrader/api/submission/<assignment>/<student>/autograde`, which runs
nbgrader's own autograde: the student's notebook in a plain kernel, as the
formgrader's user (root under `make formgrader`), with the student's code free
to read and write every file that user can, and the in-kernel checks' verdicts
written into the gradebook over the scores the sandboxed grader
(`python -m autograder grade`, `make grade`) established outside the kernel.
Generate Feedback renders autograded notebooks with nbgrader's exporter (not
this grader's inert pages, see inert.py) over the feedback this grader wrote,
and Release Feedback sends whatever is in `feedback/` to the students.

So this extension answers those API routes itself, before formgrader's own
handlers, and runs nothing: every such request gets formgrader's own error
shape (`{"success": false, "log": ...}`, HTTP 200) saying to use `make grade`
and `make return-feedback`. The pages never get that far: formgrader's HTML
pages are sent with a short script of ours before `</body>` (`PageScript`, a
Tornado output transform), which shows those buttons visibly disabled, each
with its reason (a tooltip, and a screen reader's text), and says above the
table which commands do those jobs here; a click on them posts nothing, so no
red "Error" dialog reads as breakage. Nothing is read from the request beyond the route;
the student and assignment ids are not echoed back. The routes keep
jupyter_server's authentication (a request without the token or cookie gets
403), so the guard reveals nothing to anyone who could not use formgrader.

The same load also puts `late_scores.py`'s handlers in front of formgrader's score routes, so its lists
show the score of record (late penalties taken off).

Load it in any Jupyter server that serves formgrader (this project's
`make formgrader` does it through `jupyter/formgrader/jupyter_server_config.py`
on JUPYTER_CONFIG_PATH; a JupyterHub service's formgrader can put the same
folder on its JUPYTER_CONFIG_PATH or set
`c.ServerApp.jpserver_extensions = {"autograder.formgrader.guard": True}`).
Load order does not matter: the guard's rules are put in front of every rule
the application has, and formgrader's later `add_handlers` lands behind them.
"""

from __future__ import annotations

import json
import re
import textwrap

from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.utils import url_path_join
from tornado import httputil, web

from .late_scores import late_handlers

__all__ = ["GUARDED_ROUTES", "MESSAGES", "GuardHandler", "PageScript", "load_guard", "page_script"]

# formgrader 0.9.6's routes (nbgrader/server_extensions/formgrader/apihandlers.py) that run or publish
# student work, and the action each one names in its message.
GUARDED_ROUTES = (
    (r"/formgrader/api/submission/([^/]+)/([^/]+)/autograde", "autograde"),
    (r"/formgrader/api/assignment/([^/]+)/generate_feedback", "generate_feedback"),
    (r"/formgrader/api/assignment/([^/]+)/([^/]+)/generate_feedback", "generate_feedback"),
    (r"/formgrader/api/assignment/([^/]+)/release_feedback", "release_feedback"),
    (r"/formgrader/api/assignment/([^/]+)/([^/]+)/release_feedback", "release_feedback"),
)

# Instructor-facing (formgrader's own pages are English only).
MESSAGES = {
    "autograde": "Autograde is disabled in this formgrader: it would run the student's notebook outside the "
    "sandbox, as the formgrader's user, and overwrite the scores of the sandboxed grader. "
    "Grade with `make grade` (python -m autograder grade), which runs every notebook sandboxed "
    "and writes the scores into this gradebook.",
    "generate_feedback": "Generate Feedback is disabled in this formgrader: `make grade` already wrote each "
    "student's feedback page (inert HTML, no hidden test and no hidden value in it) into "
    "feedback/. Run `make grade` again to regenerate it.",
    "release_feedback": "Release Feedback is disabled in this formgrader: return the feedback that `make grade` "
    "wrote with `make return-feedback`.",
}


# The table cells of formgrader's pages that hold each guarded button (manage_assignments.js,
# manage_submissions.js), and what the page says above its table.
BUTTON_CELLS = {
    "autograde": "autograde",
    "generate-feedback": "generate_feedback",
    "release-feedback": "release_feedback",
}
BANNER = (
    "Autograde, Generate Feedback and Release Feedback are turned off in this formgrader (their buttons are "
    "greyed out; hover one for the reason). Grade with `make grade`: it runs every notebook sandboxed and "
    "writes the scores and each student's feedback page; return feedback with `make return-feedback`."
)
# formgrader's HTML pages (not its API, not its static files), under any base URL (a hub service's too)
PAGE_PATH = re.compile(r"/formgrader(/(?!api/|static/)[^?]*)?$")

_SCRIPT = """<script id="namedaxes-formgrader-guard">
(function () {
  var reasons = %(reasons)s, cells = %(cells)s, banner = %(banner)s;
  function disable(root) {
    Object.keys(cells).forEach(function (cls) {
      root.querySelectorAll("td." + cls + " a, ." + cls + " > a").forEach(function (link) {
        var reason = reasons[cells[cls]], off = document.createElement("button");
        off.type = "button";
        off.disabled = true;
        off.className = "btn btn-link btn-xs namedaxes-disabled";
        off.setAttribute("aria-disabled", "true");
        off.title = reason;
        off.style.opacity = "0.35";
        off.style.cursor = "not-allowed";
        var icon = link.querySelector(".glyphicon");
        if (icon) { off.appendChild(icon.cloneNode(true)); }
        var said = document.createElement("span");
        said.className = "sr-only";
        said.textContent = reason;
        off.appendChild(said);
        var wrap = document.createElement("span");
        wrap.title = reason;  // a disabled button gets no mouse events: its wrapper shows the reason
        wrap.appendChild(off);
        link.replaceWith(wrap);
      });
    });
  }
  function note() {
    if (document.getElementById("namedaxes-guard-note")) { return; }
    var table = document.querySelector("table");
    if (!table || !document.querySelector("th.no-sort")) { return; }
    var heads = Array.prototype.map.call(document.querySelectorAll("th"), function (th) { return th.textContent; });
    if (!heads.some(function (h) { return /Autograde|Feedback/.test(h); })) { return; }
    var box = document.createElement("div");
    box.id = "namedaxes-guard-note";
    box.className = "alert alert-info";
    box.setAttribute("role", "note");
    banner.split("`").forEach(function (part, i) {  // `make grade` as code, the rest as text
      var piece = i %% 2 ? document.createElement("code") : document.createTextNode(part);
      if (i %% 2) { piece.textContent = part; }
      box.appendChild(piece);
    });
    table.parentNode.insertBefore(box, table);
  }
  function run() { disable(document); note(); }
  new MutationObserver(run).observe(document.documentElement, {childList: true, subtree: true});
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", run); } else { run(); }
})();
</script>
"""


def page_script() -> str:
    """The script added to formgrader's pages (the reasons are this module's MESSAGES, as JSON)."""
    as_json = {
        key: json.dumps(value).replace("</", "<\\/")
        for key, value in (("reasons", MESSAGES), ("cells", BUTTON_CELLS), ("banner", BANNER))
    }
    return _SCRIPT % as_json


class PageScript(web.OutputTransform):
    """Adds `page_script()` before `</body>` of formgrader's HTML pages; every other answer passes as it is."""

    def __init__(self, request: httputil.HTTPServerRequest) -> None:
        super().__init__(request)
        self.page = request.method == "GET" and bool(PAGE_PATH.search(request.path))

    def transform_first_chunk(self, status_code, headers, chunk, finishing):
        if not (self.page and finishing and status_code == 200):
            return status_code, headers, chunk
        if not headers.get("Content-Type", "").startswith("text/html") or b"</body>" not in chunk:
            return status_code, headers, chunk
        at = chunk.rindex(b"</body>")
        chunk = chunk[:at] + page_script().encode() + chunk[at:]
        if "Content-Length" in headers:
            headers["Content-Length"] = str(len(chunk))
        return status_code, headers, chunk


class GuardHandler(JupyterHandler):
    """Answers a guarded formgrader route with formgrader's error shape; runs nothing."""

    def initialize(self, action: str) -> None:
        self.action = action

    def _refuse(self) -> None:
        # text/plain, as formgrader's own handlers answer: its page JSON.parse()s the body itself, and jQuery
        # would hand it an already parsed object for application/json (then no dialog appears)
        self.set_header("Content-Type", "text/plain; charset=UTF-8")
        self.set_header("Cache-Control", "no-store")
        text = textwrap.fill(MESSAGES[self.action], width=72)  # the page shows it in a <pre>: lines that fit
        self.finish(json.dumps({"success": False, "log": text, "error": "", "disabled_by": __name__}))

    def check_xsrf_cookie(self):
        """No XSRF check: the answer is a refusal whoever asks, and formgrader's page may post without the token."""
        return None

    @web.authenticated
    def get(self, *_ids: str) -> None:  # formgrader only posts; a GET is refused the same way
        self._refuse()

    @web.authenticated
    def post(self, *_ids: str) -> None:
        self._refuse()


def load_guard(serverapp) -> None:
    """Put the guard's routes in front of everything the server's web application routes."""
    web_app = serverapp.web_app
    base = web_app.settings.get("base_url", "/")
    rules = [(url_path_join(base, pattern), GuardHandler, {"action": action}) for pattern, action in GUARDED_ROUTES]
    rules += [(url_path_join(base, pattern), handler) for pattern, handler in late_handlers()]
    router = web_app.default_router
    before = list(router.rules)
    web_app.add_handlers(".*$", rules)
    added = [r for r in router.rules if r not in before]
    router.rules[:] = added + [r for r in router.rules if r not in added]
    web_app.transforms.insert(0, PageScript)  # before any compression (GZipContentEncoding) sees the page
    serverapp.log.info(
        "autograder.formgrader.guard: formgrader's Autograde, Generate Feedback and Release "
        "Feedback are disabled here, their buttons greyed out (use make grade / make return-feedback); "
        "scores are shown with the late penalties make grade recorded taken off"
    )


def _jupyter_server_extension_points():
    return [{"module": "autograder.formgrader.guard"}]


_load_jupyter_server_extension = load_guard
