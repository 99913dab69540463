# Sourced by the CI steps that run Bumble (ci-bumble.sh, ci-nimble.sh): makes
# the Python environment with the pinned bumble under .build/venv-bumble
# (installing python3-venv first if the machine lacks it) and exports
# ANCS_BUMBLE_PYTHON. Run from the package root.
bumble_version=0.0.236
bumble_venv=$PWD/.build/venv-bumble
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  echo "== installing python3-venv"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 update -q
  apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends python3 python3-venv
fi
if [ ! -f "$bumble_venv/.ancs-bumble-$bumble_version" ]; then
  echo "== Python environment with bumble $bumble_version"
  rm -rf "$bumble_venv"
  python3 -m venv "$bumble_venv"
  "$bumble_venv/bin/python" -m pip install --quiet "bumble==$bumble_version"
  touch "$bumble_venv/.ancs-bumble-$bumble_version"
fi
export ANCS_BUMBLE_PYTHON="$bumble_venv/bin/python"
