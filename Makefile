# Two commands do all the set-up on a fresh machine:
#   make demo   evaluate the bundled example data and write the report to runs/example/
#   make test   run the test suite (unit and integration)
# Both create the virtual environment .venv and install what they need into it.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
EXAMPLES := examples/dev_platform_en.jsonl examples/dev_platform_zh.jsonl

.PHONY: demo test lint smoke install install-dev browser postgresql clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip

# llama-cpp-python compiles on install (about 5 minutes); GGML_NATIVE=OFF builds it for any
# x86-64 CPU (the native build crashes on some machines). pip caches the wheel it builds.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF

install: $(BIN)/python
	$(BIN)/pip install -e ".[local]"

install-dev: $(BIN)/python
	$(BIN)/pip install -e ".[dev,local]"

browser:
	scripts/install-chromium.sh

# Debian's PostgreSQL server: the store's tests start a throwaway cluster with it.
postgresql:
	scripts/install-postgresql.sh

# Every model-free metric and faithfulness judged by the embedded model: a full report in minutes
# on 2 cores. `-m auto` adds the other core LLM metrics (9 to 14 minutes more; see README).
demo: install
	$(BIN)/ragmeter eval $(EXAMPLES) -m model-free,faithfulness --out runs/example
	@echo "Open runs/example/report.html in a browser."

# Lint, format check, type check, and every third-party import declared: part of `make test`.
lint: install-dev
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/ruff format --check src tests benchmarks scripts
	$(BIN)/mypy
	if [ -x ../shared/tools/undeclared-imports ]; then ../shared/tools/undeclared-imports $(BIN)/python; fi

# The documented user install alone (`pip install .` in a clean virtualenv), every command run
# on the examples: an undeclared dependency or a traceback fails it. Part of `make test`.
smoke:
	scripts/smoke-plain-install.sh $(PYTHON)

test: install-dev browser postgresql lint smoke
	$(BIN)/pytest -q --durations=25

clean:
	rm -rf $(VENV) runs ragmeter-out
