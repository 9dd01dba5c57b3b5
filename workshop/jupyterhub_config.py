"""JupyterHub for a workshop of the course on one shared GPU server.

Start it with the course's venv, from the folder that should hold the hub's state:

    GPULAB_HUB_PASSWORD=... .venv/bin/jupyterhub -f workshop/jupyterhub_config.py

Every setting comes from an environment variable, so that the same file serves a real server
(`workshop/install_server.sh` writes them into /etc/gpulab-hub/hub.env for systemd) and the test
`tests/workshop/test_jupyterhub.py`, which starts this very file on 127.0.0.1.

| variable | default | what it sets |
|---|---|---|
| GPULAB_HUB_IP | 127.0.0.1 | address the public proxy listens on (0.0.0.0: every interface) |
| GPULAB_HUB_PORT | 8000 | public port of the proxy |
| GPULAB_HUB_INTERNAL_PORT | 8081 | port of the hub itself, on 127.0.0.1 |
| GPULAB_HUB_PROXY_API_PORT | 8001 | port of the proxy's REST API, on 127.0.0.1 |
| GPULAB_HUB_STATE_DIR | current folder | database, cookie secret, pid files, simple-spawner homes |
| GPULAB_HUB_SSL_CERT, _KEY | unset | serve https with this certificate and key |
| GPULAB_HUB_AUTHENTICATOR | shared-password | or any JupyterHub authenticator (pam, github...) |
| GPULAB_HUB_PASSWORD | (required) | the attendees' shared password (8 characters or more) |
| GPULAB_HUB_USERS | unset | comma-separated attendee names; unset: any name may log in |
| GPULAB_HUB_ADMINS | unset | comma-separated instructor names |
| GPULAB_HUB_ADMIN_PASSWORD | unset | the instructors' password (32 characters or more) |
| GPULAB_HUB_API_TOKEN | unset | token of the `workshop-admin` service, for scripts |
| GPULAB_HUB_SPAWNER | systemd | systemd or simple (see below) |
| GPULAB_HUB_ALLOW_ROOT | 0 | 1 lets the simple spawner run servers as root (in a test container) |
| GPULAB_HUB_MEM_LIMIT | unset | RAM per attendee, e.g. 16G (enforced by the systemd spawner only) |
| GPULAB_HUB_CPU_LIMIT | unset | CPU cores per attendee, e.g. 4 (systemd spawner only) |
| GPULAB_HUB_GPUS | unset | comma-separated GPU indices or MIG UUIDs to assign; unset: all see all |
| GPULAB_HUB_USERS_PER_GPU | 1 | attendees that time-share one entry of GPULAB_HUB_GPUS |
| GPULAB_HUB_WHEN_FULL | cpu | no GPU left: cpu (start on the CPU) or refuse (fail the start) |
| GPULAB_HUB_CULL_IDLE_S | unset | stop servers idle this many seconds (frees their GPU) |
| GPULAB_HUB_SHARE_SOLUTIONS | 0 | 1 copies the lab solutions into each attendee's folder |
| GPULAB_COURSE_DIR | this file's repo | the course checkout whose notebooks attendees get |

The systemd spawner runs each attendee's server as an isolated system user, with memory limits;
the simple one runs every server as the hub's own user (tests, a demo).
"""

import os
import sys
from pathlib import Path

from gpulab.core.errors import GpulabConfigError

c = get_config()  # noqa: F821  (traitlets provides get_config to config files)


def _env(name, default=""):
    """The variable's value without surrounding spaces, or the default."""
    return os.environ.get(name, default).strip()


def _env_int(name, default, low=1):
    """An integer variable no smaller than ``low``; GpulabConfigError names it otherwise."""
    raw = _env(name, str(default))
    try:
        value = int(raw)
    except ValueError:
        value = None
    if value is None or value < low:
        raise GpulabConfigError(f"{name}={raw!r} must be an integer >= {low}")
    return value


def _env_float(name):
    """A positive number from a variable; GpulabConfigError names it otherwise."""
    raw = _env(name)
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise GpulabConfigError(f"{name}={raw!r} must be a positive number")
    return value


def _env_choice(name, default, allowed):
    """A variable that must be one of ``allowed``."""
    value = _env(name, default)
    if value not in allowed:
        raise GpulabConfigError(f"{name}={value!r} must be one of {', '.join(allowed)}")
    return value


def _env_list(name):
    """A comma-separated variable as a list of non-empty names."""
    return [item.strip() for item in _env(name).split(",") if item.strip()]


# --------------------------------------------------------------------------- where things are

# The config lives in <course>/workshop/, so the course is one folder up unless told otherwise.
COURSE_DIR = Path(_env("GPULAB_COURSE_DIR") or Path(__file__).resolve().parents[1])
# The hub runs from the course's venv; single-user servers and kernels use the same one.
VENV_BIN = Path(sys.executable).parent
STATE_DIR = Path(_env("GPULAB_HUB_STATE_DIR") or os.getcwd()).resolve()
STATE_DIR.mkdir(parents=True, exist_ok=True)

