#!/usr/bin/env bash
# Esper 9 (com.espertech esper-common / esper-compiler / esper-runtime, GPL-2.0) from Maven
# Central, with rsep bench's worker (benchmarks/peers/esper, our sources) built by Maven into
# benchmarks/.peers/esper: target/esper-worker-0.1.0.jar and lib/ (the runtime class path).
# A benchmark dependency only: nothing of it is linked into rsep. Needs Java 17 and mvn.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dest="$root/benchmarks/.peers/esper"
command -v java >/dev/null || { echo "java not found: install openjdk-17-jdk-headless" >&2; exit 1; }
command -v mvn >/dev/null || { echo "mvn not found: install maven" >&2; exit 1; }
mkdir -p "$dest"
rm -rf "$dest/lib"  # copy-dependencies adds: a stale jar of another version would stay on the path
mvn -q -B -f "$root/benchmarks/peers/esper/pom.xml" -Dpeers.dir="$dest" package
ls "$dest/target/esper-worker-0.1.0.jar" >/dev/null
echo "esper $(ls "$dest/lib" | sed -n 's/^esper-runtime-\(.*\)\.jar$/\1/p') worker built in $dest"
