# takt: `make help` lists the targets. `make local` and `make test` are the README's two commands.
SHELL := /bin/bash
TOOLS := .tools
UV := $(TOOLS)/bin/uv
PY := .venv/bin/python
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 18,20

.DEFAULT_GOAL := help

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

$(UV):
	python3 -m venv $(TOOLS)
	$(TOOLS)/bin/pip install --quiet --disable-pip-version-check uv==0.13.8

install: $(UV) ## install everything from the lock (uv.lock) into .venv
	$(UV) sync --frozen --extra local

install-local: $(UV) ## install only what takt local needs (no dev tools) from the lock into .venv
	$(UV) sync --frozen --extra local --no-dev --inexact

local: install-local ## run takt locally on moto: API on http://127.0.0.1:8080 (PORT=... to change)
	.venv/bin/takt local --port $${PORT:-8080}

# One pytest worker more than the cores: the end-to-end, chaos and bench tests spend much of their
# time waiting on real timers, which a third worker on two cores fills.
TEST_WORKERS ?= $(shell expr $$(nproc) + 1)

test: install ## run the whole test suite
	PATH="$(CURDIR)/$(TOOLS)/bin:$$PATH" $(PY) -m pytest -n $(TEST_WORKERS) -q

lint: install ## ruff, mypy --strict, the import contracts and radon complexity <= 15 in the runtime
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy .
	.venv/bin/lint-imports --no-cache
	$(PY) -m pytest -q -n 0 tests/unit/test_complexity.py

fmt: install ## format the code
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

openapi: install ## regenerate docs/openapi.json from the API routes
	$(PY) -c "from takt.api.app import openapi_json; print(openapi_json(), end='')" > docs/openapi.json

synth: install ## synthesize the CDK app into cdk.out (needs Node.js; runs npm ci)
	npm ci --no-audit --no-fund
	PATH="$(CURDIR)/.venv/bin:$(CURDIR)/$(TOOLS)/bin:$$PATH" npx cdk synth

chaos: install ## every fault scenario in full (tests/chaos; reports in test-artifacts/chaos/)
	PATH="$(CURDIR)/$(TOOLS)/bin:$$PATH" $(PY) -m pytest tests/chaos -n 2 -q --chaos-full

mutants: install ## break each rule on purpose (tests/mutants) and show which test catches it (~2 min)
	PATH="$(CURDIR)/$(TOOLS)/bin:$$PATH" $(PY) -m tests.mutants

bench: install ## measure takt locally, price it, plan its capacity (docs/CAPACITY.md; ~15 min)
	.venv/bin/takt bench local --stored 10000 --burst 1000 --out bench-local.json
	.venv/bin/takt bench simulate --profile bench-local.json --out capacity.json

lock: $(UV) ## re-resolve uv.lock after changing pyproject.toml
	$(UV) lock

.PHONY: help install install-local local test lint fmt openapi synth chaos mutants bench lock
