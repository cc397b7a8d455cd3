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
VENV_SITE := .venv-site
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
PORT      ?= 8888
# The notebooks set up 8 devices themselves (namedaxes.setup_devices); this covers anything else.
export XLA_FLAGS := $(strip $(XLA_FLAGS) --xla_force_host_platform_device_count=8)
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: browser-deps formgrader update-work roster release collect return-feedback export
.PHONY: fonts catalogs check-catalogs site site-venv site-lock
.PHONY: hub hub-stop hub-clean hub-deps hub-test-deps bench-hub
.PHONY: help venv venv-newest lock system-deps lab notebooks check-notebooks lint format test test-newest test-fast bench grade bench-grade clean

help:
	@echo "Start here: README.md; then docs/students.md, docs/instructors.md, docs/maintainers.md, docs/translators.md"
	@echo "make lab            start JupyterLab on your own copy of the notebooks, work/ (installs everything first)"
	@echo "make update-work    merge a newer release of the notebooks into work/, keeping your answers"
	@echo "make test           what CI runs: regenerate check, unit tests, nbval on all notebooks, autograder tests,"
	@echo "                    then every notebook again on the newest JAX (.venv-newest) when a Python >= 3.12 is found"
	@echo "make test-newest    only that last part"
	@echo "make lint           ruff check and ruff format --check (pyproject.toml's [tool.ruff]); make test runs it first"
	@echo "make format         ruff's safe fixes (imports sorted, ...) and ruff format, in place (maintainers)"
	@echo "make lock           re-resolve requirements/pyXY.txt and colab.txt from requirements.txt (maintainers)"
	@echo "make notebooks      regenerate notebooks/ from solutions/, and the Chinese editions solutions/zh, notebooks/zh (instructors)"
	@echo "make catalogs       merge English changes into the translation catalogs locale/zh/*.po and compile them (translators)"
	@echo "make check-catalogs fail unless every catalog is complete: lists what is missing or fuzzy (docs/translators.md)"
	@echo "make formgrader     nbgrader's formgrader on build/course, for manual review (instructors)"
	@echo "make roster ROSTER=students.csv / release / collect / return-feedback   nbgrader's hand-in loop (instructors,"
	@echo "                    docs/instructors.md; collect refuses links, oversized and misowned hand-ins: STUDENT_USER, MAX_FILES, MAX_BYTES)"
	@echo "make grade          autograde a class: make grade SUBMISSIONS=dir OUT=dir [STUDENT=id] [COURSE_GRADEBOOK=1]"
	@echo "                    (due dates, extensions, late penalties: COURSE/deadlines.toml, COURSE/extensions.csv)"
	@echo "make export LMS=canvas|moodle|csv   the graded class as a file the LMS imports: OUT/lms-LMS.csv"
	@echo "EDITION=zh          the Chinese edition: make lab EDITION=zh opens work/zh/; with release/collect/grade/"
	@echo "                    return-feedback/formgrader/roster it is the nbgrader course build/zh/course (course namedaxes-zh)"
	@echo "make site           the course as a static website in build/site/ (both editions; GitHub Pages ready)"
	@echo "make bench          time Run-All of every notebook and of the whole suite"
	@echo "make bench-grade    time make grade against plain nbgrader autograde on a generated class"
	@echo "make hub            a real JupyterHub for a class on this machine (root): PORT=8000, ROSTER=students.csv;"
	@echo "                    then make release/collect/grade/return-feedback HUB=1; make hub-stop; make hub-clean"
	@echo "make bench-hub      STUDENTS=20 simulated students log in, start servers, fetch and submit at once (root)"

SUPPORTED = $$(tools/find_python.sh --supported | tr '\n' ' ' | sed 's/ $$//')
# $(call check_python,VARIABLE): that interpreter exists, runs, and has a lock; else a clear error.
check_python = test -n "$($(1))" || { echo "No supported Python found: looked on PATH and under pyenv for Python $(SUPPORTED). Install one, or set $(1)=/path/to/python3.X." >&2; exit 1; }; \
  v=$$(tools/find_python.sh --version "$($(1))") || { echo "$(1)=$($(1)) does not run (not found, or a pyenv shim of a Python pyenv has not selected). Set $(1)=/path/to/python3.X, one of Python $(SUPPORTED)." >&2; exit 1; }; \
  test -f "requirements/py$$(echo $$v | tr -d .).txt" || { echo "Python $$v ($(1)=$($(1))) is not supported: this course has a tested lock for Python $(SUPPORTED) only (requirements/pyXY.txt). Set $(1)=/path/to/python3.X for one of those." >&2; exit 1; }

