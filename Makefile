# paperfeed — the two set-up commands: `make run` (serve) and `make test` (the whole suite).
# Each creates .venv with Python 3.11+ and installs what it needs; both are safe to re-run.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin
DATA   ?=
# `make run PORT=8123 HOST=0.0.0.0`: passed as --port/--host; unset, paperfeed's settings decide
# (PAPERFEED_PORT, PAPERFEED_HOST, whose defaults are in docs/configuration.md)
PORT   ?=
HOST   ?=
PIP    := $(BIN)/python -m pip --disable-pip-version-check -q
# torch first, pinned, as its CPU build: from PyTorch's CPU wheel index where it answers (~190 MB; PyPI's
# default Linux wheel adds GBs of CUDA libraries a CPU service never loads), else pip's own sources
# (this machine's disk, offline); scripts/install-torch says which
TORCH  ?= torch==2.13.0
WHEEL_VENV ?= .venv-wheel

.PHONY: run test lint typecheck bench-import clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: $(BIN)/python pyproject.toml
	scripts/install-torch $(BIN)/python $(TORCH)
	$(PIP) install -e .
	@touch $@

$(VENV)/.installed-test: $(VENV)/.installed pyproject.toml
	$(PIP) install -e '.[test]'
	@touch $@

run: $(VENV)/.installed
	$(BIN)/paperfeed run $(if $(PORT),--port "$(PORT)") $(if $(HOST),--host "$(HOST)") $(if $(DATA),--import "$(DATA)")

test: $(VENV)/.installed-test
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports
	scripts/ensure-browser
	TORCH=$(TORCH) scripts/wheel-venv $(BIN)/python $(WHEEL_VENV)
	PAPERFEED_WHEEL_VENV=$(abspath $(WHEEL_VENV)) $(BIN)/python -m pytest -n 2 $(PYTEST_ARGS)

lint: $(VENV)/.installed-test
	$(BIN)/ruff check --fix src tests bench
	$(BIN)/ruff format src tests bench

typecheck: $(VENV)/.installed-test
	$(BIN)/mypy

bench-import: $(VENV)/.installed
	$(BIN)/python bench/import_speed.py

clean:
	rm -rf $(VENV) $(WHEEL_VENV) dist .pytest_cache .mypy_cache .ruff_cache
