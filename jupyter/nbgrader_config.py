# nbgrader settings for students only (`make lab` puts this folder on JUPYTER_CONFIG_PATH,
# instructors' commands do not): who is submitting, and where their submissions are remembered.
#
# nbgrader names a submission after the login (nbgrader.utils.get_username: the OS user, or
# JUPYTERHUB_USER only when the OS user is `jovyan`). Several students on one machine share one
# login, so `make lab STUDENT=alice` sets JUPYTERHUB_USER and this file makes it the student id.
# The Assignment List then lists only alice's submissions and fetches only her feedback.
import os

from courseinfo.course import COURSES  # the course ids: namedaxes, namedaxes-zh
from courseinfo.validate_limit import cell_timeout, timeout_reply

c = get_config()  # noqa: F821

_student = os.environ.get("JUPYTERHUB_USER", "").strip()
if _student:
    c.CourseDirectory.student_id = _student
# The Chinese edition is its own nbgrader course (same assignments and grade ids): `make lab
# STUDENT=ID EDITION=zh` sets NAMEDAXES_COURSE_ID=namedaxes-zh, so the Assignment List shows that one.
_course = os.environ.get("NAMEDAXES_COURSE_ID", "").strip()
if _course in COURSES:
    c.CourseDirectory.course_id = _course
# nbgrader keeps a copy of each submission (with the secret that names its feedback) in a cache,
# by default in the login's home, shared by everyone using it. `make lab` keeps it inside the
# student's workspace (NAMEDAXES_WORK), next to their notebooks.
# Fetched assignments go to the workspace too: nbgrader's Assignment List resolves its default
# assignment_dir (".") against the server's working folder, which `make lab` leaves at the repository.
_work = os.environ.get("NAMEDAXES_WORK", "").strip()
if _work:
    c.Exchange.cache = os.path.join(_work, ".nbgrader_cache")
    c.Exchange.assignment_dir = _work
# Validate's per-cell limit follows the machine's load (nbgrader reads this file at each press of Validate):
# nbgrader's fixed 30 s failed right notebooks on a busy machine. Why and how: courseinfo/validate_limit.py.
c.Execute.timeout = cell_timeout()
c.Execute.error_on_timeout = timeout_reply(c.Execute.timeout)
