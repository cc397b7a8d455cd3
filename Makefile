## JAX named axes course. Start here: README.md; then docs/students.md, docs/instructors.md, docs/maintainers.md,
## docs/translators.md. Two commands matter: `make lab` (students) and `make test` (CI); every target installs what
## it needs itself. EDITION=zh: the Chinese edition (lab, update-work, formgrader, roster, release, collect, grade,
## return-feedback, export); HUB=1: the class on this machine's JupyterHub (make hub).
#
# One command per target: the Python it runs resolves what the variables given mean (courseinfo/course.py:
# course ids, editions, folders; hub/deployment.py: the hub's). `make help` prints the `##` comments.

# Supported: Python 3.11 (jax 0.10.2, its newest release) to 3.13 (jax 0.12.x), one full lock each in
# requirements/pyXY.txt, made by `make lock` from the direct pins in requirements.txt. Interpreters are looked for
# on PATH and under pyenv (tools/find_python.sh). .venv, used by lab, grading and the whole test suite, is built
# with PYTHON: Python 3.11 when found (the line every recorded score and observation in tests/ was measured on),
# else the newest supported Python found. `make test` also runs every notebook on the newest JAX in .venv-newest,
# built with NEWEST_PYTHON: the newest supported Python >= 3.12 found. Set either to a path to override.
PYTHON        ?= $(eval PYTHON := $$(shell tools/find_python.sh --prefer 3.11))$(PYTHON)
NEWEST_PYTHON ?= $(eval NEWEST_PYTHON := $$(shell tools/find_python.sh --min 3.12))$(NEWEST_PYTHON)
VENV        := .venv
BIN         := $(VENV)/bin
VENV_NEWEST := .venv-newest
VENV_SITE   := .venv-site
JOBS        ?= $(shell nproc 2>/dev/null || echo 2)
# The notebooks set up 8 devices themselves (namedaxes.setup_devices); this covers anything else.
export XLA_FLAGS := $(strip $(XLA_FLAGS) --xla_force_host_platform_device_count=8)
export PYTHONDONTWRITEBYTECODE := 1

# The variables given (on the command line or in the environment) as the options of the Python a target runs:
# $(call opts,STUDENT LAB_DIR) is --student="alice" --lab-dir="..." for those that are set; $(call flags,YES) --yes.
lc    = $(subst _,-,$(subst A,a,$(subst B,b,$(subst C,c,$(subst D,d,$(subst E,e,$(subst F,f,$(subst G,g,$(subst H,h,$(subst I,i,$(subst J,j,$(subst K,k,$(subst L,l,$(subst M,m,$(subst N,n,$(subst O,o,$(subst P,p,$(subst Q,q,$(subst R,r,$(subst S,s,$(subst T,t,$(subst U,u,$(subst V,v,$(subst W,w,$(subst X,x,$(subst Y,y,$(subst Z,z,$(1))))))))))))))))))))))))))))
opts  = $(foreach v,$(1),$(if $($(v)),--$(call lc,$(v))="$($(v))"))
flags = $(foreach v,$(1),$(if $($(v)),--$(call lc,$(v))))
NBVAL := --nbval --nbval-current-env --nbval-cell-timeout=120
# Targets made side by side print their output whole, each when it is done (GNU make 4's --output-sync).
SYNC := $(if $(filter output-sync,$(.FEATURES)),--output-sync=target)
# The system packages (tools/system_deps.py, its table NEEDS): run before any venv exists.
SYSTEM_DEPS = $(or $(PYTHON),python3) -m tools.system_deps $(call flags,DRY_RUN)
# The formgrader's jupyter config path, one for `make formgrader` and the hub's formgrader services
# (hub/jupyterhub_config.py puts hub/formgrader/ before it): where its unsafe buttons are disabled.
FORMGRADER_CONFIG_PATH ?= $(CURDIR)/jupyter/formgrader:$(CURDIR)/jupyter/nbgrader
# The hub's deployment (hub/deployment.py, Deployment.from_env; its defaults: hub-data/, port 8000, 127.0.0.1).
HUB_ENV = env FORMGRADER_CONFIG_PATH="$(FORMGRADER_CONFIG_PATH)" $(if $(PORT),NAMEDAXES_HUB_PORT="$(PORT)") \
  $(foreach v,HUB_DIR HUB_IP HUB_GROUP HUB_INSTRUCTOR HUB_VENV,$(if $($(v)),NAMEDAXES_$(v)="$($(v))"))
