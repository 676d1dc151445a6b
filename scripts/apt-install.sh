#!/usr/bin/env bash
# Install a Debian package with apt-get, as root or through sudo; explain what to run otherwise.
# Usage: scripts/apt-install.sh PACKAGE WHAT   (WHAT names it in the message, e.g. "Chromium")
set -euo pipefail
package=$1 what=$2
if [ "$(id -u)" -eq 0 ]; then
  sudo=""
elif command -v sudo >/dev/null 2>&1; then
  sudo="sudo"
else
  echo "$what is missing and this user cannot install it: run 'apt-get install -y $package' as root." >&2
  exit 1
fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$package" >/dev/null
