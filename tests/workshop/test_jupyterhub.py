"""The workshop's JupyterHub, for real: workshop/jupyterhub_config.py started on 127.0.0.1.

The end-to-end test starts JupyterHub and its proxy (configurable-http-proxy from npm) with the
shipped config, creates an attendee through the REST API, logs them in with the shared password,
starts their server, and checks that both course kernels and the copied notebooks are there.
The other tests load the same config file with traitlets and check what it sets.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpulab.core.errors import GpulabConfigError
from tests.helpers import missing, need_module

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "workshop" / "jupyterhub_config.py"
VENV_BIN = Path(sys.executable).parent
PROXY = ROOT / "node_modules" / ".bin" / "configurable-http-proxy"
PASSWORD = "workshop-" + secrets.token_hex(4)  # the attendees' shared password in the test
START_TIMEOUT_S = 40  # hub up, then server ready: each well under this on a 2-core machine


def _free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _hub_env(state: Path, **extra: str) -> dict[str, str]:
    """The environment the config reads: every GPULAB_HUB_* variable the test relies on."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPULAB_HUB_")}
    env.update(
        {
            "GPULAB_HUB_IP": "127.0.0.1",
            "GPULAB_HUB_PORT": str(_free_port()),
            "GPULAB_HUB_INTERNAL_PORT": str(_free_port()),
            "GPULAB_HUB_PROXY_API_PORT": str(_free_port()),
            "GPULAB_HUB_STATE_DIR": str(state),
            "GPULAB_HUB_SPAWNER": "simple",
            "GPULAB_HUB_PASSWORD": PASSWORD,
            "GPULAB_COURSE_DIR": str(ROOT),
            # The test may run as root (a container); the simple spawner then needs --allow-root.
            "GPULAB_HUB_ALLOW_ROOT": "1" if os.geteuid() == 0 else "0",
            "PATH": f"{VENV_BIN}:{PROXY.parent}:{os.environ.get('PATH', '')}",
        }
    )
    env.update(extra)
    return env


def _load_config(monkeypatch, tmp_path: Path, **extra: str):
    """The Config object the shipped file builds under these variables."""
    from traitlets.config.loader import PyFileConfigLoader

    for key in [k for k in os.environ if k.startswith("GPULAB_HUB_")]:
        monkeypatch.delenv(key)
    for key, value in _hub_env(tmp_path, **extra).items():
        monkeypatch.setenv(key, value)
    return PyFileConfigLoader(CONFIG.name, path=str(CONFIG.parent)).load_config()


def _fake_spawner(name: str):
    """Just what the GPU hooks use of a spawner: its user's name, environment and log."""
    import logging

    return SimpleNamespace(
        user=SimpleNamespace(name=name), environment={"A": "1"}, log=logging.getLogger("test")
    )


# --------------------------------------------------------------------------- the config, loaded


def test_config_serves_both_kernels_from_the_course(monkeypatch, tmp_path):
    """Servers get the course's jupyter/ folder, the venv first on PATH and the wrapper."""
    need_module("jupyterhub", "workshop")
    cfg = _load_config(monkeypatch, tmp_path)
    env = cfg.Spawner.environment
    assert env["JUPYTER_PATH"] == str(ROOT / "jupyter")
    assert env["PATH"].split(":")[0] == str(VENV_BIN)
    assert cfg.Spawner.cmd == [sys.executable, str(ROOT / "workshop" / "singleuser.py")]
    assert cfg.JupyterHub.authenticator_class == "shared-password"
    assert cfg.SharedPasswordAuthenticator.user_password == PASSWORD
    assert cfg.JupyterHub.db_url == f"sqlite:///{tmp_path / 'jupyterhub.sqlite'}"


def test_config_systemd_spawner_keeps_the_gpus_visible(monkeypatch, tmp_path):
    """The real-server spawner: dynamic users, /dev not private (GPUs), limits passed on."""
    spawner = need_module("systemdspawner", "workshop")
    cfg = _load_config(
        monkeypatch,
        tmp_path,
        GPULAB_HUB_SPAWNER="systemd",
        GPULAB_HUB_MEM_LIMIT="16G",
        GPULAB_HUB_CPU_LIMIT="4",
    )
    assert cfg.JupyterHub.spawner_class == "systemdspawner.SystemdSpawner"
    assert cfg.SystemdSpawner.dynamic_users is True
    assert cfg.SystemdSpawner.isolate_devices is False
    assert cfg.Spawner.mem_limit == "16G" and cfg.Spawner.cpu_limit == 4.0
    # Every option the config sets exists in the installed spawner (a typo would be ignored).
    traits = spawner.SystemdSpawner.class_trait_names(config=True)
    assert set(cfg.SystemdSpawner) <= set(traits)


