#!/usr/bin/env bash
# Installs what decant's tests, demo and benchmarks need and the machine
# lacks: PostgreSQL 15 server binaries (initdb, pg_ctl, pg_recvlogical,
# psql), MariaDB (mariadbd, mariadb-install-db), and the tools deploy/'s
# tests check its files with: promtool (Debian's prometheus package, which
# integration's TestServiceEndpoint also runs over a scrape of /metrics) and
# systemd-analyze (systemd). Only missing packages are installed; running
# services are left alone.
set -euo pipefail

#
# scripts/deps.sh tools installs only what the server-free tests need
# besides Go (make unit): promtool and systemd-analyze.
missing=()
if [ "${1:-}" != tools ]; then
	[ -x /usr/lib/postgresql/15/bin/initdb ] && [ -x /usr/lib/postgresql/15/bin/pg_recvlogical ] || missing+=(postgresql-15)
	command -v psql >/dev/null 2>&1 || missing+=(postgresql-client-15)
	command -v mariadb-install-db >/dev/null 2>&1 && [ -x /usr/sbin/mariadbd ] || missing+=(mariadb-server)
	command -v mariadb >/dev/null 2>&1 || missing+=(mariadb-client)
fi
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
command -v systemd-analyze >/dev/null 2>&1 || missing+=(systemd)

if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
echo "deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
# Installing a server package would start its service; the harness never
# uses it, so keep package scripts from starting anything.
policy=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
	$SUDO chmod +x "$policy"
	created_policy=1
fi
trap '[ $created_policy -eq 1 ] && $SUDO rm -f "$policy"' EXIT
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
