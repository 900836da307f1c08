#!/usr/bin/env bash
# RSP-JS (windowed RSP-QL in JavaScript) from npm, into a local folder; needs node >= 18.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dest="$root/benchmarks/.peers/rspjs"
command -v node >/dev/null || { echo "node not found: install nodejs (>= 18)" >&2; exit 1; }
mkdir -p "$dest"
cd "$dest"
[ -f package.json ] || echo '{"name": "rsep-bench-rspjs", "private": true, "version": "0.0.0"}' > package.json
npm install --no-audit --no-fund --silent "rsp-js@${RSPJS_VERSION:-1.3.5}" n3
node -e "console.log('rsp-js', require('rsp-js/package.json').version, 'installed in $dest')"
