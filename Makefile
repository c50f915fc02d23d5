# toolcall-harness: `make eval MODEL=gemma-4-e2b` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
MODEL  ?= gemma-4-e2b
PARSERS ?=
SEED   ?= 0
CASES  ?= 300
ARGS   ?=

.PHONY: eval test bench clean-venv

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[test]"
	touch $(STAMP)

eval: $(STAMP)
	$(BIN)/toolcall-harness eval --model $(MODEL) --seed $(SEED) --cases $(CASES) $(if $(PARSERS),--parsers $(PARSERS)) $(ARGS)

test: $(STAMP)
	$(BIN)/python -m pytest -q $(ARGS)

bench: $(STAMP)
	$(BIN)/python bench/bench.py $(ARGS)
	$(BIN)/python bench/bench_worker.py

clean-venv:
	rm -rf $(VENV)
