# JupyterLab for students: `make lab` (on the student's workspace, work/) puts this folder
# (and nbgrader/) on JUPYTER_CONFIG_PATH and data/ on JUPYTER_PATH. Nothing here is written at run time.
#   jupyter_server_config.py   this file: server extensions, offline, kernel, port
#   labconfig/page_config.json                 hides nbgrader's instructor plugins in the UI
#   labconfig/default_setting_overrides.json   no news / update notifications
#   nbgrader_config.py         students only: student id (JUPYTERHUB_USER) and submission cache (workspace)
#   nbgrader/nbgrader_config.py                course id and the exchange (also used by the instructor targets)
#   formgrader/jupyter_server_config.py        `make formgrader` only: loads autograder.formgrader.guard (Autograde,
#                                              Generate/Release Feedback answer "use make grade"; nothing runs)
#   data/kernels/python3/      the notebooks' kernel: the Python that runs the server (the course venv); it loads
#                              namedaxes.kernel_start (a cell run out of order says what to run first)
#   zh/labconfig/default_setting_overrides.json   `make lab EDITION=zh` only: JupyterLab in Chinese (language pack)
# nbgrader's student extensions (Validate button, Assignment List) stay on; the
# instructor-only ones (formgrader, course list) are off: instructors use
# `make formgrader`, which serves the nbgrader course folder without this file.
c = get_config()  # noqa: F821

c.ServerApp.jpserver_extensions.update(
    {
        "nbgrader.server_extensions.formgrader": False,
        "nbgrader.server_extensions.course_list": False,
        "nbgrader.server_extensions.validate_assignment": True,
        "nbgrader.server_extensions.assignment_list": True,
    }
)

# Offline after setup: no news feed, no update check.
c.LabApp.news_url = None
c.LabApp.check_for_updates_class = "jupyterlab.NeverCheckForUpdate"
c.LabApp.extension_manager = "readonly"  # no PyPI queries from the Extension Manager

# The notebooks' kernelspec is `python3`: the course venv's own Python (see data/kernels).
c.MappingKernelManager.default_kernel_name = "python3"
c.ServerApp.port_retries = 0  # a busy port is an error, never a silent move to another URL
# Containers and Colab-like machines run as root; the server only listens on localhost.
c.ServerApp.allow_root = True
c.ServerApp.ip = "localhost"

# No search for language servers (the course installs none): jupyter_lsp's list of about 20 skipped ones
# would come before the URL that `make lab` prints last.
c.LanguageServerManager.autodetect = False
