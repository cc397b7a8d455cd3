"""One parallel autograder run over all fixture submissions, shared by the tests.

The class is built from the specs in `autograder_specs.py` (from the released
notebooks) and graded once per test session by `python -m autograder grade`,
with a short per-cell timeout so the infinite-loop fixtures stay cheap. With
pytest-xdist the run happens once: the first worker grades, the others wait
for its results (a lock file in the shared temporary folder).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from pathlib import Path

import autograder_specs as specs
import pytest
from autograder_harness import GradedClass, build_and_grade, read_csv

from autograder.course.notebooks import SourceNotebook


@pytest.fixture(scope="session")
def graded_class(tmp_path_factory) -> GradedClass:
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent
    root = shared / "autograder-class"
    marker = shared / "autograder-class.json"
    with open(shared / "autograder-class.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists():
            shutil.rmtree(root, ignore_errors=True)
            root.mkdir()
            marker.write_text(json.dumps(build_and_grade(root)))
        info = json.loads(marker.read_text())
    out = Path(info["out"])
    rows = read_csv(out / "grades.csv") if (out / "grades.csv").exists() else []
    results = json.loads((out / "results.json").read_text())["rows"] if (out / "results.json").exists() else []
    return GradedClass(
        root=root,
        course=Path(info["course"]),
        submissions=Path(info["submissions"]),
        out=out,
        cache=Path(info["cache"]),
        returncode=info["returncode"],
        stdout=info["stdout"],
        stderr=info["stderr"],
        rows=rows,
        results=results,
        points=info["points"],
        context=info["context"],
        reference_dirs=info["reference_dirs"],
        canary={k: v.encode("latin-1") for k, v in info["canary"].items()},
    )


@pytest.fixture(scope="module")
def source() -> SourceNotebook:
    """Notebook 02's source (solutions/), as the grader loads it: the unit tests' merging and splitting."""
    return SourceNotebook.load(specs.A02, specs.REPO / "solutions" / f"{specs.A02}.ipynb")
