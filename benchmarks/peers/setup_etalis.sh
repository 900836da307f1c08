#!/usr/bin/env bash
# ETALIS's Prolog: SWI-Prolog from Debian (swi-prolog-nox). ETALIS itself is a public
# repository, not a registry package, so nothing here fetches it: `rsep bench epsparql-etalis`
# reads it from $RSEP_ETALIS_SRC, the etalis/src folder of your own clone of it.
set -euo pipefail
if command -v swipl >/dev/null 2>&1; then
  swipl --version
  exit 0
fi
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q swi-prolog-nox
swipl --version