@pytest.mark.parametrize(
    ("variable", "value", "named"),
    [
        ("GPULAB_HUB_PASSWORD", "short", "GPULAB_HUB_PASSWORD"),
        ("GPULAB_HUB_PORT", "eighty", "GPULAB_HUB_PORT"),
        ("GPULAB_HUB_SPAWNER", "docker", "GPULAB_HUB_SPAWNER"),
        ("GPULAB_HUB_USERS_PER_GPU", "0", "GPULAB_HUB_USERS_PER_GPU"),
        ("GPULAB_HUB_WHEN_FULL", "wait", "GPULAB_HUB_WHEN_FULL"),
        ("GPULAB_HUB_CPU_LIMIT", "-2", "GPULAB_HUB_CPU_LIMIT"),
        ("GPULAB_HUB_SSL_CERT", "/etc/cert.pem", "GPULAB_HUB_SSL_KEY"),
    ],
)
def test_config_rejects_bad_settings_by_name(monkeypatch, tmp_path, variable, value, named):
    """A bad variable stops the hub with a GpulabConfigError that names it."""
    need_module("jupyterhub", "workshop")
    with pytest.raises(GpulabConfigError, match=named):
        _load_config(monkeypatch, tmp_path, **{variable: value})


def test_config_refuses_root_servers_unless_allowed(monkeypatch, tmp_path):
    """As root, the simple spawner needs GPULAB_HUB_ALLOW_ROOT=1, and then passes --allow-root."""
    need_module("jupyterhub", "workshop")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    with pytest.raises(GpulabConfigError, match="GPULAB_HUB_ALLOW_ROOT"):
        _load_config(monkeypatch, tmp_path, GPULAB_HUB_ALLOW_ROOT="0")
    cfg = _load_config(monkeypatch, tmp_path, GPULAB_HUB_ALLOW_ROOT="1")
    assert cfg.Spawner.args == ["--allow-root"]


def test_gpu_slots_spread_then_share_then_fall_back_to_cpu(monkeypatch, tmp_path):
    """Two GPUs, two attendees each: spread first, share next, the fifth gets the CPU."""
    need_module("jupyterhub", "workshop")
    cfg = _load_config(
        monkeypatch, tmp_path, GPULAB_HUB_GPUS="0, MIG-abc", GPULAB_HUB_USERS_PER_GPU="2"
    )
    spawners = {n: _fake_spawner(n) for n in ("ann", "bo", "cy", "di", "ed")}
    for spawner in spawners.values():
        cfg.Spawner.pre_spawn_hook(spawner)
    seen = {n: s.environment["CUDA_VISIBLE_DEVICES"] for n, s in spawners.items()}
    assert seen == {"ann": "0", "bo": "MIG-abc", "cy": "0", "di": "MIG-abc", "ed": ""}
    assert spawners["ann"].environment["A"] == "1"  # the configured environment is kept
    cfg.Spawner.post_stop_hook(spawners["bo"])  # bo leaves: the next attendee gets bo's slice
    late = _fake_spawner("fay")
    cfg.Spawner.pre_spawn_hook(late)
    assert late.environment["CUDA_VISIBLE_DEVICES"] == "MIG-abc"


def test_gpu_slots_can_refuse_when_full(monkeypatch, tmp_path):
    """GPULAB_HUB_WHEN_FULL=refuse fails the start with a message instead of using the CPU."""
    need_module("jupyterhub", "workshop")
    cfg = _load_config(monkeypatch, tmp_path, GPULAB_HUB_GPUS="0", GPULAB_HUB_WHEN_FULL="refuse")
    cfg.Spawner.pre_spawn_hook(_fake_spawner("ann"))
    with pytest.raises(RuntimeError, match="GPU slots are in use"):
        cfg.Spawner.pre_spawn_hook(_fake_spawner("bo"))


def test_no_gpu_list_leaves_every_gpu_visible(monkeypatch, tmp_path):
    """Without GPULAB_HUB_GPUS the hook sets nothing: every server sees every GPU."""
    need_module("jupyterhub", "workshop")
    cfg = _load_config(monkeypatch, tmp_path)
    spawner = _fake_spawner("ann")
    cfg.Spawner.pre_spawn_hook(spawner)
    assert "CUDA_VISIBLE_DEVICES" not in spawner.environment


# --------------------------------------------------------------------------- the hub, running


def _wait_for(what: str, check, hub: subprocess.Popen, log: Path, timeout_s: float):
    """Poll ``check()`` until it returns a truthy value; fail with the hub's log otherwise."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if hub.poll() is not None:
            pytest.fail(
                f"JupyterHub exited ({hub.returncode}) while waiting for {what}:\n"
                f"{log.read_text()[-4000:]}"
            )
        result = check()
        if result:
            return result
        time.sleep(0.3)
    pytest.fail(f"timed out after {timeout_s} s waiting for {what}:\n{log.read_text()[-4000:]}")


def _server_pid(state: Path) -> int | None:
    """The single-user server's pid, from the spawner state the hub keeps in its database."""
    try:
        with sqlite3.connect(state / "jupyterhub.sqlite") as db:
            rows = db.execute("SELECT state FROM spawners").fetchall()
    except sqlite3.Error:
        return None
    pids = [json.loads(r[0]).get("pid") for r in rows if r[0]]
    return next((p for p in pids if p), None)


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie child counts as gone.
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "State:\tZ" in status.read_text())