# tools/install_venv.py installs the lock once (saying what and how long) and stamps the venv;
# when the stamp matches the lock it returns at once, so later runs start in seconds.
venv:
	@$(call check_python,PYTHON)
	@$(PYTHON) -m tools.install_venv $(VENV)

venv-newest:
	@$(call check_python,NEWEST_PYTHON)
	@$(NEWEST_PYTHON) -m tools.install_venv $(VENV_NEWEST)

# Maintainers: after changing requirements.txt (needs every supported Python and the registry).
lock: venv
	$(BIN)/python -m tools.lock_requirements

# Debian's bubblewrap isolates student code while grading, libseccomp2 compiles its system-call filter; without
# them grading still runs, with a loud warning.
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
	@/sbin/ldconfig -p 2>/dev/null | grep -q 'libseccomp\.so\.2 ' || { \
	  echo "Installing libseccomp2 (the system-call filter of the grading sandbox)..."; \
	  (apt-get install -y -qq libseccomp2 >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq libseccomp2 >/dev/null)) \
	  || echo "WARNING: could not install libseccomp2: student kernels will run WITHOUT the system-call allow-list"; }

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
# EDITION=zh adds jupyter/zh: JupyterLab's own menus and dialogs in Chinese (the zh-CN language pack, in the lock),
# and build/jupyter-zh first on JUPYTER_PATH: nbgrader's Validate button, its dialog and the Assignment List in
# Chinese (a translated copy of the installed extension, tools/nbgrader_zh.py; rebuilt only when nbgrader or
# locale/zh/nbgrader-labextension.po changed).
NBGRADER_ZH := build/jupyter-zh
LAB_ENV := JUPYTER_CONFIG_PATH="$(CURDIR)/jupyter:$(CURDIR)/jupyter/nbgrader$(if $(ZH),:$(CURDIR)/jupyter/zh)" \
  JUPYTER_PATH="$(if $(ZH),$(CURDIR)/$(NBGRADER_ZH):)$(CURDIR)/jupyter/data"
lab: venv fonts
	@$(BIN)/python -m tools.workspace prepare $(if $(STUDENT),"$(LAB_OPEN)" --no-seed --student "$(STUDENT)","$(LAB_DIR)")
	@$(if $(ZH),$(BIN)/python -m tools.nbgrader_zh build $(NBGRADER_ZH) || echo "WARNING: nbgrader's buttons stay English (above: why)")
	@mkdir -p "$(LAB_OPEN)"
	@$(if $(EXCHANGE),true,mkdir -p build/exchange)
	@echo "Starting JupyterLab on your workspace $(LAB_OPEN)/$(if $(STUDENT), as student $(STUDENT))$(if $(ZH), (Chinese edition))$(if $(or $(ZH),$(STUDENT)),, (Chinese edition: zh/)); the URL to open, with its token, comes last"
	@$(if $(STUDENT),echo "Note: every make lab on this machine runs as the same OS user ($$(id -un)): classmates can read each other's work. A real class: make hub (docs/instructors.md).")
	@exec env $(LAB_ENV) $(EXCHANGE_ENV) NAMEDAXES_WORK="$(abspath $(LAB_OPEN))" $(if $(STUDENT),JUPYTERHUB_USER="$(STUDENT)") \
	  $(if $(ZH),NAMEDAXES_COURSE_ID=namedaxes-zh) \
	  $(BIN)/python -m tools.serve --port $(PORT) --path /lab $(if $(LAB_TOKEN),--token "$(LAB_TOKEN)") -- \
	  $(BIN)/jupyter lab --notebook-dir="$(LAB_OPEN)" --no-browser $(LAB_ARGS)

