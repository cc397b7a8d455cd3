"""autograder.formgrader_guard covers every formgrader route that runs or publishes student work.

The browser test (tests/browser/test_formgrader.py) proves the guard in a real
`make formgrader`: the button and direct POSTs get the message, nothing runs.
Here, without a server: the guard's routes are exactly formgrader's routes whose
handlers call nbgrader's autograde, generate_feedback or release_feedback (so an
nbgrader upgrade that adds such a route fails this test), and the config folder
`make formgrader` puts on JUPYTER_CONFIG_PATH enables the guard.
"""
from __future__ import annotations

import inspect
import re
from pathlib import Path

from autograder.formgrader_guard import GUARDED_ROUTES, MESSAGES

ROOT = Path(__file__).resolve().parents[2]
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
    assert extensions == {"autograder.formgrader_guard": True}
    module, points = get_metadata("autograder.formgrader_guard")
    assert points == [{"module": "autograder.formgrader_guard"}]
    assert get_loader(module).__name__ == "load_guard"
    makefile = (ROOT / "Makefile").read_text()
    assert 'JUPYTER_CONFIG_PATH="$(CURDIR)/jupyter/formgrader:$(CURDIR)/jupyter/nbgrader"' in makefile
