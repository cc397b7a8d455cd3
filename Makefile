# JAX named axes course. Two commands matter:  `make lab` (students)  and  `make test` (CI).
# Every target installs what it needs itself (a venv with pinned packages in .venv/).

# Supported: Python 3.11 (jax 0.10.2, its newest release) to 3.13 (jax 0.12.x), one full lock
# each in requirements/pyXY.txt, made by `make lock` from the direct pins in requirements.txt.
# Interpreters are looked for on PATH and under pyenv (tools/find_python.sh).
# .venv, used by lab, grading and the whole test suite, is built with PYTHON: by default Python
# 3.11 when it is found, the line every recorded score and observation in tests/ was measured
# on, so the suite is the same on every machine that has it; else the newest supported Python
# found. `make test` also runs every notebook on the newest JAX in .venv-newest, built with
# NEWEST_PYTHON: the newest supported Python >= 3.12 found. Set either to a path to override.
PYTHON        ?= $(eval PYTHON := $$(shell tools/find_python.sh --prefer 3.11))$(PYTHON)
NEWEST_PYTHON ?= $(eval NEWEST_PYTHON := $$(shell tools/find_python.sh --min 3.12))$(NEWEST_PYTHON)
VENV      := .venv
BIN       := $(VENV)/bin
VENV_NEWEST := .venv-newest
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
PORT      ?= 8888
# The notebooks set up 8 devices themselves (namedaxes.setup_devices); this covers anything else.
export XLA_FLAGS := $(strip $(XLA_FLAGS) --xla_force_host_platform_device_count=8)
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: browser-deps formgrader update-work roster release collect return-feedback
.PHONY: fonts catalogs check-catalogs
.PHONY: help venv venv-newest lock system-deps lab notebooks check-notebooks test test-newest test-fast bench grade bench-grade clean

help:
	@echo "make lab            start JupyterLab on your own copy of the notebooks, work/ (installs everything first)"
	@echo "make update-work    merge a newer release of the notebooks into work/, keeping your answers"
	@echo "make test           what CI runs: regenerate check, unit tests, nbval on all notebooks, autograder tests,"
	@echo "                    then every notebook again on the newest JAX (.venv-newest) when a Python >= 3.12 is found"
	@echo "make test-newest    only that last part"
	@echo "make lock           re-resolve requirements/pyXY.txt and colab.txt from requirements.txt (maintainers)"
	@echo "make notebooks      regenerate notebooks/ from solutions/, and the Chinese editions solutions/zh, notebooks/zh (instructors)"
	@echo "make catalogs       merge English changes into the translation catalogs locale/zh/*.po and compile them (translators)"
	@echo "make check-catalogs fail unless every catalog is complete: lists what is missing or fuzzy (docs/TRANSLATING.md)"
	@echo "make formgrader     nbgrader's formgrader on build/course, for manual review (instructors)"
	@echo "make roster ROSTER=students.csv / release / collect / return-feedback   nbgrader's hand-in loop (instructors)"
	@echo "make grade          autograde a class: make grade SUBMISSIONS=dir OUT=dir [STUDENT=id] [COURSE_GRADEBOOK=1]"
	@echo "EDITION=zh          the Chinese edition: make lab EDITION=zh opens work/zh/; with release/collect/grade/"
	@echo "                    return-feedback/formgrader/roster it is the nbgrader course build/zh/course (course namedaxes-zh)"
	@echo "make bench          time Run-All of every notebook and of the whole suite"
	@echo "make bench-grade    time make grade against plain nbgrader autograde on a generated class"

SUPPORTED = $$(tools/find_python.sh --supported | tr '\n' ' ' | sed 's/ $$//')
# $(call check_python,VARIABLE): that interpreter exists, runs, and has a lock; else a clear error.
check_python = test -n "$($(1))" || { echo "No supported Python found: looked on PATH and under pyenv for Python $(SUPPORTED). Install one, or set $(1)=/path/to/python3.X." >&2; exit 1; }; \
  v=$$(tools/find_python.sh --version "$($(1))") || { echo "$(1)=$($(1)) does not run (not found, or a pyenv shim of a Python pyenv has not selected). Set $(1)=/path/to/python3.X, one of Python $(SUPPORTED)." >&2; exit 1; }; \
  test -f "requirements/py$$(echo $$v | tr -d .).txt" || { echo "Python $$v ($(1)=$($(1))) is not supported: this course has a tested lock for Python $(SUPPORTED) only (requirements/pyXY.txt). Set $(1)=/path/to/python3.X for one of those." >&2; exit 1; }

