# nbgrader for a formgrader service on the hub: one per course, run as that course's grader account
# in the hub's course folder (hub/jupyterhub_config.py sets NAMEDAXES_HUB_COURSE and _COURSE_DIR).
# The course folder's own nbgrader_config.py (copied from build/course) is read after this one.
# No JupyterHubAuthPlugin here: a service serves one course, and the hub already lets only the
# group formgrade-<course> reach it (its role); the plugin would need the service to read users.
import os

c = get_config()  # noqa: F821
c.CourseDirectory.course_id = os.environ["NAMEDAXES_HUB_COURSE"]
c.CourseDirectory.root = os.environ["NAMEDAXES_HUB_COURSE_DIR"]
