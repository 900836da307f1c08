# Two commands do all the set-up: `make demo` and `make test`.
PY ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml
	@command -v $(PY) >/dev/null 2>&1 || { echo "need $(PY)"; exit 1; }
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/rsep run examples/srbench-hot.rq \
	    --stream http://example.org/srbench=../shared/data/srbench-weather/weather-stream.trig \
	    --format table --engine spark --master 'local[2]'

test: $(STAMP)
	$(BIN)/ruff check rsep tests benchmarks
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/window_throughput.py

clean:
	rm -rf $(VENV) build *.egg-info
