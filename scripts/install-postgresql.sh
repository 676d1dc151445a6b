#!/usr/bin/env bash
# Install Debian's PostgreSQL server for the run store's integration tests, unless present.
# The tests start a throwaway cluster of their own (initdb + pg_ctl in a temporary directory,
# on a free port); no system service is started or needed.
set -euo pipefail
if compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || command -v initdb >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
  sudo=""
elif command -v sudo >/dev/null 2>&1; then
  sudo="sudo"
else
  echo "PostgreSQL is missing and this user cannot install it: run 'apt-get install -y postgresql' as root." >&2
  exit 1
fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql >/dev/null
ls /usr/lib/postgresql/*/bin/initdb
