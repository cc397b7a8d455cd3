# nbgrader settings shared by students (`make lab`: Validate, Assignment List) and instructors
# (`make formgrader`, `make release`/`collect`/`return-feedback`); both put this folder on
# JUPYTER_CONFIG_PATH. Student-only settings are in ../nbgrader_config.py.
import os

from courseinfo.course import COURSE_ID, EXCHANGE

c = get_config()  # noqa: F821

c.CourseDirectory.course_id = COURSE_ID
# The exchange (release -> fetch -> submit -> collect -> feedback) is a folder every student and
# the instructor can reach: build/exchange on one machine, or whatever `EXCHANGE=dir` (the
# environment variable NAMEDAXES_EXCHANGE) names, e.g. a shared folder on a JupyterHub.
c.Exchange.root = os.environ.get("NAMEDAXES_EXCHANGE") or str(EXCHANGE)
