#!/usr/bin/env bash
# cfn-lint (PyPI), pinned, in a project-local virtualenv (scripts/pip-tool.sh). Arguments go to
# cfn-lint unchanged, e.g.
#   scripts/cfn-lint.sh .serverless/cloudformation-template-update-stack.json
#   scripts/cfn-lint.sh --version      # only install (CI warms the cache before the timed tests)
set -euo pipefail
exec "$(dirname "$0")/pip-tool.sh" cfn-lint 1.58.0 "$@"
