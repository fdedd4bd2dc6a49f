#!/usr/bin/env bash
# Packages the deployable bundle offline and checks it, as `npm test` does (test/deploy/):
# `sls package` with osls and dummy credentials into .serverless/, each zip's size, then cfn-lint
# on the generated CloudFormation.
#   scripts/package-check.sh                     # stage dev, region us-east-1
#   scripts/package-check.sh dev us-east-1 --param "scheduleMethod=eventBus"
set -euo pipefail
cd "$(dirname "$0")/.."

stage="${1:-dev}"
region="${2:-us-east-1}"
shift $(( $# > 2 ? 2 : $# ))

# Offline: dummy credentials, and no profile that could point at a real account.
unset AWS_PROFILE AWS_DEFAULT_PROFILE AWS_SESSION_TOKEN
AWS_ACCESS_KEY_ID=x AWS_SECRET_ACCESS_KEY=x AWS_REGION="$region" SLS_TELEMETRY_DISABLED=1 \
  npx --no-install sls package --stage "$stage" --region "$region" "$@"

for zip in .serverless/*.zip; do
  printf '%-16s %9d bytes\n' "$(basename "$zip")" "$(wc -c <"$zip")"
done

# W3005: osls adds DependsOn on a role that the function's Role GetAtt already implies.
bash scripts/cfn-lint.sh --regions "$region" --ignore-checks W3005 -- .serverless/cloudformation-template-update-stack.json
echo "cfn-lint: .serverless/cloudformation-template-update-stack.json has no errors or warnings"
