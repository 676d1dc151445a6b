#!/usr/bin/env bash
# Install Debian's Chromium for the browser tests of the HTML report, unless present.
# The tests drive it with Playwright; no browser is downloaded by Playwright itself.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
"$(dirname "$0")/apt-install.sh" chromium Chromium
/usr/bin/chromium --version