c.JupyterHub.db_url = f"sqlite:///{STATE_DIR / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE_DIR / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(STATE_DIR / "jupyterhub.pid")
c.ConfigurableHTTPProxy.pid_file = str(STATE_DIR / "jupyterhub-proxy.pid")
# Stopping the hub stops every attendee's server (and so frees the GPUs handed out below,
# whose bookkeeping lives in this process only).
c.JupyterHub.cleanup_servers = True

# --------------------------------------------------------------------------- network

IP = _env("GPULAB_HUB_IP", "127.0.0.1")
PORT = _env_int("GPULAB_HUB_PORT", 8000)
SSL_CERT, SSL_KEY = _env("GPULAB_HUB_SSL_CERT"), _env("GPULAB_HUB_SSL_KEY")
if bool(SSL_CERT) != bool(SSL_KEY):
    raise GpulabConfigError("GPULAB_HUB_SSL_CERT and GPULAB_HUB_SSL_KEY must be set together")
if SSL_CERT:
    c.JupyterHub.ssl_cert, c.JupyterHub.ssl_key = SSL_CERT, SSL_KEY
c.JupyterHub.bind_url = f"{'https' if SSL_CERT else 'http'}://{IP}:{PORT}/"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = _env_int("GPULAB_HUB_INTERNAL_PORT", 8081)
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{_env_int('GPULAB_HUB_PROXY_API_PORT', 8001)}"
# The proxy comes from npm (`npm ci` in the course folder); a global install also works.
_PROXY = COURSE_DIR / "node_modules" / ".bin" / "configurable-http-proxy"
c.ConfigurableHTTPProxy.command = [str(_PROXY) if _PROXY.exists() else "configurable-http-proxy"]

# --------------------------------------------------------------------------- who may log in

AUTHENTICATOR = _env("GPULAB_HUB_AUTHENTICATOR", "shared-password")
c.JupyterHub.authenticator_class = AUTHENTICATOR
c.Authenticator.admin_users = set(_env_list("GPULAB_HUB_ADMINS"))
if _env_list("GPULAB_HUB_USERS"):
    c.Authenticator.allowed_users = set(_env_list("GPULAB_HUB_USERS"))
else:
    c.Authenticator.allow_all = True  # a room of people choosing their own names
if AUTHENTICATOR == "shared-password":
    PASSWORD = _env("GPULAB_HUB_PASSWORD")
    if len(PASSWORD) < 8:
        raise GpulabConfigError(
            "GPULAB_HUB_PASSWORD must be set to the attendees' shared password, "
            "8 characters or more"
        )
    c.SharedPasswordAuthenticator.user_password = PASSWORD
    if _env("GPULAB_HUB_ADMIN_PASSWORD"):
        c.SharedPasswordAuthenticator.admin_password = _env("GPULAB_HUB_ADMIN_PASSWORD")

# A token for the instructor's scripts: create attendees, start their servers before the
# session, stop them after (book/workshop/jupyterhub.md shows the calls).
SERVICES, ROLES = [], []
if _env("GPULAB_HUB_API_TOKEN"):
    SERVICES.append({"name": "workshop-admin", "api_token": _env("GPULAB_HUB_API_TOKEN")})
    ROLES.append(
        {
            "name": "workshop-admin",
            "scopes": ["admin:users", "admin:servers", "access:servers", "tokens"],
            "services": ["workshop-admin"],
        }
    )
if _env("GPULAB_HUB_CULL_IDLE_S"):
    # jupyterhub-idle-culler (the workshop extra) stops servers nobody used for this long.
    SERVICES.append(
        {
            "name": "idle-culler",
            "command": [
                sys.executable,
                "-m",
                "jupyterhub_idle_culler",
                f"--timeout={_env_int('GPULAB_HUB_CULL_IDLE_S', 3600, low=60)}",
            ],
        }
    )
    ROLES.append(
        {
            "name": "idle-culler",
            "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
            "services": ["idle-culler"],
        }
    )
c.JupyterHub.services = SERVICES
c.JupyterHub.load_roles = ROLES

# --------------------------------------------------------------------------- attendees' servers

SPAWNER = _env_choice("GPULAB_HUB_SPAWNER", "systemd", ("systemd", "simple"))
if SPAWNER == "systemd":
    c.JupyterHub.spawner_class = "systemdspawner.SystemdSpawner"
    # One throw-away system user per attendee (no accounts to create), home /var/lib/<name>.
    c.SystemdSpawner.dynamic_users = True
    c.SystemdSpawner.isolate_tmp = True
    # PrivateDevices would hide /dev/nvidia*, and with it every GPU.
    c.SystemdSpawner.isolate_devices = False
    c.SystemdSpawner.disable_user_sudo = True
