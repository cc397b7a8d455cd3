"""Autograder for the named-axes course: fair, tamper-proof, crash-proof, isolated, parallel.

Scores come only from the observations each hidden test records
(`namedaxes.grading.record`), compared outside the student's kernel with the
observations recorded by the reference solution notebook. See
`python -m autograder grade --help` and `autograder.runner` for the pipeline.
"""

__version__ = "1.0.0"
