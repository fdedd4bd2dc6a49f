#!/usr/bin/env bash
# The system packages the project's set-up needs on Debian, installed when missing (as root), with
# what is installed said first. `.ci/run` runs it; `npm start` and `npm test` run it too when the user
# is root on Debian and a tool is missing (elsewhere they print this command).
#   --check   list what is missing (one Debian package per line) and exit 1 if anything is
set -euo pipefail

missing=()
# The JDK (not only the JRE): tests compile a small Java client, Kafka's own, as their oracle; Kafka runs on it.
command -v javac >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
# Maven resolves the Kafka jars and builds the schema registry.
command -v mvn >/dev/null 2>&1 || missing+=(maven)
# Python and its venv module: moto (the DynamoDB and AWS emulator), cfn-lint and checkov live in virtualenvs.
command -v python3 >/dev/null 2>&1 || missing+=(python3)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)
# kcat: an independent Kafka client the tests and benchmarks compare against.
command -v kcat >/dev/null 2>&1 || missing+=(kcat)
# openssl makes the secured test broker its CA and certificates (infra/local/kafka-tls.ts).
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
# The local Lambda (infra/local/lambda/): unzip for the packaged functions; cmake, make and g++ build
# the runtime client's native part; curl fetches Go for the runtime emulator where the machine has none.
command -v unzip >/dev/null 2>&1 || missing+=(unzip)
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v make >/dev/null 2>&1 || missing+=(make)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v curl >/dev/null 2>&1 || missing+=(curl)

if [ "${1:-}" = "--check" ]; then
  if [ "${#missing[@]}" -gt 0 ]; then printf "%s\n" "${missing[@]}"; fi
  [ "${#missing[@]}" -eq 0 ]
  exit
fi
if [ "${#missing[@]}" -eq 0 ]; then exit 0; fi
if [ "$(id -u)" -ne 0 ] || [ ! -f /etc/debian_version ]; then
  echo "missing: ${missing[*]}; on Debian as root: bash $0 (or apt-get install ${missing[*]})" >&2
  exit 1
fi
echo "[setup] installing system packages: ${missing[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
