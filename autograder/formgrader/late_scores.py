"""formgrader shows the score of record: the points less the late penalty the grader recorded.

nbgrader keeps a late penalty beside the score (`SubmittedNotebook.late_submission_penalty`, which
`make grade` writes from the course's deadlines, `course/deadlines.py`) and its formgrader lists the
score without it, so an instructor would read 7 / 7 where grades.csv, the feedback page and the LMS
export say 6 / 7. This module answers formgrader's score routes with formgrader's own handlers whose
`api` takes the penalties off (`LateApi`): the submissions of an assignment, one submission, the
students (their totals), one student, a student's submissions and a student's notebooks. Each answer
keeps formgrader's shape; a score gets the penalty off (never below 0) and the entry a
`late_penalty` field. Everything else formgrader does is untouched, and a course without penalties
answers exactly as before.

Loaded by `autograder.formgrader.guard` (the same routes-in-front mechanism): the routes keep
formgrader's authentication and XSRF checks, since the handlers are formgrader's own classes.
"""

from __future__ import annotations

from collections import defaultdict

__all__ = ["LATE_ROUTES", "LateApi", "penalties", "late_handlers"]


def penalties(gb) -> dict[tuple[str, str, str], float]:
    """(student, assignment, notebook) -> the late penalty recorded in nbgrader's gradebook."""
    from nbgrader.api import SubmittedNotebook

    found = {}
    for nb in gb.db.query(SubmittedNotebook).filter(SubmittedNotebook.late_submission_penalty > 0):
        found[(nb.student.id, nb.assignment.name, nb.name)] = float(nb.late_submission_penalty)
    return found


def _off(entry: dict, penalty: float) -> dict:
    if penalty > 0 and isinstance(entry.get("score"), int | float):
        entry["late_penalty"] = round(penalty, 6)
        entry["score"] = max(0.0, round(entry["score"] - penalty, 6))
    return entry


class LateApi:
    """An `NbGraderAPI` whose score answers have the recorded late penalties taken off."""

    def __init__(self, api, late: dict[tuple[str, str, str], float]):
        self._api, self._late = api, late
        self._by_assignment: dict[tuple[str, str], float] = defaultdict(float)
        self._by_student: dict[str, float] = defaultdict(float)
        for (student, assignment, _), penalty in late.items():
            self._by_assignment[(student, assignment)] += penalty
            self._by_student[student] += penalty

    def __getattr__(self, name):
        return getattr(self._api, name)

    def get_submissions(self, assignment_id):
        subs = self._api.get_submissions(assignment_id)
        return [_off(s, self._by_assignment[(s.get("student"), assignment_id)]) for s in subs]

    def get_submission(self, assignment_id, student_id, *args, **kwargs):
        sub = self._api.get_submission(assignment_id, student_id, *args, **kwargs)
        return None if sub is None else _off(sub, self._by_assignment[(student_id, assignment_id)])

    def get_students(self):
        return [_off(s, self._by_student[s.get("id")]) for s in self._api.get_students()]

    def get_student(self, student_id):
        student = self._api.get_student(student_id)
        return None if student is None else _off(student, self._by_student[student_id])

    def get_student_submissions(self, student_id):
        subs = self._api.get_student_submissions(student_id)
        return [_off(s, self._by_assignment[(student_id, s.get("name"))]) for s in subs]

    def get_student_notebook_submissions(self, student_id, assignment_id):
        subs = self._api.get_student_notebook_submissions(student_id, assignment_id)
        return [_off(s, self._late.get((student_id, assignment_id, s.get("name")), 0.0)) for s in subs]


# formgrader 0.9.6's routes that answer scores (nbgrader/server_extensions/formgrader/apihandlers.py)
LATE_ROUTES = (
    (r"/formgrader/api/submissions/([^/]+)", "SubmissionCollectionHandler"),
    (r"/formgrader/api/submission/([^/]+)/([^/]+)", "SubmissionHandler"),
    (r"/formgrader/api/students", "StudentCollectionHandler"),
    (r"/formgrader/api/student/([^/]+)", "StudentHandler"),
    (r"/formgrader/api/student_submissions/([^/]+)", "StudentSubmissionCollectionHandler"),
    (r"/formgrader/api/student_notebook_submissions/([^/]+)/([^/]+)", "StudentNotebookSubmissionCollectionHandler"),
)


def late_handlers() -> list[tuple[str, type]]:
    """(route, formgrader's handler class with `LateApi` as its `api`) for each of LATE_ROUTES."""
    from nbgrader.server_extensions.formgrader import apihandlers

    out = []
    for pattern, name in LATE_ROUTES:
        base = getattr(apihandlers, name)

        def api(self, _base=base):
            plain = _base.api.fget(self)
            with plain.gradebook as gb:  # a fresh session: what the last `make grade` wrote
                return LateApi(plain, penalties(gb))

        out.append((pattern, type(f"Late{name}", (base,), {"api": property(api)})))
    return out
