#!/usr/bin/env bash
# checkov (PyPI), the IaC security scanner, pinned, in a project-local virtualenv (scripts/pip-tool.sh).
# Arguments go to checkov unchanged, e.g.
#   scripts/checkov.sh --framework cloudformation --file .serverless/cloudformation-template-update-stack.json
#   scripts/checkov.sh --version      # only install (CI warms the cache before the timed tests)
set -euo pipefail
exec "$(dirname "$0")/pip-tool.sh" checkov 3.3.30 "$@"
