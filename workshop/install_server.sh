#!/usr/bin/env bash
# Install the course's JupyterHub on a shared Linux GPU server (systemd; Ubuntu or Debian).
#
#   git clone <the course repository> /opt/gpulab-course
#   sudo /opt/gpulab-course/workshop/install_server.sh            # install and start
#   /opt/gpulab-course/workshop/install_server.sh --print-config  # show what it would write
#
# It installs the course from the checkout it lives in: a venv with the course package, the
# workshop extra (JupyterHub, its systemd spawner, the idle culler), JupyterLab and Triton;
# the proxy from npm; both kernels. It writes /etc/gpulab-hub/hub.env (the settings that
# workshop/jupyterhub_config.py reads, with a fresh password and token; an existing file is
# kept) and the systemd service gpulab-hub, then starts it on port 8000.
# The NVIDIA driver must already be installed (`nvidia-smi` works); no CUDA toolkit is needed.
set -euo pipefail

COURSE_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$COURSE_DIR/.venv"
ENV_DIR=/etc/gpulab-hub
ENV_FILE="$ENV_DIR/hub.env"
STATE_DIR=/srv/gpulab-hub
UNIT_FILE=/etc/systemd/system/gpulab-hub.service
NODE_MIN_MAJOR=20  # configurable-http-proxy 5 refuses older Node.js

unit_text() {
  cat <<EOF
[Unit]
Description=JupyterHub for the gpulab course workshop
After=network-online.target
Wants=network-online.target

[Service]
User=root
WorkingDirectory=$STATE_DIR
EnvironmentFile=$ENV_FILE
# The venv first (jupyterhub, python for the kernels), then the system, where node is.
Environment=PATH=$VENV/bin:/usr/local/bin:/usr/bin:/bin
ExecStart=$VENV/bin/jupyterhub -f $COURSE_DIR/workshop/jupyterhub_config.py
Restart=on-failure

[Install]
WantedBy=multi-user.target
EOF
}

env_text() {
  local password token
  password="$(python3 -c 'import secrets; print(secrets.token_urlsafe(9))')"
  token="$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
  cat <<EOF
# Settings of the course's JupyterHub; the table in workshop/jupyterhub_config.py explains each.
# After editing: sudo systemctl restart gpulab-hub (this stops every running server).
GPULAB_HUB_IP=0.0.0.0
GPULAB_HUB_PORT=8000
GPULAB_HUB_STATE_DIR=$STATE_DIR
# Put https in front: a certificate for this host's name (e.g. from Let's Encrypt).
#GPULAB_HUB_SSL_CERT=/etc/letsencrypt/live/HOST/fullchain.pem
#GPULAB_HUB_SSL_KEY=/etc/letsencrypt/live/HOST/privkey.pem
GPULAB_HUB_PASSWORD=$password
#GPULAB_HUB_USERS=ana,ben,chen
#GPULAB_HUB_ADMINS=instructor
#GPULAB_HUB_ADMIN_PASSWORD=at-least-32-characters-long-and-secret
GPULAB_HUB_API_TOKEN=$token
GPULAB_HUB_SPAWNER=systemd
GPULAB_HUB_MEM_LIMIT=16G
GPULAB_HUB_CPU_LIMIT=4
# One entry per GPU or MIG instance (nvidia-smi -L lists both); unset: everyone sees every GPU.
#GPULAB_HUB_GPUS=0,1,2,3
GPULAB_HUB_USERS_PER_GPU=1
GPULAB_HUB_WHEN_FULL=cpu
GPULAB_HUB_CULL_IDLE_S=3600
GPULAB_HUB_SHARE_SOLUTIONS=0
EOF
}

if [[ "${1:-}" == "--print-config" ]]; then
  echo "# $UNIT_FILE"
  unit_text
  echo "# $ENV_FILE"
  env_text
  exit 0
elif [[ -n "${1:-}" ]]; then
  echo "usage: $0 [--print-config]" >&2
  exit 2
fi

if [[ "$(id -u)" != 0 ]]; then
  echo "Run it as root (sudo $0): it installs packages and a systemd service." >&2
  exit 1
fi
if [[ "$(ps -p 1 -o comm=)" != systemd ]]; then
  echo "systemd is not running here: the hub's spawner needs it (a VM or a bare-metal server)." >&2
  exit 1
fi
command -v nvidia-smi >/dev/null && nvidia-smi -L || echo "warning: nvidia-smi not found; attendees will run on the CPU."

echo "== system packages"
apt-get update -q
apt-get install -y -q python3-venv python3-pip git nodejs npm
node_major="$(node --version | sed 's/^v\([0-9]*\).*/\1/')"
if (( node_major < NODE_MIN_MAJOR )); then
  echo "Node.js $(node --version) is too old: configurable-http-proxy needs $NODE_MIN_MAJOR or newer." >&2
  echo "Install a newer one (for example NodeSource's nodejs 22 packages), then run this again." >&2
  exit 1
fi

echo "== the course and JupyterHub in $VENV"
[[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV"
pip=("$VENV/bin/python" -m pip install -q -c "$COURSE_DIR/constraints.txt")
"${pip[@]}" -e "${COURSE_DIR}[workshop,lab]"
"${pip[@]}" -e "${COURSE_DIR}[kernels]"
"$VENV/bin/python" "$COURSE_DIR/tools/install_kernels.py"

echo "== the proxy (configurable-http-proxy, from npm)"
(cd "$COURSE_DIR" && npm ci --omit=dev --no-audit --no-fund --loglevel=error)

# Attendees' servers run as throw-away system users: they must read the course and the venv.
chmod -R a+rX "$COURSE_DIR"

echo "== settings in $ENV_FILE and the service gpulab-hub"
install -d -m 700 "$ENV_DIR" "$STATE_DIR"
if [[ ! -f "$ENV_FILE" ]]; then
  (umask 077 && env_text > "$ENV_FILE")
fi
unit_text > "$UNIT_FILE"
systemctl daemon-reload
systemctl enable --now gpulab-hub
systemctl restart gpulab-hub

echo
echo "JupyterHub is starting on port 8000 of this machine."
echo "The attendees' password and the instructor's API token are in $ENV_FILE."
echo "Logs: journalctl -u gpulab-hub -f"
