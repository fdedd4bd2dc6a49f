#!/usr/bin/env bash
# checkov (PyPI), the IaC security scanner, pinned, in a project-local virtualenv created on first
# use under .local/cache/ (like scripts/cfn-lint.sh). Arguments go to checkov unchanged, e.g.
#   scripts/checkov.sh --framework cloudformation --file .serverless/cloudformation-template-update-stack.json
#   scripts/checkov.sh --version      # only install (CI warms the cache before the timed tests)
set -euo pipefail

CHECKOV_VERSION=3.3.30
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/.local/cache/checkov-venv-$CHECKOV_VERSION"
python="${PYTHON:-python3}"

if [ ! -f "$venv/.complete" ]; then
  command -v "$python" >/dev/null 2>&1 || { echo "checkov needs Python 3 (Debian: apt-get install python3 python3-venv) or PYTHON=..." >&2; exit 2; }
  echo "installing checkov $CHECKOV_VERSION into $venv (first use only)..." >&2
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  "$python" -m venv "$venv" >&2 || { echo "could not create a virtualenv (Debian: apt-get install python3-venv)" >&2; rm -rf "$venv"; exit 2; }
  if ! "$venv/bin/pip" install --disable-pip-version-check -q "checkov==$CHECKOV_VERSION" >&2; then
    rm -rf "$venv"
    echo "pip could not install checkov==$CHECKOV_VERSION" >&2
    exit 2
  fi
  touch "$venv/.complete"
fi

exec "$venv/bin/checkov" "$@"