else:
    # Every server runs as the hub's own user, in its own folder: no isolation between
    # attendees and no limits (JupyterHub's docs: for testing only). The test uses it.
    c.JupyterHub.spawner_class = "simple"
    c.SimpleLocalProcessSpawner.home_dir_template = str(STATE_DIR / "users" / "{username}")
    if os.geteuid() == 0:
        if _env("GPULAB_HUB_ALLOW_ROOT") != "1":
            raise GpulabConfigError(
                "GPULAB_HUB_SPAWNER='simple' would run every attendee's server as root; "
                "use GPULAB_HUB_SPAWNER='systemd', run the hub as another user, or set "
                "GPULAB_HUB_ALLOW_ROOT=1 in a throw-away container"
            )
        c.Spawner.args = ["--allow-root"]

# The wrapper copies the course's notebooks into the attendee's home once, then starts
# jupyterhub-singleuser from the same venv.
c.Spawner.cmd = [sys.executable, str(COURSE_DIR / "workshop" / "singleuser.py")]
c.Spawner.environment = {
    # Both course kernels (gpulab, gpulab-cpu) are found here; their argv starts with
    # `python`, so the venv's bin comes first on PATH.
    "JUPYTER_PATH": str(COURSE_DIR / "jupyter"),
    "PATH": f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin",
    "GPULAB_COURSE_DIR": str(COURSE_DIR),
    "GPULAB_HUB_SHARE_SOLUTIONS": _env("GPULAB_HUB_SHARE_SOLUTIONS", "0"),
}
c.Spawner.default_url = "/lab/tree/gpulab-course/notebooks/00_check_your_setup.ipynb"
if _env("GPULAB_HUB_MEM_LIMIT"):
    c.Spawner.mem_limit = _env("GPULAB_HUB_MEM_LIMIT")
if _env("GPULAB_HUB_CPU_LIMIT"):
    c.Spawner.cpu_limit = _env_float("GPULAB_HUB_CPU_LIMIT")
# A cold start imports torch on first use, not at spawn; 60 s covers a busy machine.
c.Spawner.start_timeout = 60
c.Spawner.http_timeout = 60

# --------------------------------------------------------------------------- handing out GPUs


class GpuSlots:
    """Which GPU (or MIG instance) an attendee's server sees: least loaded first, kept per user."""

    def __init__(self, devices, users_per_device):
        self.devices = list(devices)  # CUDA_VISIBLE_DEVICES values: "0", "1" or "MIG-<uuid>"
        self.users_per_device = users_per_device  # >1 time-slices a device among servers
        # user name -> device, while that user's server runs; a user asking again (a failed
        # start, a restart) gets the same device back, so a lost release cannot pile up.
        self.taken = {}

    def acquire(self, user):
        """The device for ``user`` (the same again if it holds one), or None when all are full."""
        if user in self.taken:
            return self.taken[user]
        load = {d: 0 for d in self.devices}
        for device in self.taken.values():
            load[device] += 1
        free = [d for d in self.devices if load[d] < self.users_per_device]
        if not free:
            return None
        device = min(free, key=lambda d: load[d])  # spread first, share when all are in use
        self.taken[user] = device
        return device

    def release(self, user):
        """Give ``user``'s device back (their server stopped)."""
        self.taken.pop(user, None)


GPU_SLOTS = GpuSlots(_env_list("GPULAB_HUB_GPUS"), _env_int("GPULAB_HUB_USERS_PER_GPU", 1))
WHEN_FULL = _env_choice("GPULAB_HUB_WHEN_FULL", "cpu", ("cpu", "refuse"))


def pre_spawn_hook(spawner):
    """Pin the attendee's server to one GPU slot (or to the CPU when none is left)."""
    if not GPU_SLOTS.devices:
        return  # every server sees every GPU: the driver time-slices them
    device = GPU_SLOTS.acquire(spawner.user.name)
    if device is None:
        if WHEN_FULL == "refuse":
            raise RuntimeError(
                f"All {len(GPU_SLOTS.devices)} GPU slots are in use "
                f"({GPU_SLOTS.users_per_device} attendee(s) each); ask the instructor."
            )
        spawner.log.warning("No GPU left for %s: the server starts on the CPU", spawner.user.name)
        device = ""  # hides every GPU; the course runs on the CPU
    # A new dict: the configured one is shared by every spawner.
    spawner.environment = {**spawner.environment, "CUDA_VISIBLE_DEVICES": device}


def post_stop_hook(spawner):
    """Free the attendee's GPU slot when their server stops."""
    GPU_SLOTS.release(spawner.user.name)


c.Spawner.pre_spawn_hook = pre_spawn_hook
c.Spawner.post_stop_hook = post_stop_hook
