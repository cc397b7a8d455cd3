# nbgrader for the students' servers on the hub (hub/jupyterhub_config.py puts this folder first on
# JUPYTER_CONFIG_PATH, before jupyter/ and jupyter/nbgrader/, so these settings win).
# nbgrader's documented JupyterHub mode for several courses: the hub says which courses the user is in
# (groups nbgrader-<course>), and fetched assignments go to <course>/<id>/.
# The student id is the hub user (jupyter/nbgrader_config.py: JUPYTERHUB_USER), which is the Unix
# account; the exchange is the deployment's (NAMEDAXES_EXCHANGE, jupyter/nbgrader/nbgrader_config.py).
import os
import sys

from nbgrader.auth import JupyterHubAuthPlugin

# private_submit.py, next to this file (the checkout's root is not listable by students, so Python
# cannot import from it: this folder is)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

c = get_config()  # noqa: F821
c.Authenticator.plugin_class = JupyterHubAuthPlugin
c.Exchange.path_includes_course = True
# One course per server (hub/jupyterhub_config.py sets NAMEDAXES_COURSE_ID): the default server's Assignment
# List shows the English course, the Chinese server's ("zh") the Chinese one. Unset: every course of the
# user's groups.
c.CourseDirectory.course_id = os.environ.get("NAMEDAXES_COURSE_ID", "")
# A hand-in readable by its author and the course's grader only (private_submit.py).
c.ExchangeFactory.submit = "private_submit.PrivateExchangeSubmit"
