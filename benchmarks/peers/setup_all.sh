#!/usr/bin/env bash
# Every peer of `rsep bench`; each one is optional, a failure is reported and the rest go on.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
status=0
for peer in core flink rspjs etalis esper rsprs; do
  echo "== $peer"
  bash "$here/setup_$peer.sh" || { echo "setup_$peer.sh failed" >&2; status=1; }
done
exit $status