# Merge a newer release into the workspace: notebooks/ (after `git pull`), or with STUDENT=ID the
# exchange's release. Every changed notebook is backed up first (LAB_DIR/.backups/); YES=1 merges
# even where an edit of the student's cannot be kept (otherwise it asks, or stops without a terminal).
# Both editions: LAB_DIR/zh/ from notebooks/zh/ (or the exchange's namedaxes-zh), when LAB_DIR/zh/ exists.
RELEASE ?= $(if $(STUDENT),$(or $(EXCHANGE),build/exchange)/namedaxes/outbound,notebooks)
RELEASE_ZH ?= $(if $(STUDENT),$(or $(EXCHANGE),build/exchange)/namedaxes-zh/outbound,$(RELEASE)/zh)
update-work: venv
	$(BIN)/python -m tools.workspace update "$(LAB_DIR)" --release "$(RELEASE)" --edition zh="$(RELEASE_ZH)" $(if $(YES),--yes)

# Instructors: nbgrader's formgrader (manual review, gradebook) on an nbgrader course folder:
# its Autograde / Generate Feedback / Release Feedback actions are disabled (jupyter/formgrader: they would
# run student code unsandboxed and overwrite the sandboxed scores); grade with `make grade`. Its Collect
# button takes hand-ins as `make collect` does (autograder/formgrader/collect.py, jupyter/formgrader/nbgrader_config.py).
# build/course by default (laid out by `make notebooks`; `make grade` without SUBMISSIONS grades its submitted/).
# EDITION=zh: build/zh/course, the Chinese edition's course (tools/handin.py layout), graded against the English source.
COURSE ?= $(if $(ZH),build/zh/course,build/course)
ifneq ($(HUB),)
COURSE = $(abspath $(HUB_DIR))/courses/namedaxes$(if $(ZH),-zh)
EXCHANGE = $(abspath $(HUB_DIR))/exchange
endif
formgrader: venv
	@$(COURSE_READY)
	@mkdir -p build/exchange
	@echo "Starting formgrader on the course $(COURSE); the /formgrader URL to open, with its token, comes last"
	@cd "$(COURSE)" && exec env JUPYTER_CONFIG_PATH="$(FORMGRADER_CONFIG_PATH)" JUPYTER_PATH="$(CURDIR)/jupyter/data" $(EXCHANGE_ENV) \
	  "$(CURDIR)/$(BIN)/python" -m tools.serve --port $(PORT) --path /formgrader --what formgrader \
	  $(if $(LAB_TOKEN),--token "$(LAB_TOKEN)") -- \
	  "$(CURDIR)/$(BIN)/jupyter" lab --no-browser --allow-root $(LAB_ARGS)

# Instructors: nbgrader's hand-in loop (tools/handin.py; docs/instructors.md): make roster ROSTER=students.csv
# (id,first_name,last_name,email), make release [ASSIGNMENT=id], students fetch/submit in make lab's
# Assignment List, make collect, make grade, make return-feedback. COURSE and EXCHANGE as above.
HANDIN = $(HUB_AS) $(if $(HUB),$(HUB_VENV),$(VENV))/bin/python -m tools.handin --course "$(COURSE)" $(if $(EXCHANGE),--exchange "$(EXCHANGE)")
COURSE_LAYOUT = $(if $(ZH),$(HANDIN) layout --edition zh,$(BIN)/python -m tools.generate_notebooks --check)
COURSE_READY = test -f "$(COURSE)/nbgrader_config.py" || $(COURSE_LAYOUT)
roster: venv
	@test -n "$(ROSTER)" || { echo "usage: make roster ROSTER=students.csv  (columns: id,first_name,last_name,email)" >&2; exit 1; }
ifneq ($(HUB),)
	$(MAKE) --no-print-directory hub ROSTER="$(abspath $(ROSTER))"
else
	@$(COURSE_READY)
	$(HANDIN) roster "$(ROSTER)"
endif

# The release is what solutions/ generates and notebooks/ holds: --check rebuilds build/course and
# stops if notebooks/ is out of date (then `make notebooks` and commit first).
release: venv
	$(if $(filter build/course build/zh/course,$(COURSE)),$(COURSE_LAYOUT),@$(COURSE_READY))
	$(HANDIN) release $(ASSIGNMENT)

