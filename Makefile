# One entry point for people and CI. Every target creates the virtualenv on first use.
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin

.PHONY: install install-runtime demo serve test check lint format clean proto bench soak fixtures test-frameworks test-peers test-budget

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Two stamps: the runtime alone (what `demo` and `serve` need, ~15 s) and the runtime with the test
# extra (agent frameworks, chDB, the Helm SDK…: ~1.8 GB, what `test` and `check` need). The full one
# marks the runtime's as done too, so `make demo` and `make test` work first on a fresh clone in either
# order, and neither installs twice.
# setuptools warns on every editable install of a flat layout (folders named like the package may
# shadow it): nothing to act on here, so the build's UserWarnings are not shown.
$(BIN)/.installed-runtime: pyproject.toml | $(BIN)/python
	@echo "Installing tracescore into $(VENV)..."
	PYTHONWARNINGS=ignore::UserWarning $(BIN)/python -m pip install --quiet -e .
	touch $@

$(BIN)/.installed: pyproject.toml | $(BIN)/python
	@echo "Installing tracescore and its test tools into $(VENV) (the first time takes a minute or two)..."
	PYTHONWARNINGS=ignore::UserWarning $(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@ $(BIN)/.installed-runtime

install: $(BIN)/.installed

install-runtime: $(BIN)/.installed-runtime

demo: install-runtime
	$(BIN)/tracescore demo

serve: install-runtime
	$(BIN)/tracescore serve

check: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# Two test processes, each test file kept in one: most of the suite waits on real servers (load ~1.7 of
# 2 cores serially), and 14 min 55 s serial came down to 12 min 14 s even with the framework matrix
# building its virtualenvs beside it. PYTEST_WORKERS=0 runs it in this process alone.
PYTEST_WORKERS ?= 2
test: check
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile

# Real agent frameworks (tests/frameworks/): each cell's driver runs in a virtualenv of its own, built
# from tests/frameworks/requirements/ on first use and kept in ~/.cache/tracescore/frameworks.
# `make fixtures` re-records what every framework sends (commit what changes); `make test-frameworks`
# runs the live matrix against the recordings' rules (.ci/run does).
fixtures: install
	$(BIN)/python -m tests.frameworks.record

test-frameworks: install
	TRACESCORE_LIVE_FRAMEWORKS=1 $(BIN)/python -m pytest -q tests/frameworks/test_live.py

# The peers' own checkers (DeepEval, Ragas) beside tracescore on the cases docs/checks.md's migration notes
# translate: their pins cannot share our virtualenv (tests/scoring/test_peer_translation.py says why), so
# they run in one of their own, built from tests/scoring/peers/requirements.txt and cached like the cells'.
test-peers: install
	TRACESCORE_PEER_TRANSLATION=1 $(BIN)/python -m pytest -q tests/scoring/test_peer_translation.py

# The smallest documented memory budget (bench/budget.py's SMALL_BUDGET) under the bench's load at 1,000
# tool spans/s for a minute (issue 32): nothing lost, no invalidation, no exporter giving up.
test-budget: install
	TRACESCORE_BUDGET_SOAK=1 $(BIN)/python -m pytest -q -s tests/collector/serve/test_smallest_budget.py

# The peer, Arize Phoenix, lives in its own virtualenv: its dependencies must not shape ours.
PHOENIX_VENV ?= .venv-phoenix

$(PHOENIX_VENV)/bin/phoenix:
	$(PYTHON) -m venv $(PHOENIX_VENV)
	$(PHOENIX_VENV)/bin/python -m pip install --quiet arize-phoenix

# Every figure of issues 17's and 32's targets, as each target states it (four 5-minute sustained runs
# among them; ~33 min on the idle 2-core machine, printed at the start), ending with the targets table, also
# written to bench/results/. `BENCH_QUICK=1 make bench` is a smoke run of a few minutes.
bench: install $(PHOENIX_VENV)/bin/phoenix
	PHOENIX_VENV=$(PHOENIX_VENV) $(BIN)/python -m bench.run

# The reliability promises at full size (docs/reliability.md): 50 crash-loop rounds, 60 s of overload
# from real exporters, the fuzzers with ten times the examples; figures are printed. Loopback only,
# bounded in time. `python -m bench.overload` runs the overload alone and writes its figures to JSON.
SOAK_ROUNDS ?= 50
SOAK_OVERLOAD_SECONDS ?= 60
soak: install
	TRACESCORE_CRASH_ROUNDS=$(SOAK_ROUNDS) TRACESCORE_OVERLOAD_SECONDS=$(SOAK_OVERLOAD_SECONDS) \
	TRACESCORE_FUZZ_EXAMPLES=2000 $(BIN)/python -m pytest -q -s --timeout 3600 \
		tests/collector/store/test_crash_loop.py tests/collector/receive/test_overload.py tests/test_fuzz.py \
		tests/collector/serve/test_sql_fuzz.py

proto: install
	$(BIN)/python proto/generate.py

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
