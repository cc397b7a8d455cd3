"""autograder.formgrader.guard covers every formgrader route that runs or publishes student work.

The browser test (tests/browser/test_formgrader.py) proves the guard in a real
`make formgrader`: the button and direct POSTs get the message, nothing runs.
Here, without a server: the guard's routes are exactly formgrader's routes whose
handlers call nbgrader's autograde, generate_feedback or release_feedback (so an
nbgrader upgrade that adds such a route fails this test), and the config folder
`make formgrader` puts on JUPYTER_CONFIG_PATH enables the guard.
"""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

from autograder.formgrader.guard import GUARDED_ROUTES, MESSAGES

ROOT = Path(__file__).resolve().parents[3]
RUNS_OR_PUBLISHES = re.compile(r"self\.api\.(autograde|generate_feedback|release_feedback)\(")


def test_the_guard_covers_every_route_that_runs_or_publishes_student_work():
    from nbgrader.server_extensions.formgrader import apihandlers

    dangerous = {}
    for pattern, handler in apihandlers.default_handlers:
        found = RUNS_OR_PUBLISHES.findall(inspect.getsource(handler))
        if found:
            dangerous[pattern] = found[0]
    assert dangerous, "nbgrader's formgrader no longer has these routes: the guard needs a look"
    assert dict(GUARDED_ROUTES) == dangerous
    for action in dangerous.values():
        assert "make grade" in MESSAGES[action] or "make return-feedback" in MESSAGES[action]


def test_make_formgraders_config_folder_enables_the_guard():
    """jupyter/formgrader (first on make formgrader's JUPYTER_CONFIG_PATH) enables the guard as an extension."""
    from jupyter_server.extension.utils import get_loader, get_metadata
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("jupyter_server_config.py", path=str(ROOT / "jupyter" / "formgrader")).load_config()
    extensions = config.ServerApp.jpserver_extensions.get_value({})
    assert extensions == {"autograder.formgrader.guard": True}
    module, points = get_metadata("autograder.formgrader.guard")
    assert points == [{"module": "autograder.formgrader.guard"}]
    assert get_loader(module).__name__ == "load_guard"
    makefile = (ROOT / "Makefile").read_text()
    assert 'JUPYTER_CONFIG_PATH="$(FORMGRADER_CONFIG_PATH)"' in makefile
    assert "FORMGRADER_CONFIG_PATH ?= $(CURDIR)/jupyter/formgrader:$(CURDIR)/jupyter/nbgrader" in makefile


def test_formgraders_collect_button_runs_the_courses_hardened_collect(monkeypatch, tmp_path):
    """formgrader's Collect route calls NbGraderAPI.collect, which runs ExchangeFactory.collect; the hub's
    formgrader services (hub/formgrader before FORMGRADER_CONFIG_PATH, as hub/jupyterhub_config.py sets
    it) and `make formgrader` (FORMGRADER_CONFIG_PATH alone) load nbgrader's configuration the way formgrader
    does, and it names autograder.formgrader.collect (its attack fixtures: tests/autograder/intake/test_inbound.py,
    tests/browser/test_formgrader.py)."""
    from nbgrader.apps import NbGrader, NbGraderAPI
    from nbgrader.server_extensions.formgrader import apihandlers

    from autograder.formgrader.collect import HardenedCollect

    routes = {pattern: handler for pattern, handler in apihandlers.default_handlers}
    collect = routes[r"/formgrader/api/assignment/([^/]+)/collect"]
    assert "self.api.collect(assignment_id)" in inspect.getsource(collect.post)
    assert "self.exchange.Collect(" in inspect.getsource(NbGraderAPI.collect)
    monkeypatch.setenv("NAMEDAXES_HUB_COURSE", "namedaxes")
    monkeypatch.setenv("NAMEDAXES_HUB_COURSE_DIR", str(tmp_path))
    makefile = (ROOT / "Makefile").read_text()
    assert "FORMGRADER_CONFIG_PATH ?= $(CURDIR)/jupyter/formgrader:$(CURDIR)/jupyter/nbgrader" in makefile
    formgrader_path = [str(ROOT / "jupyter" / "formgrader"), str(ROOT / "jupyter" / "nbgrader")]
    for path in ([str(ROOT / "hub" / "formgrader"), *formgrader_path], formgrader_path):
        monkeypatch.setenv("JUPYTER_CONFIG_PATH", ":".join(path))
        app = NbGrader()
        app.load_cwd_config = False
        app.load_config_file()  # as nbgrader's FormgradeExtension.load_config
        assert app.config.ExchangeFactory.collect == "autograder.formgrader.collect.HardenedCollect", path
        api = NbGraderAPI(config=app.config)
        assert api.exchange.collect is HardenedCollect, path


def test_formgraders_pages_get_the_script_that_disables_the_guarded_buttons():
    """Its pages, under any base URL, get the script before </body>; its API, static files and other pages do not."""
    from tornado import httputil

    from autograder.formgrader.guard import BUTTON_CELLS, PageScript, page_script

    page = b"<html><body><table></table></body></html>"
    for path, gets_it in (
        ("/formgrader", True),
        ("/formgrader/manage_submissions/02_scaled_sum", True),
        ("/services/formgrader-namedaxes/formgrader/manage_assignments", True),
        ("/formgrader/api/assignments", False),
        ("/formgrader/static/js/manage_submissions.js", False),
        ("/lab", False),
    ):
        request = httputil.HTTPServerRequest(
            start_line=httputil.RequestStartLine("GET", path, "HTTP/1.1"),
            headers=httputil.HTTPHeaders({"Host": "127.0.0.1"}),
        )
        transform = PageScript(request)
        headers = httputil.HTTPHeaders({"Content-Type": "text/html; charset=UTF-8", "Content-Length": str(len(page))})
        _, headers, chunk = transform.transform_first_chunk(200, headers, page, True)
        assert (page_script().encode() in chunk) is gets_it, path
        assert chunk.endswith(b"</body></html>") and headers["Content-Length"] == str(len(chunk)), path
    script = page_script()
    for action, message in MESSAGES.items():
        assert json.dumps(message) in script, action  # each button's reason, as formgrader's API words it
    assert "</" not in script.split("<script", 1)[1].rsplit("</script>", 1)[0], "nothing closes the script early"
    # the cells the script looks in are the ones formgrader's own scripts fill with these buttons
    from nbgrader.server_extensions import formgrader

    static = Path(formgrader.__file__).parent / "static" / "js"
    for cell in BUTTON_CELLS:
        users = [js.name for js in static.glob("manage_*.js") if f'this.$el.find(".{cell}")' in js.read_text()]
        assert users, f"formgrader's scripts no longer fill .{cell}: the guard's page script needs a look"
