# Two commands do all the set-up on a fresh machine:
#   make demo   evaluate the bundled example data and write the report to runs/example/
#   make test   run the test suite (unit and integration)
# Both create the virtual environment .venv and install what they need into it.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
EXAMPLES := examples/dev_platform_en.jsonl examples/dev_platform_zh.jsonl

.PHONY: demo test install install-dev browser clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install -e .

install-dev: $(BIN)/python
	$(BIN)/pip install -e ".[dev]"

browser:
	scripts/install-chromium.sh

demo: install
	$(BIN)/ragmeter eval $(EXAMPLES) --out runs/example
	@echo "Open runs/example/report.html in a browser."

test: install-dev browser
	$(BIN)/pytest -q

clean:
	rm -rf $(VENV) runs ragmeter-out
