# The formgrader services on the hub (hub/jupyterhub_config.py): nbgrader's formgrader and its
# instructor tools on; the students' extensions off. Offline, like the students' servers.
c = get_config()  # noqa: F821

c.ServerApp.jpserver_extensions.update(
    {
        "nbgrader.server_extensions.formgrader": True,
        "nbgrader.server_extensions.course_list": False,
        "nbgrader.server_extensions.validate_assignment": True,
        "nbgrader.server_extensions.assignment_list": False,
    }
)
c.LabApp.news_url = None
c.LabApp.check_for_updates_class = "jupyterlab.NeverCheckForUpdate"
c.LabApp.extension_manager = "readonly"
c.MappingKernelManager.default_kernel_name = "python3"
