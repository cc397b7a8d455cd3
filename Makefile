# JAX named axes course. Two commands matter:  `make lab` (students)  and  `make test` (CI).
# Every target installs what it needs itself (a venv with pinned packages in .venv/).

PYTHON    ?= python3
VENV      := .venv
BIN       := $(VENV)/bin
STAMP     := $(VENV)/.installed
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
PORT      ?= 8888
# The notebooks set up 8 devices themselves (namedaxes.setup_devices); this covers anything else.
export XLA_FLAGS := $(strip $(XLA_FLAGS) --xla_force_host_platform_device_count=8)
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: help venv system-deps lab notebooks check-notebooks test test-fast bench grade bench-grade clean

help:
	@echo "make lab            start JupyterLab on notebooks/ (installs everything first)"
	@echo "make test           what CI runs: regenerate check, unit tests, nbval on all notebooks, autograder tests"
	@echo "make notebooks      regenerate notebooks/ from solutions/ (instructors)"
	@echo "make grade          autograde a class: make grade SUBMISSIONS=dir OUT=dir [STUDENT=id]"
	@echo "make bench          time Run-All of every notebook and of the whole suite"
	@echo "make bench-grade    time make grade against plain nbgrader autograde on a generated class"

$(STAMP): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; v = sys.version_info[:2]; assert v == (3, 11), f"this course pins packages for Python 3.11, found {v[0]}.{v[1]} (set PYTHON=python3.11)"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install -q --disable-pip-version-check --no-deps -e .
	touch $@

venv: $(STAMP)

# Debian's bubblewrap isolates student code while grading; without it grading still runs, with a loud warning.
system-deps:
	@command -v bwrap >/dev/null 2>&1 || { \
	  echo "Installing bubblewrap (sandbox for grading student code)..."; \
	  (apt-get install -y -qq bubblewrap >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null)) \
	  || echo "WARNING: could not install bubblewrap: student code will be graded WITHOUT isolation"; }

lab: venv
	$(BIN)/jupyter lab --notebook-dir=notebooks --port=$(PORT) --no-browser

notebooks: venv
	$(BIN)/python tools/generate_notebooks.py

check-notebooks: venv
	$(BIN)/python tools/generate_notebooks.py --check

NBVAL := --nbval --nbval-current-env --nbval-cell-timeout=120

test: venv system-deps check-notebooks
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile $(NBVAL) tests solutions notebooks

# Unit tests only (no notebooks, no autograder runs): seconds.
test-fast: venv
	$(BIN)/python -m pytest -q tests --ignore=tests/autograder

bench: venv
	$(BIN)/python tools/bench_notebooks.py

grade: venv system-deps
	$(BIN)/python -m autograder grade -j $(JOBS) \
	  $(if $(SUBMISSIONS),--submissions "$(SUBMISSIONS)") $(if $(OUT),--out "$(OUT)") \
	  $(if $(STUDENT),--student "$(STUDENT)") $(if $(ASSIGNMENT),--assignment "$(ASSIGNMENT)")

bench-grade: venv system-deps
	$(BIN)/python -m autograder.bench $(if $(STUDENTS),--students $(STUDENTS))

clean:
	rm -rf build .pytest_cache
