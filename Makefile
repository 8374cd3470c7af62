# sandproof: `make serve` runs both mocks, `make test` runs everything CI runs.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
STAMP := $(VENV)/.sandproof-installed
BASE_STAMP := $(VENV)/.sandproof-base-installed
NEMO_STAMP := $(VENV)/.nemo-gym-installed
OSS_VENV := .venv-oss
OSS_STAMP := $(OSS_VENV)/.installed
CLIENTS_VENV := .venv-clients
CLIENTS_STAMP := $(CLIENTS_VENV)/.installed
CLIENTS_JS := tests/clients/js
NODE_DIR := .cache/node
NODE_STAMP := $(NODE_DIR)/.installed
TARGET ?= mock
CHROMIUM ?= /usr/bin/chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
HYPOTHESIS_PROFILE ?= ci

.PHONY: serve test lint unit bench bench-smoke contracts contracts-mock contracts-real differential install system-deps sdk-matrix clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(VENV)/bin/python
	$(PIP) install --upgrade pip
	$(PIP) install -e '.[dev]'
	touch $@ $(BASE_STAMP)

# Serving needs only the base install (starlette, uvicorn, httpx, ...), not the dev toolchain.
$(BASE_STAMP): pyproject.toml | $(VENV)/bin/python
	$(PIP) install -e .
	touch $@

# NeMo Gym 0.7.0 declares Python >= 3.13.14; its sandbox layer runs on 3.11 (see docs/sources/reference/nemo-gym.md).
$(NEMO_STAMP): $(STAMP)
	$(PIP) install --no-deps --ignore-requires-python nemo-gym==0.7.0
	$(PIP) install PyYAML pydantic omegaconf 'tenacity>=9.1.4' aiohttp
	touch $@

# The real opensandbox-server lives in its own venv: its pins must not move the SDK's.
$(OSS_STAMP):
	$(PYTHON) -m venv $(OSS_VENV)
	$(OSS_VENV)/bin/python -m pip --disable-pip-version-check -q install opensandbox-server==1.1.1
	touch $@

# The osb CLI and opensandbox-mcp (tests/clients) live in a venv of their own: opensandbox-mcp needs starlette >= 1.3
# and mcp 2, which must not move the project's pins.
$(CLIENTS_STAMP):
	$(PYTHON) -m venv $(CLIENTS_VENV)
	$(CLIENTS_VENV)/bin/python -m pip --disable-pip-version-check -q install opensandbox-cli==1.1.1 opensandbox-mcp==1.1.1
	touch $@

# Node 22 (the TypeScript tensorlake SDK needs >= 22) and the TypeScript SDKs, from the npm registry, pinned by
# tests/clients/js/package-lock.json, under .cache/node. Without npm or the registry nothing fails: the stamp stays
# unwritten and the TypeScript client tests skip, saying why.
$(NODE_STAMP): $(CLIENTS_JS)/package.json $(CLIENTS_JS)/package-lock.json
	@mkdir -p $(NODE_DIR)
	@if ! command -v npm >/dev/null 2>&1; then \
		echo "no npm: the TypeScript client tests (tests/clients) skip"; \
	elif cp $(CLIENTS_JS)/package.json $(CLIENTS_JS)/package-lock.json $(NODE_DIR)/ && \
		(cd $(NODE_DIR) && npm ci --no-audit --no-fund --loglevel=error >/dev/null); then \
		touch $@; \
	else \
		echo "npm ci failed (no registry?): the TypeScript client tests (tests/clients) skip"; \
	fi

# The project's venv, the real server's and the clients' are independent: they install side by side. The project's
# own modules are byte-compiled too: with PYTHONDONTWRITEBYTECODE set (as in the Dockerfile) every process (each
# xdist worker, each served mock a test starts) would otherwise compile them from source again; Python still
# checks each source's time stamp, so an edited module is compiled afresh.
install:
	@$(MAKE) --no-print-directory -j2 $(STAMP) $(NEMO_STAMP) $(OSS_STAMP) $(CLIENTS_STAMP) $(NODE_STAMP)
	@$(PY) -m compileall -q mockserver harness sandproof contracts tests bench > /dev/null

