# One entry point for people and CI. Every target creates the virtualenv on first use.
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin

.PHONY: install demo serve test check lint format clean proto bench

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

install: $(BIN)/.installed

demo: install
	$(BIN)/tracescore demo

serve: install
	$(BIN)/tracescore serve

check: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: check
	$(BIN)/python -m pytest -q

# The peer, Arize Phoenix, lives in its own virtualenv: its dependencies must not shape ours.
PHOENIX_VENV ?= .venv-phoenix

$(PHOENIX_VENV)/bin/phoenix:
	$(PYTHON) -m venv $(PHOENIX_VENV)
	$(PHOENIX_VENV)/bin/python -m pip install --quiet arize-phoenix

bench: install $(PHOENIX_VENV)/bin/phoenix
	$(BIN)/python -m bench.components
	$(BIN)/python bench/score_history.py
	PHOENIX_VENV=$(PHOENIX_VENV) $(BIN)/python -m bench.run

proto: install
	$(BIN)/python proto/generate.py

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
