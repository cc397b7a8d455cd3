"""JupyterHub's configuration for the course (`make hub` runs `jupyterhub -f hub/jupyterhub_config.py`).

Design (see hub/__init__.py for the whole picture)
- Everything comes from the deployment (hub/deployment.py, via NAMEDAXES_HUB_* in the environment)
  and its state/accounts.json (written by hub/accounts.py): who may log in, who is admin, the groups.
- Logins: PAMAuthenticator (the hub's default) against the accounts' own passwords; only the
  roster's students and the instructor are allowed (`allowed_users`), the instructor is admin.
- Servers: LocalProcessSpawner: `jupyterhub-singleuser` of the course venv, as the user's own
  Unix account, in their home, with the course's jupyter config (jupyter/ for JupyterLab's
  settings, the Validate button and the Assignment List; hub/singleuser/ for nbgrader in
  JupyterHub mode, and Markdown opened rendered: a new home's START-HERE.md, hub/accounts.py).
  The environment is built here, not inherited: PATH, the config paths,
  XLA_FLAGS and nbgrader's exchange, nothing of root's.
- nbgrader, as its docs describe for several courses: groups nbgrader-<course> (students and the
  instructor; the Assignment List's course list) and formgrade-<course> (the instructor), a
  role per group, the "server" role inheriting its owner's scopes (JupyterHubAuthPlugin asks the
  hub for the user's groups with the server's token), and one formgrader service per course,
  run by the hub as that course's grader account in the hub's course folder.
- The formgrader services read FORMGRADER_CONFIG_PATH (the same jupyter config path as
  `make formgrader`, from the Makefile): the one place where the formgrader's buttons are made
  safe (the sandboxed grader's hook) is shared by both.
- Loopback by default (HUB_IP): the proxy's public side, the hub's API and the proxy's API all
  bind 127.0.0.1; the proxy is the official configurable-http-proxy from hub/proxy/.

Threat model: the hub runs as root (it must: PAM and setuid spawns). Nothing it starts for a
user runs as root: LocalProcessSpawner switches to the user's uid and groups before exec, the
formgrader services run as their grader accounts. Root's environment is not passed on.
"""

import os
import socket
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from courseinfo.course import course_id
from hub.deployment import ROOT, Deployment
from tools import compile_cache

c = get_config()  # noqa: F821
dep = Deployment.from_env()
accounts = dep.accounts()
students = sorted(accounts.students)
instructor = dep.instructor


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- network: the proxy's public side on PORT; everything else on loopback, on free ports
c.JupyterHub.bind_url = f"http://{dep.ip}:{dep.port}"
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{_free_port()}"
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{_free_port()}"
c.ConfigurableHTTPProxy.command = [str(dep.proxy / "node_modules" / ".bin" / "configurable-http-proxy")]
c.ConfigurableHTTPProxy.should_start = True

# --- state: all in HUB_DIR/state (0700, root's)
c.JupyterHub.db_url = f"sqlite:///{dep.state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(dep.state / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(dep.pid_file)
c.JupyterHub.cleanup_servers = True  # stopping the hub stops every server it started
c.JupyterHub.cleanup_proxy = True

# --- who may log in
c.JupyterHub.authenticator_class = "pam"
c.PAMAuthenticator.open_sessions = False
c.Authenticator.allowed_users = set(students) | {instructor}
c.Authenticator.admin_users = {instructor}
c.Authenticator.allow_all = False
c.Authenticator.allow_existing_users = False
c.Authenticator.delete_invalid_users = True  # a student dropped from the roster loses the hub login

