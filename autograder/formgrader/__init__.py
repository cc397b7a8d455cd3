"""nbgrader formgrader plug-ins: a server extension that disables its grading buttons, a collect through the intake."""