# tools/install_venv.py installs the lock once (saying what and how long) and stamps the venv;
# when the stamp matches the lock it returns at once, so later runs start in seconds.
venv:
	@$(call check_python,PYTHON)
	@$(PYTHON) tools/install_venv.py $(VENV)

venv-newest:
	@$(call check_python,NEWEST_PYTHON)
	@$(NEWEST_PYTHON) tools/install_venv.py $(VENV_NEWEST)

# Maintainers: after changing requirements.txt (needs every supported Python and the registry).
lock: venv
	$(BIN)/python tools/lock_requirements.py

# Debian's bubblewrap isolates student code while grading; without it grading still runs, with a loud warning.
# A CJK font for the Chinese edition's figures (Debian's fonts-wqy-microhei, 5 MB); without one they still draw, with a warning.
CJK_FONT ?= /usr/share/fonts/truetype/wqy/wqy-microhei.ttc
fonts:
	@test -f $(CJK_FONT) || fc-list :lang=zh 2>/dev/null | grep -q . || { \
	  echo "Installing Debian's fonts-wqy-microhei (Chinese text in figures)..."; \
	  (apt-get install -y -qq fonts-wqy-microhei >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq fonts-wqy-microhei >/dev/null)) \
	  || echo "WARNING: could not install fonts-wqy-microhei: Chinese text in figures will show as boxes"; }

system-deps: fonts
	@command -v bwrap >/dev/null 2>&1 || { \
	  echo "Installing bubblewrap (sandbox for grading student code)..."; \
	  (apt-get install -y -qq bubblewrap >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null)) \
	  || echo "WARNING: could not install bubblewrap: student code will be graded WITHOUT isolation"; }

# Students: JupyterLab on the student's own workspace LAB_DIR (work/; work-ID/ with STUDENT=ID), never
# on notebooks/ (the release): tools/workspace.py copies in the notebooks it lacks, never overwrites a
# file, and `make update-work` merges a newer release (answers kept; asks before dropping an edit).
# STUDENT=ID is a class on one machine: the Assignment List fetches and hands in as that student
# (JUPYTERHUB_USER, see jupyter/nbgrader_config.py) and the notebooks come from the instructor's
# release, so nothing is seeded. EXCHANGE=dir: the exchange folder (default build/exchange).
# nbgrader's Validate button and Assignment List are on (formgrader off), the venv's Python is the
# notebooks' `python3` kernel; no network needed (config: jupyter/).
# LAB_TOKEN=... fixes the login token (default: a fresh one, in the URL JupyterLab prints); LAB_ARGS=... adds options.
# Editions: the workspace holds the Chinese notebooks in LAB_DIR/zh/ (seeded from notebooks/zh/; kernels
# started on them speak Chinese, from the notebook's metadata). EDITION=zh opens JupyterLab there; with
# STUDENT=ID it is the Chinese nbgrader course (course id namedaxes-zh, fetched into work-ID/zh/).
# (EDITION, not LANG: LANG is the locale variable every program reads.)
EDITION  ?=
ifneq ($(filter-out en zh,$(EDITION)),)
$(error EDITION=$(EDITION): use EDITION=zh for the Chinese edition, or leave it unset for English)
endif
ZH       := $(filter zh,$(EDITION))
STUDENT  ?=
LAB_DIR  ?= $(if $(STUDENT),work-$(STUDENT),work)
LAB_OPEN  = $(LAB_DIR)$(if $(ZH),/zh)
EXCHANGE_ENV = $(if $(EXCHANGE),NAMEDAXES_EXCHANGE="$(abspath $(EXCHANGE))")
LAB_ENV := JUPYTER_CONFIG_PATH="$(CURDIR)/jupyter:$(CURDIR)/jupyter/nbgrader" JUPYTER_PATH="$(CURDIR)/jupyter/data"
lab: venv fonts
	@$(BIN)/python tools/workspace.py prepare $(if $(STUDENT),"$(LAB_OPEN)" --no-seed --student "$(STUDENT)","$(LAB_DIR)")
	@mkdir -p "$(LAB_OPEN)"
	@$(if $(EXCHANGE),true,mkdir -p build/exchange)
	@echo "Starting JupyterLab on your workspace $(LAB_OPEN)/$(if $(STUDENT), as student $(STUDENT))$(if $(ZH), (Chinese edition))$(if $(or $(ZH),$(STUDENT)),, (Chinese edition: zh/)) at http://localhost:$(PORT)/lab (the URL with its token follows; Ctrl-C stops)"
	exec env $(LAB_ENV) $(EXCHANGE_ENV) NAMEDAXES_WORK="$(abspath $(LAB_OPEN))" $(if $(STUDENT),JUPYTERHUB_USER="$(STUDENT)") \
	  $(if $(ZH),NAMEDAXES_COURSE_ID=namedaxes-zh) \
	  $(BIN)/jupyter lab --notebook-dir="$(LAB_OPEN)" --port=$(PORT) --no-browser \
	  $(if $(LAB_TOKEN),--IdentityProvider.token="$(LAB_TOKEN)") $(LAB_ARGS)

