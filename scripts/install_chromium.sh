#!/bin/sh
# Install Chromium from the Debian packages when it is missing (the report.html browser test opens it).
# Idempotent and quiet: does nothing when /usr/bin/chromium exists. Needs root (apt-get) on a fresh machine.
set -e
CHROMIUM=/usr/bin/chromium
[ -x "$CHROMIUM" ] && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "install_chromium.sh: $CHROMIUM is missing and this is not root: run 'apt-get install -y chromium' as root" >&2
    exit 1
fi
echo "installing chromium (Debian package) for the report.html browser test ..."
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium >/dev/null
[ -x "$CHROMIUM" ] || { echo "install_chromium.sh: apt-get finished but $CHROMIUM is missing" >&2; exit 1; }