# nbgrader's hand-in loop on the local course (tools/handin.py), or with HUB=1 the hub's, as its grader (hub/instructor.py).
HANDIN = $(if $(HUB),$(HUB_ENV) $(BIN)/python -m hub.instructor,$(BIN)/python -m tools.handin $(call opts,COURSE EXCHANGE)) \
  $(call opts,EDITION)

.PHONY: help venv venv-newest lock fonts system-deps browser-deps lab update-work formgrader roster release collect
.PHONY: return-feedback grade export site site-venv site-lock notebooks check-notebooks catalogs check-catalogs
.PHONY: lint format test test-newest test-fast bench bench-grade hub-deps hub-test-deps test-deps hub hub-stop
.PHONY: hub-clean bench-hub clean

help: ## this list (each target's own `##` comment)
	@awk -F ':.*## ' '/^## /{print substr($$0, 4)} /^[a-z-]+:.*## /{printf "make %-16s %s\n", $$1, $$2}' Makefile

venv: ## the course's venv .venv/ from its lock, once (later runs return at once; PYTHON=/path/to/python3.X)
	@tools/find_python.sh --check PYTHON "$(PYTHON)" && $(PYTHON) -m tools.install_venv $(VENV)

venv-newest: ## .venv-newest/: the newest JAX line, for make test-newest (NEWEST_PYTHON=/path/to/python3.X)
	@tools/find_python.sh --check NEWEST_PYTHON "$(NEWEST_PYTHON)" && $(NEWEST_PYTHON) -m tools.install_venv $(VENV_NEWEST)

lock: venv ## re-resolve requirements/pyXY.txt and colab.txt from requirements.txt (maintainers; every Python)
	$(BIN)/python -m tools.lock_requirements

fonts: ## a CJK font for the Chinese edition's figures, from Debian when missing (DRY_RUN=1: only say)
	@$(SYSTEM_DEPS) fonts

system-deps: ## the grading sandbox's bubblewrap and libseccomp2, and the CJK font (DRY_RUN=1: only say)
	@$(SYSTEM_DEPS) fonts grading

browser-deps: ## Debian's Chromium and axe-core for the browser tests (tests/browser)
	@$(SYSTEM_DEPS) browser

lab: venv fonts ## JupyterLab on your own copy of the notebooks, work/ (STUDENT=id, LAB_DIR, EXCHANGE, PORT, LAB_TOKEN, LAB_ARGS)
	@$(BIN)/python -m tools.lab lab $(call opts,EDITION STUDENT LAB_DIR EXCHANGE PORT LAB_TOKEN LAB_ARGS)

update-work: venv ## merge a newer release of the notebooks into work/, keeping your answers (STUDENT=id, YES=1)
	@$(BIN)/python -m tools.lab update-work $(call opts,STUDENT LAB_DIR EXCHANGE RELEASE RELEASE_ZH) $(call flags,YES)

formgrader: venv ## nbgrader's formgrader on the course (built by make notebooks) for manual review (instructors; COURSE=dir)
	@env JUPYTER_CONFIG_PATH="$(FORMGRADER_CONFIG_PATH)" $(BIN)/python -m tools.lab formgrader \
	  $(call opts,EDITION COURSE EXCHANGE PORT LAB_TOKEN LAB_ARGS) $(call flags,HUB)

roster: venv ## students into the gradebook: ROSTER=students.csv (id,first_name,last_name,email); HUB=1: make hub
	@$(if $(and $(HUB),$(ROSTER)),$(MAKE) --no-print-directory hub,$(HANDIN) roster "$(ROSTER)")

release: venv ## the assignments to the exchange (ASSIGNMENT=id; refuses when notebooks/ is stale)
	@$(HANDIN) release $(ASSIGNMENT)