# Debian packages the suite drives for real: Chromium for the dashboard test (never a downloaded browser) and
# the linux runtime's tools (bubblewrap, nftables, iproute2; curl, procps and ping for its tests). Installed
# with one `apt-get update` when one is missing and we can (root or sudo, apt-get present); otherwise nothing
# happens and the tests that need them say why they skip.
SYSTEM_TOOLS := $(CHROMIUM):chromium bwrap:bubblewrap nft:nftables ip:iproute2 curl:curl ps:procps ping:iputils-ping
system-deps:
	@missing=""; for pair in $(SYSTEM_TOOLS); do tool=$${pair%%:*}; pkg=$${pair##*:}; \
		command -v $$tool >/dev/null 2>&1 || [ -x "$$tool" ] || missing="$$missing $$pkg"; done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if command -v apt-get >/dev/null 2>&1 && { [ "$$(id -u)" = 0 ] || command -v sudo >/dev/null 2>&1; }; then \
		echo "installing$$missing"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	else \
		echo "missing system packages:$$missing (no apt-get, or not root): the tests that need them skip"; \
	fi

# `make serve ARGS="--runtime linux --tensorlake-port 9000"`: any `sandproof serve` options (sandproof serve --help).
ARGS ?=
serve: $(BASE_STAMP)
	$(VENV)/bin/sandproof serve $(ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

# The unit suite on every core (pytest-xdist). Tests marked `catalogue` re-judge the mutants of tests/mutants one by
# one; `make contracts-mock` judges the whole catalogue (and fails on a survivor), so `make test` runs them once.
# UNIT_ARGS= runs everything in one process.
UNIT_ARGS ?= -n auto --dist worksteal -m "not catalogue"
unit: install system-deps
	SANDPROOF_CHROMIUM=$(CHROMIUM) SANDPROOF_REQUIRE_CHROMIUM=1 HYPOTHESIS_PROFILE=$(HYPOTHESIS_PROFILE) \
		$(PY) -m pytest -q $(UNIT_ARGS) --junitxml=reports/junit.xml

bench-smoke: $(STAMP) system-deps
	$(PY) bench/run_all.py --smoke

# The contract suite against the in-process mocks, with its fidelity report.
# The suite and the mutation report are independent: they run side by side, the report judging its mutants in two
# worker processes (tests.mutants --jobs 2); its output is printed after the suite's.
contracts-mock: install
	@mkdir -p reports/contracts
	@$(PY) -m tests.mutants --jobs 2 --report reports/contracts > reports/contracts/mutants.log 2>&1 & mutants=$$!; \
	$(VENV)/bin/sandproof check --target mock --profile $(HYPOTHESIS_PROFILE) --report reports/contracts -q; suite=$$?; \
	wait $$mutants; report=$$?; cat reports/contracts/mutants.log; \
	test $$suite -eq 0 && test $$report -eq 0

# The OpenSandbox contract suite against the real opensandbox-server 1.1.1 (.venv-oss) on the fake Docker Engine API,
# each sandbox's execd served by a sandbox of its own in sandproof's mock (docs/real-opensandbox-server.md). What
# cannot be judged there (no egress sidecar, no admin API) skips with its reason; the summary counts passed, skipped
# and documented deviations by strength. Two concurrency clients and the dev profile (20 examples a state machine)
# keep it short: it confirms a right implementation passes; the mock stage is the thorough one.
REAL_CONCURRENCY ?= 2
REAL_PROFILE ?= dev
contracts-real: install
	@mkdir -p reports/contracts-real
	$(PY) -m harness.differential.serve_real --check --profile $(REAL_PROFILE) \
		--concurrency $(REAL_CONCURRENCY) --report reports/contracts-real -q

test: lint unit contracts-mock contracts-real bench-smoke

# The randomized differential on a large budget: seeded Hypothesis programs sent to the real opensandbox-server
# 1.1.1 (on the fake Docker API) and to the OpenSandbox mock; progress, a summary, and exit 1 on any divergence
# no deviation explains. `make test` runs a small budget of the same campaign (tests/harness/differential/test_runner.py).
DIFF_STEPS ?= 2000
DIFF_SEED ?= 20260101
differential: install
	$(PY) -m harness.differential.campaign --steps $(DIFF_STEPS) --seed $(DIFF_SEED)

bench: install
	$(PY) bench/run_all.py

contracts: install
	$(VENV)/bin/sandproof check --target $(TARGET)

sdk-matrix: $(STAMP)
	$(PY) -m harness.sdk_matrix

clean:
	rm -rf $(VENV) $(OSS_VENV) $(CLIENTS_VENV) $(NODE_DIR) reports .mypy_cache .ruff_cache .hypothesis
