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
# capture (see README): BACKEND=transformers|llama-cpp|mlx-lm|openai, GGUF=path, MODEL_DIR=path, BASE_URL=url,
# SUITES=a,b, CAPTURE_LIMIT=N (prompts per suite), MAX_TOKENS=N
BACKEND ?=
GGUF ?=
MODEL_DIR ?=
BASE_URL ?=
SUITES ?=
CAPTURE_LIMIT ?=
MAX_TOKENS ?=
CAPTURE_FLAGS = $(if $(BACKEND),--backend $(BACKEND)) $(if $(GGUF),--gguf $(GGUF)) \
	$(if $(MODEL_DIR),--model-dir $(MODEL_DIR)) $(if $(BASE_URL),--base-url $(BASE_URL)) \
	$(if $(SUITES),--suites $(SUITES)) $(if $(CAPTURE_LIMIT),--capture-limit $(CAPTURE_LIMIT)) \
	$(if $(MAX_TOKENS),--max-tokens $(MAX_TOKENS))

.PHONY: eval test lint bench clean-venv baseline gate compare

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[test,capture]"
	# the grammar oracle (harness/analysis/grammar.py): xgrammar without its dependencies (torch, pydantic and
	# transformers are the capture extra's; triton is only for its GPU kernels)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps xgrammar==0.2.9 apache-tvm-ffi==0.1.15.post2
	$(BIN)/python -m harness.engines.wheels --install
	touch $(STAMP)

eval: $(STAMP)
	$(BIN)/toolcall-harness eval --model $(MODEL) --seed $(SEED) --cases $(CASES) $(if $(PARSERS),--parsers $(PARSERS)) $(CAPTURE_FLAGS) $(ARGS)

# regression gate (README "Baselines and the regression gate"): save per-case verdicts, then compare a rerun
baseline: $(STAMP)
	$(BIN)/toolcall-harness baseline save --model $(MODEL) --seed $(SEED) --cases $(CASES) $(if $(PARSERS),--parsers $(PARSERS)) $(ARGS)

gate: $(STAMP)
	$(BIN)/toolcall-harness gate --model $(MODEL) $(if $(PARSERS),--parsers $(PARSERS)) $(ARGS)

# main vs branch (README "Compare two parsers"): make compare PARSERS=A,B; compare.md in the run folder, exit 1 when
# B regressed on any case
compare: $(STAMP)
	$(if $(PARSERS),,$(error make compare needs PARSERS=A,B: two parser specs, before and after))
	$(BIN)/toolcall-harness compare --model $(MODEL) --parsers $(PARSERS) --seed $(SEED) --cases $(CASES) $(ARGS)

# pinned engine verdicts (tests/engines/test_pinned_verdicts.py): every reference parser on the curated and observed
# cases of each model in tests/engines/pins/, saved as compact baselines; run after an engine, template or judge
# change and review the diff. A new model: make pin-engines PIN_MODELS=name
PIN_MODELS ?= $(notdir $(wildcard tests/engines/pins/*))
PIN_RUNS   ?= reports/pins
.PHONY: pin-engines
pin-engines: $(STAMP)
	@for m in $(PIN_MODELS); do \
	  rm -f tests/engines/pins/$$m/*.json; \
	  $(BIN)/toolcall-harness baseline save --model $$m --parsers references --cases 0 --slices curated,observed \
	    --compact --timeout 60 --dir tests/engines/pins --out $(PIN_RUNS) $(ARGS) || exit 1; \
	done

# random sweep (README "Random sweep"): make sweep MODEL=gemma-4-e2b PARSER=toolcall-harness:gemma4 N=200000
PARSER ?= toolcall-harness
N      ?= 2000
.PHONY: sweep
sweep: $(STAMP)
	$(BIN)/toolcall-harness sweep --model $(MODEL) --parser $(PARSER) -n $(N) --seed $(SEED) $(ARGS)

# lint and types (pyproject.toml [tool.ruff], [tool.mypy]): seconds with a warm .mypy_cache, under a minute cold
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# the full suite (CI: .ci/run), after lint, on 2 workers: each test file on one worker (its engine and corpus
# fixtures built once), engine and wheel builds under a file lock (harness/engines/environments.py)
test: $(STAMP) lint
	@sh scripts/install_chromium.sh
	$(BIN)/python -m pytest -q -n 2 --dist loadfile $(ARGS)

# everything but the engine builds, the browser and the slow end-to-end runs (markers: tests/conftest.py),
# on 2 workers: under 2 minutes on 2 cores
.PHONY: check test-fast
check: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 -m "not engines and not browser and not slow" $(ARGS)

test-fast: check

bench: $(STAMP)
	$(BIN)/python bench/bench.py $(ARGS)
	$(BIN)/python bench/bench_parsers.py
	$(BIN)/python bench/bench_worker.py
	$(BIN)/python bench/bench_capture.py
	$(BIN)/python bench/bench_render.py
	$(BIN)/python bench/bench_scaling.py

# fuzzing (docs/fuzzing.md): every target of fuzz/targets.py under atheris, SECONDS in all split evenly, one after
# another on one core (nice); corpus kept in <cache>/fuzz/, crashes written to reports/fuzz/crashes/<target>/
SECONDS ?= 390
FUZZ_TARGETS ?=
.PHONY: fuzz
fuzz: $(STAMP)
	@$(BIN)/python -c "import atheris" 2>/dev/null || \
	  $(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[fuzz]"
	nice -n 10 $(BIN)/python fuzz/run.py --seconds $(SECONDS) $(if $(FUZZ_TARGETS),--targets $(FUZZ_TARGETS)) $(ARGS)

clean-venv:
	rm -rf $(VENV)
