# Any Jupyter server that serves nbgrader's formgrader for this course: put this folder on its
# JUPYTER_CONFIG_PATH (`make formgrader` does; so can a JupyterHub service's formgrader, with the course
# package installed in its environment). It loads autograder.formgrader.guard, which answers formgrader's
# Autograde, Generate Feedback and Release Feedback routes with a message (use `make grade` and
# `make return-feedback`) and runs nothing: nbgrader's own autograde would run student notebooks outside
# the sandbox, as the formgrader's user, and overwrite the sandboxed grader's scores in the gradebook.
# nbgrader_config.py next to this file makes formgrader's Collect take hand-ins through autograder/intake/inbound.py.
c = get_config()  # noqa: F821

c.ServerApp.jpserver_extensions.update({"autograder.formgrader.guard": True})

# No search for language servers (the course installs none): jupyter_lsp's list of about 20 skipped ones
# would come before the URL that `make lab` prints last.
c.LanguageServerManager.autodetect = False
