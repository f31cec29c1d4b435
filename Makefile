# Two commands on a fresh machine: `make run` (dashboard) and `make test` (whole suite).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8501
# 127.0.0.1: this machine only. ADDRESS=0.0.0.0 shares the dashboard on your network (README).
ADDRESS ?= 127.0.0.1

.PHONY: run test test-fast lint install install-test bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

install: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	$(BIN)/python -c "import ldpviz.metrics as m; m.warm_up()"  # compile numba kernels now, not on a first page

install-test: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test]"
	$(BIN)/python -c "import ldpviz.metrics as m; m.warm_up()"  # compile numba kernels now, not on a first page

## Set up and start the dashboard on the bundled dataset.
run: install
	$(BIN)/ldpviz app --port $(PORT) --address $(ADDRESS)

## Set up and run the whole test suite (statistical and browser tests included).
test: install-test
	$(BIN)/python -m pytest -n 2 --dist loadgroup --durations=40

## The quick inner loop: everything but slow and browser tests.
test-fast: install-test
	$(BIN)/python -m pytest -n 2 -m "not slow and not browser"

## Lint with ruff (the rules in pyproject.toml's [tool.ruff]); .ci/run runs it before the tests.
lint: install-test
	$(BIN)/python -m ruff check .

## CI smoke run of every bench/ script (bench/README.md) into build/reproduce-quick/; fails if any script fails.
## Build the wheel, install it in a fresh venv outside the checkout, run `ldpviz run` and `ldpviz app` (CI does this).
.PHONY: wheel-check
wheel-check: $(BIN)/python
	bash .ci/wheel-check $(BIN)/python

.PHONY: reproduce-quick
reproduce-quick: install-test
	$(BIN)/python -m ldpviz reproduce --quick --jobs 2

## Benchmark gate (issue 38): ratio benchmarks against references measured in the same run, judged against
## bench/gate_thresholds.json; fails (exit 1) naming the benchmark, its ratio and its threshold. Report in build/.
## Re-measure the thresholds after a speed change: $(BIN)/python bench/gate.py --measure --install
.PHONY: bench-gate
bench-gate: install-test
	$(BIN)/python bench/gate.py --out build/bench-gate --budget 300

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis artifacts