# Merge a newer release into the workspace: notebooks/ (after `git pull`), or with STUDENT=ID the
# exchange's release. Every changed notebook is backed up first (LAB_DIR/.backups/); YES=1 merges
# even where an edit of the student's cannot be kept (otherwise it asks, or stops without a terminal).
# Both editions: LAB_DIR/zh/ from notebooks/zh/ (or the exchange's namedaxes-zh), when LAB_DIR/zh/ exists.
RELEASE ?= $(if $(STUDENT),$(or $(EXCHANGE),build/exchange)/namedaxes/outbound,notebooks)
RELEASE_ZH ?= $(if $(STUDENT),$(or $(EXCHANGE),build/exchange)/namedaxes-zh/outbound,$(RELEASE)/zh)
update-work: venv
	$(BIN)/python tools/workspace.py update "$(LAB_DIR)" --release "$(RELEASE)" --edition zh="$(RELEASE_ZH)" $(if $(YES),--yes)

# Instructors: nbgrader's formgrader (manual review, gradebook) on an nbgrader course folder:
# build/course by default (laid out by `make notebooks`; `make grade` without SUBMISSIONS grades its submitted/).
# EDITION=zh: build/zh/course, the Chinese edition's course (tools/handin.py layout), graded against the English source.
COURSE ?= $(if $(ZH),build/zh/course,build/course)
formgrader: venv
	@$(COURSE_READY)
	@mkdir -p build/exchange
	@echo "Starting formgrader: http://localhost:$(PORT)/formgrader (log in with the token in the URL below)"
	cd "$(COURSE)" && exec env JUPYTER_CONFIG_PATH="$(CURDIR)/jupyter/nbgrader" JUPYTER_PATH="$(CURDIR)/jupyter/data" $(EXCHANGE_ENV) \
	  "$(CURDIR)/$(BIN)/jupyter" lab --port=$(PORT) \
	  --no-browser --allow-root --ServerApp.port_retries=0 $(if $(LAB_TOKEN),--IdentityProvider.token="$(LAB_TOKEN)") $(LAB_ARGS)

# Instructors: nbgrader's hand-in loop (tools/handin.py; README "Hand-in"): make roster ROSTER=students.csv
# (id,first_name,last_name,email), make release [ASSIGNMENT=id], students fetch/submit in make lab's
# Assignment List, make collect, make grade, make return-feedback. COURSE and EXCHANGE as above.
HANDIN = $(BIN)/python tools/handin.py --course "$(COURSE)" $(if $(EXCHANGE),--exchange "$(EXCHANGE)")
COURSE_LAYOUT = $(if $(ZH),$(HANDIN) layout --edition zh,$(BIN)/python tools/generate_notebooks.py --check)
COURSE_READY = test -f "$(COURSE)/nbgrader_config.py" || $(COURSE_LAYOUT)
roster: venv
	@test -n "$(ROSTER)" || { echo "usage: make roster ROSTER=students.csv  (columns: id,first_name,last_name,email)" >&2; exit 1; }
	@$(COURSE_READY)
	$(HANDIN) roster "$(ROSTER)"

# The release is what solutions/ generates and notebooks/ holds: --check rebuilds build/course and
# stops if notebooks/ is out of date (then `make notebooks` and commit first).
release: venv
	$(if $(filter build/course build/zh/course,$(COURSE)),$(COURSE_LAYOUT),@$(COURSE_READY))
	$(HANDIN) release $(ASSIGNMENT)

collect: venv
	$(HANDIN) collect $(ASSIGNMENT)

