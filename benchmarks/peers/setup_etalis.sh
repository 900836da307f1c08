#!/usr/bin/env bash
# ETALIS's Prolog: SWI-Prolog from Debian (swi-prolog-nox). ETALIS's own sources are not
# installed: `rsep bench epsparql-etalis` reads them from ../shared/peers/etalis/src beside
# the repository, or from $RSEP_ETALIS_SRC.
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