# collect (and return-feedback, which collects first) takes only what autograder/intake/handin.py accepts: regular
# files, owned by the student's Unix user (STUDENT_USER=FORMAT maps an id to it, default {student}),
# at most MAX_FILES files and MAX_BYTES bytes per hand-in; every refused hand-in is listed by name.
# CLASS_USER=name: on one machine, the OS user every `make lab STUDENT=...` runs as, when collect runs as another.
COLLECT_OPTS = $(if $(STUDENT_USER),--student-user "$(STUDENT_USER)") $(if $(CLASS_USER),--class-user "$(CLASS_USER)") \
  $(if $(MAX_FILES),--max-files $(MAX_FILES)) \
  $(if $(MAX_BYTES),--max-bytes $(MAX_BYTES))
collect: venv
	@$(HANDIN) collect $(COLLECT_OPTS) $(ASSIGNMENT)

return-feedback: venv
	@$(HANDIN) return-feedback $(COLLECT_OPTS) $(ASSIGNMENT)

# The course as a website (website/build_site.py): every solved notebook executed on 8 simulated devices
# (cached in build/site-cache/ by content hash, so an unchanged notebook never runs again), pages
# composed from the student notebooks with those outputs, rendered by Sphinx + myst-nb +
# sphinx-book-theme from the site's own venv .venv-site (website/requirements.txt; the course's locks
# stay as they are). English in build/site/, Chinese in build/site/zh/. Repository of the Colab
# links: website/settings.py, or NAMEDAXES_SITE_REPOSITORY=https://github.com/OWNER/NAME.
site: venv site-venv fonts
	@$(BIN)/python -m website.build_site --sphinx $(VENV_SITE)/bin/python -j $(JOBS)

site-venv:
	@$(call check_python,PYTHON)
	@$(PYTHON) -m website.install_site_venv $(VENV_SITE)

# Maintainers: after changing website/requirements.in (needs the registry).
site-lock: site-venv
	$(VENV_SITE)/bin/python -m website.lock_site_requirements

# Debian's Chromium for the browser tests (tests/browser); Playwright drives it and never downloads a browser.
CHROMIUM ?= /usr/bin/chromium
AXE_DIR  := build/axe
browser-deps:
	@test -x $(CHROMIUM) || { \
	  echo "Installing Debian's chromium (browser tests)..."; \
	  (apt-get install -y -qq chromium >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)) \
	  || echo "WARNING: could not install chromium: the browser tests will be skipped"; }
	@cmp -s tests/browser/axe/package-lock.json $(AXE_DIR)/package-lock.json && test -f $(AXE_DIR)/node_modules/axe-core/axe.min.js || { \
	  echo "Installing axe-core (the browser tests' accessibility checks: npm ci of tests/browser/axe/package-lock.json)..."; \
	  mkdir -p $(AXE_DIR) && cp tests/browser/axe/package.json tests/browser/axe/package-lock.json $(AXE_DIR)/ \
	  && npm ci --prefix $(AXE_DIR) --no-audit --no-fund --loglevel=error >/dev/null; } \
	  || echo "WARNING: could not install axe-core (needs node and npm): the accessibility tests will be skipped"

notebooks: venv
	$(BIN)/python -m tools.generate_notebooks

check-notebooks: venv
	$(BIN)/python -m tools.translate check --sync
	$(BIN)/python -m tools.generate_notebooks --check

# Translators (docs/translators.md): after an English change, `make notebooks catalogs`, translate the
# new and fuzzy entries, then `make catalogs notebooks` and `make check-catalogs`.
catalogs: venv
	$(BIN)/python -m tools.translate update
	$(BIN)/python -m tools.translate compile

check-catalogs: venv
	$(BIN)/python -m tools.translate check
	$(BIN)/python -m tools.nbgrader_zh check

NBVAL := --nbval --nbval-current-env --nbval-cell-timeout=120

# ruff (pinned in requirements.txt, configured in pyproject.toml): seconds, so make test runs it first.
lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Rewrites files: ruff's safe fixes (imports sorted, older syntax upgraded, unused noqa dropped), then the formatter.
format: venv
	$(BIN)/ruff check --fix-only .
	$(BIN)/ruff format .

