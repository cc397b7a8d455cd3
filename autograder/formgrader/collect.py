"""formgrader's Collect button, through the same hand-in intake as `make collect` (autograder.intake.inbound).

Threat model: formgrader's Manage Assignments page has a Collect button per assignment. It posts
to `/formgrader/api/assignment/<assignment>/collect`, whose handler calls
`NbGraderAPI.collect`, which runs the exchange's collect class (`ExchangeFactory.collect`,
nbgrader's `nbgrader.exchange.default.collect.ExchangeCollect` unless configured) as the
formgrader's user: the course's grader account on the hub, often root under `make formgrader`.
nbgrader's own class reads the exchange's inbound/, which every student may write (see
autograder.intake.inbound for what a student can put there): it follows links (a hand-in whose notebook
links to the instructor's source notebook is collected as the solution), copies without bound,
stops the whole class at one folder name it cannot parse and only logs an owner mismatch.

Design: `HardenedCollect` is that exchange class, configured for formgrader in
jupyter/formgrader/nbgrader_config.py (`c.ExchangeFactory.collect`; on the formgrader's
JUPYTER_CONFIG_PATH for `make formgrader` and for the hub's formgrader services). Before nbgrader
looks for hand-ins it runs `autograder.intake.inbound.stage` on the real inbound/ into a private staging
exchange (mode 0700, in the course folder, removed when collect ends, whatever happens), logs every
refused hand-in by name with its reason as a WARNING (formgrader shows the captured log in its
Collect dialog, as text; the names a student chose through `intake.printable`, so that none forges
a log line), then points nbgrader's own collect at the staging
copy: from there on it is nbgrader's code (newest per student, `update`, the submitted/ layout, the
gradebook), reading only regular files this process wrote. nbgrader's owner check is off on that
copy (every staged file belongs to this process); the intake checked the real owners, more
strictly. The intake's bounds and owner mapping are this class's options (`student_user`,
`class_user`, `max_files`, `max_bytes`), as `make collect`'s STUDENT_USER, CLASS_USER, MAX_FILES,
MAX_BYTES. `before_duedate` is refused with a message: the intake stages one hand-in per student
(the newest acceptable), so nbgrader could not choose the last one before the due date.
"""

from __future__ import annotations

import shutil
import tempfile
import textwrap
from pathlib import Path

from nbgrader.exchange.default.collect import ExchangeCollect
from traitlets import Int, Unicode

from ..intake import inbound as intake

__all__ = ["HardenedCollect"]


class HardenedCollect(ExchangeCollect):
    """nbgrader's collect from a staging copy of what autograder.intake.inbound accepts (see the module docstring)."""

    student_user = Unicode(
        "{student}",
        help="The Unix user of a student id, who must own their hand-ins ({student} is replaced by the id).",
    ).tag(config=True)
    class_user = Unicode(
        "",
        help="On one machine: the OS user every student runs as, when collect runs as "
        "another (default: the user running collect).",
    ).tag(config=True)
    max_files = Int(intake.Limits.max_files, help="Files and folders per hand-in.").tag(config=True)
    max_bytes = Int(intake.Limits.max_bytes, help="Bytes per hand-in.").tag(config=True)

    _staging: str | None = None

    def start(self):
        exchange_root = self.root
        try:
            return super().start()
        finally:
            self.root = exchange_root
            if self._staging is not None:
                shutil.rmtree(self._staging, ignore_errors=True)
                self._staging = None

    def init_src(self):
        course_id, assignment = self.coursedir.course_id, self.coursedir.assignment_id
        if course_id == "":
            self.fail("No course id specified. Re-run with --course flag.")
        if self.before_duedate:
            self.fail(
                "ExchangeCollect.before_duedate is not supported by this course's collect: it stages only "
                "each student's newest acceptable hand-in (autograder.intake.inbound)"
            )
        inbound = Path(self.root) / course_id / "inbound"
        if not inbound.is_dir():
            self.fail(f"Course not found: {inbound}")
        # in the course folder (the instructor's): the copy is on the disk that will hold submitted/
        self._staging = tempfile.mkdtemp(prefix=".collect-staging-", dir=self.coursedir.root)  # mode 0700
        limits = intake.Limits(max_files=self.max_files, max_bytes=self.max_bytes)
        try:
            taken = intake.stage(
                inbound,
                Path(self._staging) / course_id / "inbound",
                assignment,
                limits,
                self.student_user,
                class_user=self.class_user or None,
            )
        except ValueError as err:  # an unknown class_user
            self.fail(str(err))
        except OSError as err:  # inbound/ itself cannot be opened or listed
            self.fail(f"cannot read {inbound}: {err.strerror or err}")
        self.log.info(
            "Hand-in intake of '%s': %d may be collected, %d refused (autograder.intake.inbound)",
            assignment,
            len(taken.staged),
            len(taken.refused),
        )
        # formgrader's dialog shows the log in a <pre>: lines that fit (its log formatter indents the later ones)
        for refusal in taken.refused:
            self.log.warning(
                "REFUSED %s:\n%s",
                intake.printable(refusal.entry),
                textwrap.fill(intake.printable(refusal.reason), 72, break_long_words=False),
            )
        for note in taken.notes:
            self.log.warning("%s", textwrap.fill(note, 72, break_long_words=False))
        self.root = self._staging
        self.check_owner = False
        super().init_src()
