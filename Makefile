# Two commands do all the set-up: `make demo` and `make test`.
# The distribution's Python 3.11 where it has one with its headers (Debian builds it with PGO
# and LTO, the interpreter linked statically): rsep runs ~15% faster on it than on a default
# pyenv build (docs/benchmarks.md, "The interpreter"); else python3.11 or python3 on PATH.
SYSTEM_PY := $(if $(wildcard /usr/include/python3.11/Python.h),$(wildcard /usr/bin/python3.11))
PY ?= $(or $(SYSTEM_PY),$(shell command -v python3.11 || command -v python3))
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# pytest's workers (pytest-xdist): one per core by default
TEST_WORKERS ?= auto

# The compiled hot path (rsep/_native.py lists it): rebuilt when a listed source changes.
NATIVE := rsep/_native.json
NATIVE_SRC := $(shell sed -n 's/^    "\(rsep\.[a-z_.]*\)",$$/\1/p' rsep/_native.py | tr . / | sed 's/$$/.py/') \
	$(wildcard rsep/*/*.pxd)

# The native core (native/, Rust on oxigraph's crates, PyO3): rsep._core, rebuilt when its
# sources change. cargo comes with the machine (rustup); the crates from crates.io, pinned
# by native/Cargo.lock.
CORE := rsep/_core.abi3.so
CORE_SRC := native/Cargo.toml native/Cargo.lock $(wildcard native/src/*.rs)
CARGO := cargo
CARGO_FLAGS := --locked --manifest-path native/Cargo.toml

.PHONY: demo test lint bench clean system-deps kafka-deps citybench-q1 bytecode native-test console

# Editable, as a plain path entry (setuptools' compat mode): its default finder costs every
# start ~25 ms of imports (pathlib and the rest) before rsep runs. Re-run when this recipe
# changes too.
$(STAMP): pyproject.toml Makefile
	@command -v $(PY) >/dev/null 2>&1 || { echo "need $(PY)"; exit 1; }
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]' --config-settings editable_mode=compat
	touch $(STAMP)

# rsep's bytecode, written here (pip compiles only what it installs in the venv): a start then
# reads it even where PYTHONDONTWRITEBYTECODE is set, as containers often do; compiling
# rsep's modules at every start took it from ~0.4 s to ~0.6 s (docs/benchmarks.md).
# Only sources changed since are recompiled.
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q rsep

$(NATIVE): $(STAMP) $(NATIVE_SRC)
	$(BIN)/python -m rsep.native build

# An extension module's name is its file's: cargo writes lib_core.so, Python imports
# _core.abi3.so (abi3: one build for every CPython >= 3.11). Copied then renamed, never
# overwritten in place: a running process keeps the old file.
$(CORE): $(CORE_SRC)
	@command -v $(CARGO) >/dev/null 2>&1 || { echo "need cargo (Rust, e.g. by rustup) to build rsep's native core"; exit 1; }
	$(CARGO) build -q --release $(CARGO_FLAGS) --features python
	cp native/target/release/lib_core.so $(CORE).tmp
	mv $(CORE).tmp $(CORE)

# The crate's own checks: formatting, clippy with warnings as errors, its unit tests.
native-test:
	$(CARGO) fmt --manifest-path native/Cargo.toml --check
	$(CARGO) clippy -q $(CARGO_FLAGS) --all-targets --features python -- -D warnings
	$(CARGO) test -q $(CARGO_FLAGS)

# rsep serve's console (console/): CodeMirror and uPlot from npm, pinned by its
# package-lock.json, bundled by esbuild into rsep/serve/static/ (ignored by git, as is
# console/node_modules/); the examples of docs/examples and examples/ are inlined.
CONSOLE := rsep/serve/static/console.js
CONSOLE_SRC := console/package-lock.json console/build.mjs $(wildcard console/src/*) \
	$(shell find docs/examples examples/coupon examples/rsepql -type f 2>/dev/null)
# (no install scripts: esbuild's only checks the binary its platform package brings)
console/node_modules/.package-lock.json: console/package.json console/package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "need node and npm to build rsep serve's console"; exit 1; }
	cd console && npm ci --no-audit --no-fund --ignore-scripts
	touch $@

$(CONSOLE): console/node_modules/.package-lock.json $(CONSOLE_SRC)
	cd console && node build.mjs

console: $(CONSOLE)

demo: $(STAMP) $(NATIVE) $(CORE) bytecode $(CONSOLE)
	$(BIN)/rsep run examples/srbench-hot.rq \
	    --stream http://example.org/srbench=../shared/data/srbench-weather/weather-stream.trig \
	    --format table --engine spark --master 'local[2]'

# CityBench's Q1 (the congestion join of two road segments) over the real Aarhus feeds, mapped
# by examples/citybench/*.rml.ttl: its first results
citybench-q1: $(STAMP) bytecode
	$(BIN)/rsep run examples/citybench/q1.rq \
	    --stream 'http://www.insight-centre.org/dataset/SampleEventService#AarhusTrafficData182955=examples/citybench/traffic-182955.rml.ttl' \
	    --stream 'http://www.insight-centre.org/dataset/SampleEventService#AarhusTrafficData158505=examples/citybench/traffic-158505.rml.ttl' \
	    --graph http://127.0.0.1:9000/WebGlCity/RDF/SensorRepository.rdf=../shared/data/citybench/SensorRepository.n3 \
	    --format table 2>/dev/null | head -12

# What the tests start themselves but cannot pip-install: the MQTT broker (Debian's mosquitto),
# and for rsep serve's console the browser its test drives (chromium) and Graphviz's dot,
# which draws SPASEQ automata. No peer is needed: the peers' checks run outside `make test`.
system-deps:
	@command -v mosquitto >/dev/null 2>&1 || test -x /usr/sbin/mosquitto || { \
	    SUDO=""; [ "$$(id -u)" -ne 0 ] && SUDO="sudo"; \
	    echo "installing mosquitto (Debian) for the MQTT tests"; \
	    $$SUDO apt-get update -q >/dev/null 2>&1 || true; \
	    DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q mosquitto >/dev/null; }
	@{ command -v chromium >/dev/null 2>&1 && command -v dot >/dev/null 2>&1; } || { \
	    SUDO=""; [ "$$(id -u)" -ne 0 ] && SUDO="sudo"; \
	    echo "installing chromium and graphviz (Debian) for rsep serve's console"; \
	    $$SUDO apt-get update -q >/dev/null 2>&1 || true; \
	    DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q chromium graphviz >/dev/null; }

# The Kafka tests' broker: one KRaft node from the org.apache.kafka jars, which mvn copies
# from Maven Central (tests/kafka/pom.xml pins the version) into the ignored .kafka/broker/;
# and Spark's Kafka connector (rsep.spark.kafka.CONNECTOR), resolved once into Spark's Ivy
# cache, so that no test downloads it. Nothing of either is committed.
KAFKA_JARS := .kafka/broker/.copied
$(KAFKA_JARS): tests/kafka/pom.xml
	@command -v mvn >/dev/null 2>&1 || { \
	    SUDO=""; [ "$$(id -u)" -ne 0 ] && SUDO="sudo"; \
	    echo "installing maven (Debian) to fetch the Kafka broker for the tests"; \
	    $$SUDO apt-get update -q >/dev/null 2>&1 || true; \
	    DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q maven >/dev/null; }
	rm -rf .kafka/broker
	mvn -q -B -f tests/kafka/pom.xml dependency:copy-dependencies -DincludeScope=runtime \
	    -DoutputDirectory=$(CURDIR)/.kafka/broker
	touch $@

kafka-deps: $(STAMP) $(KAFKA_JARS)
	$(BIN)/python -m rsep.spark.kafka

test: $(STAMP) $(NATIVE) $(CORE) bytecode $(CONSOLE) system-deps kafka-deps native-test
	$(BIN)/ruff check rsep tests benchmarks
	$(BIN)/lint-imports
	$(BIN)/mypy
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --durations=25
	# the same engines as pure Python (no compiler): the SPASEQ and EP-SPARQL equivalence
	# properties again (EP-SPARQL's indexed selection at a fixed example budget)
	RSEP_PURE=1 RSEP_EXAMPLES=60 $(BIN)/python -m pytest tests/spaseq/test_spaseq_properties.py \
	    tests/test_native.py tests/epsparql/test_epsparql_seqindex.py \
	    tests/epsparql/test_epsparql_matcher.py tests/epsparql/test_epsparql_etalis.py -k "not long_random"
	# the maintained window results against pyoxigraph, the snapshot path and the reference,
	# pure (~30 s at this budget)
	RSEP_PURE=1 RSEP_EXAMPLES=20 $(BIN)/python -m pytest tests/windows/test_maintained.py \
	    tests/sparql/test_aggregates.py

bench: $(STAMP) $(NATIVE) $(CORE) bytecode
	$(BIN)/python benchmarks/window_throughput.py

clean:
	test ! -x $(BIN)/python || $(BIN)/python -m rsep.native clean
	rm -rf $(VENV) build *.egg-info native/target $(CORE) console/node_modules rsep/serve/static
	find rsep -name __pycache__ -type d -prune -exec rm -rf {} +
