#!/usr/bin/env bash
# Makes sure redis-server is on this machine: the Argo CD scenarios of `make test` run one Redis
# per cluster beside Argo CD's controllers (Argo CD's cache), started by the test bed on loopback.
#
#   scripts/host/redis.sh          # or: make host-redis (make test runs it first)
#
# Installs Debian's redis-server (without recommends) when it is missing and this is a root shell
# on a machine with apt-get; anywhere else it says what to install. Safe to run twice.
set -euo pipefail

if command -v redis-server >/dev/null 2>&1; then
	exit 0
fi
if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
	echo "host-redis: redis-server is not installed; the Argo CD scenarios of make test need it. Install it (Debian/Ubuntu: sudo apt-get install --no-install-recommends redis-server; macOS: brew install redis) and run make test again." >&2
	exit 1
fi
echo "• installing redis-server (Debian's, for the Argo CD scenarios' Redis)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends redis-server >/dev/null
command -v redis-server >/dev/null 2>&1 || { echo "host-redis: apt-get installed redis-server but it is not on PATH" >&2; exit 1; }
echo "✓ redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')"