def _kill(pid: int | None) -> None:
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)


def test_hub_spawns_a_server_with_both_course_kernels(tmp_path):
    """Log in through the REST API, start a server, find both kernels and the notebooks in it."""
    need_module("jupyterhub", "workshop")
    requests = need_module("requests", "workshop")  # JupyterHub's own dependency
    if not PROXY.exists():
        missing(str(PROXY.relative_to(ROOT)), "tool:npm", "run `npm ci` in the course folder")
    if shutil.which("node") is None:
        missing("node", "tool:node", "configurable-http-proxy needs Node.js on PATH")

    state = tmp_path / "hub"
    admin_token = secrets.token_hex(32)
    env = _hub_env(state, GPULAB_HUB_API_TOKEN=admin_token)
    base = f"http://127.0.0.1:{env['GPULAB_HUB_PORT']}"
    api = f"{base}/hub/api"
    admin = {"Authorization": f"token {admin_token}"}
    log = tmp_path / "hub.log"
    with log.open("w") as out:
        hub = subprocess.Popen(
            [str(VENV_BIN / "jupyterhub"), "-f", str(CONFIG)],
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server_pid = proxy_pid = None
    user = "attendee1"
    try:

        def hub_up():
            try:
                return requests.get(f"{api}/", timeout=2).status_code == 200
            except requests.ConnectionError:
                return False

        _wait_for("the hub's API", hub_up, hub, log, START_TIMEOUT_S)
        proxy_pid = int((state / "jupyterhub-proxy.pid").read_text())

        # The instructor's token creates the attendee; the attendee logs in with the password.
        r = requests.post(f"{api}/users/{user}", headers=admin, timeout=10)
        assert r.status_code == 201, r.text
        login = {"auth": {"username": user, "password": "not-the-password"}}
        assert (
            requests.post(f"{api}/users/{user}/tokens", json=login, timeout=10).status_code == 403
        )
        login["auth"]["password"] = PASSWORD
        r = requests.post(f"{api}/users/{user}/tokens", json=login, timeout=10)
        assert r.status_code == 201, r.text
        mine = {"Authorization": f"token {r.json()['token']}"}

        r = requests.post(f"{api}/users/{user}/server", headers=mine, timeout=30)
        assert r.status_code in (201, 202), r.text

        def ready():
            model = requests.get(f"{api}/users/{user}", headers=mine, timeout=5).json()
            return model.get("servers", {}).get("", {}).get("ready")

        _wait_for("the attendee's server", ready, hub, log, START_TIMEOUT_S)
        server_pid = _server_pid(state)

        # Through the proxy, as the attendee: both course kernels, the CPU one hiding the GPUs.
        r = requests.get(f"{base}/user/{user}/api/kernelspecs", headers=mine, timeout=10)
        assert r.status_code == 200, r.text
        specs = r.json()["kernelspecs"]
        assert {"gpulab", "gpulab-cpu"} <= set(specs), sorted(specs)
        assert specs["gpulab-cpu"]["spec"]["env"]["CUDA_VISIBLE_DEVICES"] == ""
        assert specs["gpulab"]["spec"]["argv"][0] == "python"

        # The wrapper copied every chapter notebook, set to open on the gpulab kernel.
        r = requests.get(
            f"{base}/user/{user}/api/contents/gpulab-course/notebooks", headers=mine, timeout=10
        )
        assert r.status_code == 200, r.text
        names = {item["name"] for item in r.json()["content"]}
        assert {p.name for p in (ROOT / "notebooks").glob("*.ipynb")} <= names
        first = sorted(names)[0]
        r = requests.get(
            f"{base}/user/{user}/api/contents/gpulab-course/notebooks/{first}",
            headers=mine,
            timeout=10,
        )
        assert r.json()["content"]["metadata"]["kernelspec"]["name"] == "gpulab"

        # Stopping through the API ends the server process.
        r = requests.delete(f"{api}/users/{user}/server", headers=mine, timeout=30)
        assert r.status_code in (202, 204), r.text
        _wait_for("the server to stop", lambda: not _alive(server_pid), hub, log, 20)
    finally:
        if hub.poll() is None:
            hub.send_signal(signal.SIGTERM)  # the hub stops servers and its proxy on the way out
            try:
                hub.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(hub.pid, signal.SIGKILL)
                hub.wait(timeout=10)
        _kill(server_pid)
        _kill(proxy_pid)
    assert not _alive(proxy_pid), "the proxy outlived the hub"
