#!/usr/bin/env bash
# `npm run test:tools`: installs the Debian tools some tests use, so that none of them skips —
# prometheus (prometheus and promtool), nginx-light (nginx), tini, and chromium (through
# scripts/ensure-chromium.sh, with a font). .ci/run calls it before `npm test`. Debian or Ubuntu,
# as root or with sudo; only the distribution's package registry is needed.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
[ -x /usr/bin/promtool ] && [ -x /usr/bin/prometheus ] || need+=(prometheus)
[ -x /usr/sbin/nginx ] || need+=(nginx-light)
[ -x /usr/bin/tini ] || need+=(tini)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  elif [ ${#need[@]} -gt 0 ] || [ ! -x /usr/bin/chromium ]; then
    echo "install-test-tools: this user cannot install packages (not root, no sudo); as root: apt-get install ${need[*]} chromium" >&2
    exit 1
  fi
fi

if [ ${#need[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
bash scripts/ensure-chromium.sh
echo "test tools present: promtool, prometheus, nginx, tini, chromium"
