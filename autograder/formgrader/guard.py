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
shape (`{"success": false, "log": ...}`, HTTP 200, so the page shows the
message in its error dialog) saying to use `make grade` and
`make return-feedback`. Nothing is read from the request beyond the route;
the student and assignment ids are not echoed back. The routes keep
jupyter_server's authentication (a request without the token or cookie gets
403), so the guard reveals nothing to anyone who could not use formgrader.

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
import textwrap

from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.utils import url_path_join
from tornado import web

__all__ = ["GUARDED_ROUTES", "MESSAGES", "GuardHandler", "load_guard"]

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
    router = web_app.default_router
    before = list(router.rules)
    web_app.add_handlers(".*$", rules)
    added = [r for r in router.rules if r not in before]
    router.rules[:] = added + [r for r in router.rules if r not in added]
    serverapp.log.info(
        "autograder.formgrader.guard: formgrader's Autograde, Generate Feedback and Release "
        "Feedback are disabled here (use make grade / make return-feedback)"
    )


def _jupyter_server_extension_points():
    return [{"module": "autograder.formgrader.guard"}]


_load_jupyter_server_extension = load_guard
