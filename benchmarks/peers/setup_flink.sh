#!/usr/bin/env bash
# Apache Flink (SQL MATCH_RECOGNIZE) through PyFlink. PyFlink pins its own pandas/numpy/pyarrow,
# so it gets a venv of its own; it needs Java 11 or 17 on PATH (the local mini-cluster runs in a JVM).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
py="${PYFLINK_PYTHON:-/root/.pyenv/versions/3.11.7/bin/python3.11}"
dest="$root/benchmarks/.peers/flink"
command -v java >/dev/null || { echo "java not found: install openjdk-17-jre-headless" >&2; exit 1; }
"$py" -m venv "$dest"
"$dest/bin/pip" install --quiet --upgrade pip
"$dest/bin/pip" install --quiet "apache-flink==${FLINK_VERSION:-2.3.0}"
"$dest/bin/python" -c "import pyflink, importlib.metadata as m; print('apache-flink', m.version('apache-flink'), 'installed in $dest')"
