#!/usr/bin/env bash
# cfn-lint (PyPI), pinned, in a project-local virtualenv created on first use under .local/cache/
# (like the moto emulator of infra/local/dynamodb.ts). Arguments go to cfn-lint unchanged, e.g.
#   scripts/cfn-lint.sh .serverless/cloudformation-template-update-stack.json
#   scripts/cfn-lint.sh --version      # only install (CI warms the cache before the timed tests)
set -euo pipefail

CFN_LINT_VERSION=1.58.0
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/.local/cache/cfn-lint-venv-$CFN_LINT_VERSION"
python="${PYTHON:-python3}"

if [ ! -f "$venv/.complete" ]; then
  command -v "$python" >/dev/null 2>&1 || { echo "cfn-lint needs Python 3 (Debian: apt-get install python3 python3-venv) or PYTHON=..." >&2; exit 2; }
  echo "installing cfn-lint $CFN_LINT_VERSION into $venv (first use only)..." >&2
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  "$python" -m venv "$venv" >&2 || { echo "could not create a virtualenv (Debian: apt-get install python3-venv)" >&2; rm -rf "$venv"; exit 2; }
  if ! "$venv/bin/pip" install --disable-pip-version-check -q "cfn-lint==$CFN_LINT_VERSION" >&2; then
    rm -rf "$venv"
    echo "pip could not install cfn-lint==$CFN_LINT_VERSION" >&2
    exit 2
  fi
  touch "$venv/.complete"
fi

exec "$venv/bin/cfn-lint" "$@"