# collect and return-feedback (which collects first) take only what autograder/intake/inbound.py accepts: regular
# files owned by the student's Unix user (STUDENT_USER=FORMAT, default {student}; CLASS_USER=name: on one machine
# the OS user every `make lab STUDENT=...` runs as), at most MAX_FILES files and MAX_BYTES bytes per hand-in.
collect: venv ## the students' hand-ins into the course (refuses links, oversized and misowned hand-ins)
	@$(HANDIN) collect $(call opts,STUDENT_USER CLASS_USER MAX_FILES MAX_BYTES) $(ASSIGNMENT)

return-feedback: venv ## collect, then the feedback pages back to the students through the exchange
	@$(HANDIN) return-feedback $(call opts,STUDENT_USER CLASS_USER MAX_FILES MAX_BYTES) $(ASSIGNMENT)

grade: venv system-deps ## autograde a class: SUBMISSIONS=dir OUT=dir [STUDENT=id] [ASSIGNMENT=id] [COURSE_GRADEBOOK=1] [CELL_TIMEOUT=s] [TIMEOUT_MULTIPLE=m]
	@$(HANDIN) grade -j $(JOBS) $(call opts,SUBMISSIONS OUT STUDENT ASSIGNMENT CELL_TIMEOUT TIMEOUT_MULTIPLE) $(call flags,COURSE_GRADEBOOK)

export: venv ## the graded class as the file the LMS imports: LMS=canvas|moodle|csv -> OUT/lms-LMS.csv
	@$(HANDIN) export $(call opts,LMS OUT)

# The website (website/build_site.py): executions cached in build/site-cache/, rendered by Sphinx from the site's
# own venv .venv-site (website/requirements.txt). Colab links: website/settings.py or NAMEDAXES_SITE_REPOSITORY.
site: venv site-venv fonts ## the course as a static website in build/site/ (both editions; GitHub Pages ready)
	@$(BIN)/python -m website.build_site --sphinx $(VENV_SITE)/bin/python -j $(JOBS)

site-venv: ## the website's own venv .venv-site/ (Sphinx, myst-nb, sphinx-book-theme), once
	@tools/find_python.sh --check PYTHON "$(PYTHON)" && $(PYTHON) -m website.install_site_venv $(VENV_SITE)

site-lock: site-venv ## re-resolve website/requirements.txt from website/requirements.in (maintainers)
	$(VENV_SITE)/bin/python -m website.lock_site_requirements

notebooks: venv ## regenerate notebooks/, the Chinese editions and the visible checks' tables from solutions/
	$(BIN)/python -m tools.generate_notebooks && $(BIN)/python -m tools.answer_tables

check-notebooks: venv ## fail when notebooks/, the editions, the catalogs or the tables are not what solutions/ generates
	$(BIN)/python -m tools.translate check --sync && $(BIN)/python -m tools.generate_notebooks --check \
	  && $(BIN)/python -m tools.answer_tables --check

catalogs: venv ## merge English changes into locale/zh/*.po and compile them (translators: docs/translators.md)
	$(BIN)/python -m tools.translate update && $(BIN)/python -m tools.translate compile

check-catalogs: venv ## fail unless every catalog is complete: lists what is missing or fuzzy
	$(BIN)/python -m tools.translate check && $(BIN)/python -m tools.nbgrader_zh check

lint: venv ## ruff check and ruff format --check (pyproject.toml's [tool.ruff]); make test runs it first
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

format: venv ## ruff's safe fixes (imports sorted, ...) and ruff format, in place (maintainers)
	$(BIN)/ruff check --fix-only . && $(BIN)/ruff format .