return-feedback: venv
	$(HANDIN) return-feedback $(ASSIGNMENT)

# Debian's Chromium for the browser tests (tests/browser); Playwright drives it and never downloads a browser.
CHROMIUM ?= /usr/bin/chromium
browser-deps:
	@test -x $(CHROMIUM) || { \
	  echo "Installing Debian's chromium (browser tests)..."; \
	  (apt-get install -y -qq chromium >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)) \
	  || echo "WARNING: could not install chromium: the browser tests will be skipped"; }

notebooks: venv
	$(BIN)/python tools/generate_notebooks.py

check-notebooks: venv
	$(BIN)/python tools/translate.py check --sync
	$(BIN)/python tools/generate_notebooks.py --check

# Translators (docs/TRANSLATING.md): after an English change, `make notebooks catalogs`, translate the
# new and fuzzy entries, then `make catalogs notebooks` and `make check-catalogs`.
catalogs: venv
	$(BIN)/python tools/translate.py update
	$(BIN)/python tools/translate.py compile

check-catalogs: venv
	$(BIN)/python tools/translate.py check

NBVAL := --nbval --nbval-current-env --nbval-cell-timeout=120

# The whole suite in .venv, then the notebooks on the newest JAX (test-newest): both always run,
# and make test fails if either fails.
test: venv system-deps browser-deps check-notebooks
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile $(NBVAL) tests solutions notebooks; status=$$?; \
	  $(MAKE) --no-print-directory test-newest || status=1; exit $$status

# The 12 notebooks (solutions and student versions) under nbval on the newest JAX line, plus the
# check that this Python's lock is what got installed and the unit tests of the one exercise whose
# behaviour Python 3.12 changed (slicing a dict: KeyError, not TypeError). About 2-3 min on 2 cores.
NEWEST_TESTS := tests/test_environment_pins.py tests/test_exercises_multi_process.py
test-newest:
	@if [ -z "$(NEWEST_PYTHON)" ]; then \
	  echo "NOTE: no Python >= 3.12 found (on PATH or under pyenv): the notebooks were NOT run on the newest JAX"; \
	  echo "      ($$(grep -m1 '^jax==' requirements/py313.txt)). Install Python 3.12 or 3.13, or set NEWEST_PYTHON=/path/to/python3.X."; \
	else \
	  $(MAKE) --no-print-directory venv-newest && \
	  echo "Notebooks on the newest JAX: $$($(VENV_NEWEST)/bin/python -c 'import sys, jax; print(f"jax {jax.__version__}, Python {sys.version.split()[0]}")')" && \
	  $(VENV_NEWEST)/bin/python -m pytest -q -n $(JOBS) --dist loadfile $(NBVAL) solutions notebooks $(NEWEST_TESTS); \
	fi

# Unit tests only (no notebooks, no autograder runs): seconds.
test-fast: venv
	$(BIN)/python -m pytest -q tests --ignore=tests/autograder --ignore=tests/browser --ignore=tests/test_validate.py

bench: venv
	$(BIN)/python tools/bench_notebooks.py
	$(BIN)/python tools/bench_checks.py

grade: venv system-deps
	$(BIN)/python -m autograder grade -j $(JOBS) --course "$(COURSE)" \
	  $(if $(SUBMISSIONS),--submissions "$(SUBMISSIONS)") $(if $(OUT),--out "$(OUT)") \
	  $(if $(STUDENT),--student "$(STUDENT)") $(if $(ASSIGNMENT),--assignment "$(ASSIGNMENT)") \
	  $(if $(COURSE_GRADEBOOK),--course-gradebook)

bench-grade: venv system-deps
	$(BIN)/python -m autograder.bench $(if $(STUDENTS),--students $(STUDENTS))

# build/ also holds the hand-in loop's state (exchange, collected submissions, grades, gradebook):
# not deleted without FORCE=1 while there are hand-ins in it.
clean:
	@if [ -z "$(FORCE)" ] && [ -n "$$(ls -A build/exchange/namedaxes/inbound build/course/submitted 2>/dev/null | grep -v ':$$' | grep -v '^$$')" ]; then \
	  echo "make clean would delete students' hand-ins (build/exchange) and collected submissions, grades and the gradebook (build/course)." >&2; \
	  echo "Keep what you need, then: make clean FORCE=1" >&2; exit 1; fi
	rm -rf build .pytest_cache
