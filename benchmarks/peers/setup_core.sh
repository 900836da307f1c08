#!/usr/bin/env bash
# CORE through pycer: pycer is published only for CPython 3.13, so it gets its own venv.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
py313="${PY313:-/root/.pyenv/versions/3.13.0/bin/python3.13}"
dest="$root/benchmarks/.peers/core"
if [ ! -x "$py313" ]; then
  echo "CPython 3.13 not found at $py313 (set PY313=/path/to/python3.13)" >&2
  exit 1
fi
"$py313" -m venv "$dest"
"$dest/bin/pip" install --quiet --upgrade pip
"$dest/bin/pip" install --quiet "pycer==0.1.6"
"$dest/bin/python" -c "import pycer; print('pycer', getattr(pycer, '__version__', '0.1.6'), 'installed in $dest')"