# Each notebook's code runs once per JAX line. On .venv: the solved notebooks of both editions (tests/notebooks/
# test_solved_notebooks.py, the website's cached executions) and the English student notebooks under nbval. On the
# newest line (test-newest): the English solved notebooks and the other editions' student notebooks. An edition has
# the English code cell for cell (tests/namedaxes/test_i18n.py) and only its words differ, which no JAX release
# changes: so every code runs on both lines, and every notebook of every edition at least once.
test: ## what CI runs: its set-up side by side (venvs, system packages, lint, drift), all tests on .venv, test-newest
	@echo "make test: the set-up side by side (venvs, system packages, lint, drift checks), each output whole when done"
	@$(MAKE) --no-print-directory -j4 $(SYNC) lint check-notebooks site-venv test-deps $(if $(NEWEST_PYTHON),venv-newest)
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile $(NBVAL) tests $(wildcard notebooks/*.ipynb); status=$$?; \
	  $(MAKE) --no-print-directory test-newest || status=1; exit $$status

test-newest: ## the notebooks (above) and the tests marked `newest` on the newest JAX line (.venv-newest)
	@$(if $(NEWEST_PYTHON),$(NEWEST_RUN),echo "NOTE: no Python >= 3.12 found (on PATH or under pyenv): the notebooks \
	  were NOT run on the newest JAX. Install Python 3.12 or 3.13, or set NEWEST_PYTHON=/path/to/python3.X.")
NEWEST_RUN = $(MAKE) --no-print-directory venv-newest && $(VENV_NEWEST)/bin/python -c 'import sys, jax; \
  print(f"Notebooks on the newest JAX: jax {jax.__version__}, Python {sys.version.split()[0]}")' && \
  IPYTHONDIR=$(CURDIR)/tests/notebooks/ipython $(VENV_NEWEST)/bin/python -m pytest -q -n $(JOBS) --dist loadfile \
  $(NBVAL) -m newest tests $(wildcard solutions/*.ipynb notebooks/*/*.ipynb)

test-fast: venv ## the unit tests only (marker `unit`), in parallel: 1.5-2 min on 2 busy cores, less idle (make bench)
	$(BIN)/python -m pytest -q -n $(JOBS) -m unit tests

bench: venv ## time Run-All of every notebook and of the whole suite, make test-fast and make release's notebook check
	$(BIN)/python -m tools.bench_notebooks && $(BIN)/python -m tools.bench_checks && $(BIN)/python -m tools.bench_report \
	  && $(BIN)/python -m tools.bench_make

bench-grade: venv system-deps ## time make grade against plain nbgrader autograde on a generated class (STUDENTS=n)
	$(BIN)/python -m autograder.bench $(call opts,STUDENTS)

# A class on JupyterHub (hub/, docs/instructors-jupyterhub.md), as root: creates the course's Unix accounts (group
# namedaxes; ROSTER=students.csv: one per student), lays out HUB_DIR (default hub-data/) and starts JupyterHub on
# PORT (default 8000; HUB_IP=0.0.0.0 serves other machines: put TLS in front). Then the instructor's commands act
# on it with HUB=1: release/collect/return-feedback as the course's grader account, grade as root (the course given
# back to its grader after). HUB_VENV (default .venv): what the hub, the students' servers and the graders run.
hub-deps: ## root, and Debian's nodejs and npm (the hub's proxy): installed when missing
	@$(SYSTEM_DEPS) hub

hub-test-deps: ## as root, what the hub tests need (tests/hub); otherwise a note (they skip and say why)
	@$(SYSTEM_DEPS) hub-test

test-deps: ## what make test needs of the system (system-deps, browser-deps, hub-test-deps), in one apt-get call
	@$(SYSTEM_DEPS) fonts grading browser hub-test

hub: venv hub-deps ## a real JupyterHub for a class on this machine (root): PORT=8000, ROSTER=students.csv
	@$(HUB_ENV) $(BIN)/python -m hub.server start $(call opts,ROSTER)

hub-stop: venv ## stop the hub (make hub starts it again, accounts and work kept)
	@$(HUB_ENV) $(BIN)/python -m hub.server stop

hub-clean: venv ## stop the hub and remove its accounts and HUB_DIR (students' work included)
	@$(HUB_ENV) $(BIN)/python -m hub.server clean

bench-hub: venv hub-deps ## STUDENTS=20 simulated students log in, start servers, fetch and submit at once (root)
	@$(HUB_ENV) $(BIN)/python -m hub.bench $(call opts,STUDENTS)

clean: ## delete build/ (refused while it holds hand-ins, collected submissions or grades, unless FORCE=1)
	@$(or $(PYTHON),python3) -m tools.clean $(call flags,FORCE)
