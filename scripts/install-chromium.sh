#!/usr/bin/env bash
# Install Debian's Chromium for the browser tests of the HTML report, unless present.
# The tests drive it with Playwright; no browser is downloaded by Playwright itself.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
  sudo=""
elif command -v sudo >/dev/null 2>&1; then
  sudo="sudo"
else
  echo "Chromium is missing and this user cannot install it: run 'apt-get install -y chromium' as root." >&2
  exit 1
fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
/usr/bin/chromium --version