# The whole suite in .venv (every kind of test: the markers in pyproject.toml, given by conftest.py),
# then the notebooks on the newest JAX (test-newest): both always run, and make test fails if either fails.
# Each notebook runs once here: the solved ones of both editions by tests/notebooks/test_solved_notebooks.py
# (the website's executions, cached in build/site-cache/ and shared with the site's test), the English
# student notebooks under nbval; the Chinese student notebooks have the English code, cell for cell
# (tests/namedaxes/test_i18n.py), so they run on the newest JAX line only.
test: lint venv site-venv system-deps browser-deps hub-test-deps check-notebooks
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile $(NBVAL) tests $(wildcard notebooks/*.ipynb); status=$$?; \
	  $(MAKE) --no-print-directory test-newest || status=1; exit $$status

# Every notebook (solutions and student versions, both editions) under nbval on the newest JAX line, plus
# the check that this Python's lock is what got installed and the unit tests of the exercises whose
# behaviour a Python or JAX release changed: the tests marked `newest` (conftest.py, NEWEST). About 2-3 min on 2 cores.
test-newest:
	@if [ -z "$(NEWEST_PYTHON)" ]; then \
	  echo "NOTE: no Python >= 3.12 found (on PATH or under pyenv): the notebooks were NOT run on the newest JAX"; \
	  echo "      ($$(grep -m1 '^jax==' requirements/py313.txt)). Install Python 3.12 or 3.13, or set NEWEST_PYTHON=/path/to/python3.X."; \
	else \
	  $(MAKE) --no-print-directory venv-newest && \
	  echo "Notebooks on the newest JAX: $$($(VENV_NEWEST)/bin/python -c 'import sys, jax; print(f"jax {jax.__version__}, Python {sys.version.split()[0]}")')" && \
	  $(VENV_NEWEST)/bin/python -m pytest -q -n $(JOBS) --dist loadfile $(NBVAL) -m newest tests solutions notebooks; \
	fi

# The unit tests only (marker `unit`: no exercise matrix, notebook, grader run, browser or hub), in parallel: under a minute.
test-fast: venv
	$(BIN)/python -m pytest -q -n $(JOBS) -m unit tests

bench: venv
	$(BIN)/python -m tools.bench_notebooks
	$(BIN)/python -m tools.bench_checks
	$(BIN)/python -m tools.bench_report

grade: venv system-deps
	@$(BIN)/python -m autograder grade -j $(JOBS) --course "$(COURSE)" \
	  $(if $(SUBMISSIONS),--submissions "$(SUBMISSIONS)") $(if $(OUT),--out "$(OUT)") \
	  $(if $(STUDENT),--student "$(STUDENT)") $(if $(ASSIGNMENT),--assignment "$(ASSIGNMENT)") \
	  $(if $(COURSE_GRADEBOOK),--course-gradebook)$(if $(HUB), && $(HUB_ENV) $(BIN)/python -m hub.layout own)

# After make grade: OUT/grades.csv (late penalties applied) and the roster (make roster) as a gradebook
# the LMS imports as it is (autograder/publish/lms.py): LMS=canvas, moodle or csv -> OUT/lms-LMS.csv.
export: venv
	@$(BIN)/python -m autograder export --lms "$(LMS)" --course "$(COURSE)" $(if $(OUT),--out "$(OUT)") \
	  $(if $(HUB), && $(HUB_ENV) $(BIN)/python -m hub.layout own)

bench-grade: venv system-deps
	$(BIN)/python -m autograder.bench $(if $(STUDENTS),--students $(STUDENTS))

# A class on JupyterHub (hub/, docs/instructors-jupyterhub.md), as root: `make hub` installs Debian's
# nodejs/npm when missing and the official configurable-http-proxy (npm ci of hub/proxy/package-lock.json),
# creates the course's Unix accounts (the instructor, one grader per course; with ROSTER=students.csv
# one per student; group namedaxes, homes in HUB_DIR/home), lays out HUB_DIR (exchange, the hub's two
# courses, state) and starts JupyterHub on PORT (default 8000; HUB_IP=0.0.0.0 to serve other machines:
# put TLS in front), returning once the login page answers. Passwords: HUB_DIR/state/passwords.csv.
# The instructor's commands act on the hub with HUB=1: make release/collect/return-feedback HUB=1 run
# as the course's grader account; make grade HUB=1 grades as root, then gives the course back to it.
# FORMGRADER_CONFIG_PATH: the formgrader's jupyter config path, one for `make formgrader` and the hub's
# formgrader services (hub/jupyterhub_config.py puts hub/formgrader/ before it): where its buttons are made safe.
# The hub, the students' servers and the graders run HUB_VENV (default .venv); every user must be able
# to pass the folders above it and above its Python: hub/layout.py opens them (o+x only) and says so.
HUB_DIR  ?= hub-data
HUB_VENV ?= $(VENV)
HUB_IP   ?= 127.0.0.1
HUB_PORT  = $(if $(filter command line environment,$(origin PORT)),$(PORT),8000)
FORMGRADER_CONFIG_PATH ?= $(CURDIR)/jupyter/formgrader:$(CURDIR)/jupyter/nbgrader
HUB_ENV   = NAMEDAXES_HUB_DIR="$(abspath $(HUB_DIR))" NAMEDAXES_HUB_PORT="$(HUB_PORT)" NAMEDAXES_HUB_IP="$(HUB_IP)" \
  $(if $(HUB_GROUP),NAMEDAXES_HUB_GROUP="$(HUB_GROUP)") $(if $(HUB_INSTRUCTOR),NAMEDAXES_HUB_INSTRUCTOR="$(HUB_INSTRUCTOR)") \
  NAMEDAXES_HUB_VENV="$(abspath $(HUB_VENV))" FORMGRADER_CONFIG_PATH="$(FORMGRADER_CONFIG_PATH)"
HUB_AS    = $(if $(HUB),runuser -u $(or $(HUB_GROUP),namedaxes)-grader$(if $(ZH),-zh) --)
hub-deps:
	@test "$$(id -u)" = 0 || { echo "make hub needs root: it creates the course's Unix accounts (useradd, chpasswd), runs JupyterHub as root for PAM logins and servers as each student (LocalProcessSpawner), and chowns the hub's folders. Run it as root (make hub), or from an account that may use sudo: sudo make hub" >&2; exit 1; }
	@command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || { \
	  echo "Installing Debian's nodejs and npm (JupyterHub's proxy, configurable-http-proxy, runs on Node.js)..."; \
	  (apt-get install -y -qq nodejs npm >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null)) \
	  || { echo "could not install nodejs and npm with apt-get: install them, then make hub again" >&2; exit 1; }; }

# For `make test`: as root, what the hub tests need (tests/hub); otherwise
# a note (those tests then skip and say why).
hub-test-deps:
	@if [ "$$(id -u)" = 0 ]; then $(MAKE) --no-print-directory hub-deps; else \
	  echo "NOTE: not root: the JupyterHub tests (real Unix accounts) will be skipped; CI runs them as root"; fi

# The hub's courses are copied from build/course and build/zh/course: rebuilt first whenever solutions/ changed
# since they were built (hub.layout built), never taken as a leftover of an older checkout.
HUB_COURSES_BUILT = $(BIN)/python -m hub.layout built namedaxes || $(BIN)/python -m tools.generate_notebooks --check; \
  $(BIN)/python -m hub.layout built namedaxes-zh || $(BIN)/python -m tools.handin --course build/zh/course layout --edition zh
hub: venv hub-deps
	@$(HUB_COURSES_BUILT)
	@env $(HUB_ENV) $(BIN)/python -m hub.server start $(if $(ROSTER),--roster "$(abspath $(ROSTER))")

hub-stop: venv
	@env $(HUB_ENV) $(BIN)/python -m hub.server stop

hub-clean: venv
	@env $(HUB_ENV) $(BIN)/python -m hub.server clean

# STUDENTS (default 20) simulated students at once against a private hub of their own (hub/bench.py).
bench-hub: venv hub-deps
	@$(HUB_COURSES_BUILT)
	@env NAMEDAXES_HUB_VENV="$(abspath $(HUB_VENV))" FORMGRADER_CONFIG_PATH="$(FORMGRADER_CONFIG_PATH)" \
	  $(BIN)/python -m hub.bench $(if $(STUDENTS),--students $(STUDENTS))

# build/ also holds the hand-in loop's state (exchange, collected submissions, grades, gradebook):
# not deleted without FORCE=1 while there are hand-ins in it.
clean:
	@if [ -z "$(FORCE)" ] && [ -n "$$(ls -A build/exchange/namedaxes/inbound build/course/submitted 2>/dev/null | grep -v ':$$' | grep -v '^$$')" ]; then \
	  echo "make clean would delete students' hand-ins (build/exchange) and collected submissions, grades and the gradebook (build/course)." >&2; \
	  echo "Keep what you need, then: make clean FORCE=1" >&2; exit 1; fi
	rm -rf build .pytest_cache
