"""What a course is: the ground floor every other package stands on.

`course`: the course ids, the editions and the one language list, the folders; `nbgrader_metadata`:
what nbgrader's cell metadata says a cell is; `labels`: which literals of a cell's code a student
sees (what an edition translates). Plain data and pure functions of the standard library: the
kernel package (namedaxes), the grader (autograder), the tools, the hub and the website import
them, and this package imports none of those (tests/test_package_boundaries.py).
"""
