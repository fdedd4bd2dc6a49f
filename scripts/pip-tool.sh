#!/usr/bin/env bash
# A pinned PyPI tool in a project-local virtualenv created on first use under .local/cache/ (like the
# moto emulator of infra/local/dynamodb.ts): `scripts/pip-tool.sh <package> <version> [args...]` runs
# the package's command of the same name with the arguments. scripts/cfn-lint.sh and
# scripts/checkov.sh name their pins; `--version` only installs (CI warms the cache before the tests).
set -euo pipefail

package="$1"
version="$2"
shift 2
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/.local/cache/$package-venv-$version"
python="${PYTHON:-python3}"

if [ ! -f "$venv/.complete" ]; then
  mkdir -p "$(dirname "$venv")"
  # One installer at a time: test files run side by side, and a second one would delete the venv the
  # first is installing into. The lock is released when this script exits (or execs the tool).
  exec 9>"$venv.lock"
  flock 9
fi
if [ ! -f "$venv/.complete" ]; then
  command -v "$python" >/dev/null 2>&1 || { echo "$package needs Python 3 (Debian: apt-get install python3 python3-venv) or PYTHON=..." >&2; exit 2; }
  echo "installing $package $version into $venv (first use only)..." >&2
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  "$python" -m venv "$venv" >&2 || { echo "could not create a virtualenv (Debian: apt-get install python3-venv)" >&2; rm -rf "$venv"; exit 2; }
  if ! "$venv/bin/pip" install --disable-pip-version-check -q "$package==$version" >&2; then
    rm -rf "$venv"
    echo "pip could not install $package==$version" >&2
    exit 2
  fi
  touch "$venv/.complete"
fi
exec 9>&-

exec "$venv/bin/$package" "$@"