# --- each user's server: their Unix account, their home, the course venv and config
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [str(dep.venv / "bin" / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
SERVER_TIMEOUT = 180  # s: 20 servers starting at once on 2 cores
c.Spawner.start_timeout = SERVER_TIMEOUT
c.Spawner.http_timeout = SERVER_TIMEOUT
c.Spawner.env_keep = ["LANG", "LC_ALL"]
USER_CONFIG_PATH = os.pathsep.join(
    str(p) for p in (ROOT / "hub" / "singleuser", ROOT / "jupyter", ROOT / "jupyter" / "nbgrader")
)

# --- one server per edition: the default server is the English course's JupyterLab; the named server "zh"
# (/user/<name>/zh/) the Chinese course's, in Chinese: jupyter/zh selects JupyterLab's zh-CN language pack and
# HUB_DIR/jupyter-zh (hub/server.py, tools/nbgrader_zh.py) holds nbgrader's extension in Chinese. Both run as
# the student in the same home, so fetched assignments, hand-ins and feedback are the same files (nbgrader's
# multi-course exchange is unchanged); each server's Assignment List shows its own course only.
# After login the hub's home page (hub/templates/home.html) offers the two courses.
ZH_SERVER = "zh"
c.JupyterHub.allow_named_servers = True
c.JupyterHub.named_server_limit_per_user = 1
c.JupyterHub.redirect_to_server = False
c.JupyterHub.template_paths = [str(ROOT / "hub" / "templates")]


def _zh(spawner) -> bool:
    return spawner.name == ZH_SERVER


c.Spawner.environment = {
    "PATH": f"{dep.venv / 'bin'}:/usr/local/bin:/usr/bin:/bin",
    "JUPYTER_CONFIG_PATH": lambda spawner: (
        USER_CONFIG_PATH + (os.pathsep + str(ROOT / "jupyter" / "zh") if _zh(spawner) else "")
    ),
    "JUPYTER_PATH": lambda spawner: (
        (str(dep.nbgrader_zh) + os.pathsep if _zh(spawner) else "") + str(ROOT / "jupyter" / "data")
    ),
    "NAMEDAXES_COURSE_ID": lambda spawner: course_id("zh") if _zh(spawner) else course_id(),
    "NAMEDAXES_EXCHANGE": str(dep.exchange),
    "NAMEDAXES_WORK": lambda spawner: str(dep.home(spawner.user.name)),
    "XLA_FLAGS": os.environ.get("XLA_FLAGS", "--xla_force_host_platform_device_count=8"),
    "PYTHONDONTWRITEBYTECODE": "1",
}
# Each student's own JAX compilation cache, in their home (mode 0700, so no one else's kernels read or plant
# entries; JAX makes the folder as the student): a notebook run again compiles little. Never shared.
_CACHE = compile_cache.environment("{home}/.cache/namedaxes-jax", environ={})
c.Spawner.environment.update(
    {key: (lambda spawner, v=value: v.format(home=dep.home(spawner.user.name))) for key, value in _CACHE.items()}
)


def _home_is_ours(spawner):
    """Refuse to start a server for a hub user whose Unix account is not one of this deployment's, and a named
    server other than the Chinese course's."""
    import pwd

    name = spawner.user.name
    if spawner.name not in ("", ZH_SERVER):
        raise RuntimeError(f"the course has two servers per student: the English one and {ZH_SERVER!r} (Chinese)")
    entry = pwd.getpwnam(name)
    if name not in accounts.created or entry.pw_dir != str(dep.home(name)) or entry.pw_uid == 0:
        raise RuntimeError(f"{name} is not an account of this hub ({dep.hub_dir})")


c.Spawner.pre_spawn_hook = _home_is_ours

# --- nbgrader in JupyterHub mode: groups, roles, one formgrader service per course
groups, roles = (
    {},
    [
        # JupyterHubAuthPlugin (the Assignment List's course list) reads the user's groups with the server's token
        {"name": "server", "scopes": ["inherit"]},
    ],
)
services = []
FORMGRADER_CONFIG_PATH = os.environ.get("FORMGRADER_CONFIG_PATH") or os.pathsep.join(
    [str(ROOT / "jupyter" / "formgrader"), str(ROOT / "jupyter" / "nbgrader")]
)
for course, grader in dep.graders.items():
    groups[f"nbgrader-{course}"] = {"users": [*students, instructor]}
    groups[f"formgrade-{course}"] = {"users": [instructor]}
    roles.append(
        {
            "name": f"formgrade-{course}",
            "groups": [f"formgrade-{course}"],
            "scopes": [f"access:services!service={course}"],
        }
    )
    roles.append(
        {
            "name": f"nbgrader-{course}",
            "groups": [f"nbgrader-{course}"],
            "scopes": ["list:services", f"read:services!service={course}"],
        }
    )
    services.append(
        {
            "name": course,
            "url": f"http://127.0.0.1:{_free_port()}",
            "command": [str(dep.venv / "bin" / "jupyterhub-singleuser")],
            "user": grader,
            "cwd": str(dep.course_dir(course)),
            "oauth_no_confirm": True,
            # JupyterHub 6 waits 30 s for a managed service, then exits: a formgrader (a Jupyter server) took 31 s
            # to answer at a load average of 20 on 2 cores. The same bound as a student's server.
            "timeout": SERVER_TIMEOUT,
            "environment": {
                "PATH": f"{dep.venv / 'bin'}:/usr/local/bin:/usr/bin:/bin",
                "HOME": str(dep.home(grader)),
                "JUPYTERHUB_DEFAULT_URL": "/formgrader",
                "JUPYTER_CONFIG_PATH": os.pathsep.join([str(ROOT / "hub" / "formgrader"), FORMGRADER_CONFIG_PATH]),
                "JUPYTER_PATH": str(ROOT / "jupyter" / "data"),
                "NAMEDAXES_EXCHANGE": str(dep.exchange),
                "NAMEDAXES_HUB_COURSE": course,
                "NAMEDAXES_HUB_COURSE_DIR": str(dep.course_dir(course)),
                "XLA_FLAGS": os.environ.get("XLA_FLAGS", "--xla_force_host_platform_device_count=8"),
                "PYTHONDONTWRITEBYTECODE": "1",
            },
        }
    )
c.JupyterHub.load_groups = groups
c.JupyterHub.load_roles = roles
c.JupyterHub.services = services
