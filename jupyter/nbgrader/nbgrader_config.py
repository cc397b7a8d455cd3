# nbgrader settings shared by `make lab` (Validate, Assignment List) and
# `make formgrader`; both put this folder on JUPYTER_CONFIG_PATH.
import os

c = get_config()  # noqa: F821

c.CourseDirectory.course_id = "namedaxes"
# The exchange (release/fetch/submit) lives in build/exchange, not in a system
# folder. The course hands notebooks out through notebooks/, so it stays empty
# unless an instructor releases assignments from formgrader on this machine.
_repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
c.Exchange.root = os.path.join(_repo, "build", "exchange")
