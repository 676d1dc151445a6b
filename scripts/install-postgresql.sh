#!/usr/bin/env bash
# Install Debian's PostgreSQL server for the run store's integration tests, unless present.
# The tests start a throwaway cluster of their own (initdb + pg_ctl in a temporary directory,
# on a free port); no system service is started or needed.
set -euo pipefail
if compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || command -v initdb >/dev/null 2>&1; then
  exit 0
fi
"$(dirname "$0")/apt-install.sh" postgresql PostgreSQL
ls /usr/lib/postgresql/*/bin/initdb
