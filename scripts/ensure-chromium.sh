#!/usr/bin/env bash
# Makes sure Debian's headless-capable Chromium is at /usr/bin/chromium, for test/debug.test.ts
# (playwright-core drives it; it downloads no browser of its own). CI calls this before `npm test`.
# Only the Debian package registry is needed: no other network access.
set -euo pipefail

CHROMIUM=/usr/bin/chromium

if [ -x "$CHROMIUM" ]; then
  echo "chromium present: $("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM")"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "ensure-chromium: $CHROMIUM is missing and this user cannot install packages (not root, no sudo)" >&2
    exit 1
  fi
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends chromium fonts-dejavu-core

if [ ! -x "$CHROMIUM" ]; then
  echo "ensure-chromium: installed the chromium package, but $CHROMIUM is still missing" >&2
  exit 1
fi
echo "chromium installed: $("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM")"
