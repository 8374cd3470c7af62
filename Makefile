# sandproof: `make serve` runs both mocks, `make test` runs everything CI runs.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
STAMP := $(VENV)/.sandproof-installed
NEMO_STAMP := $(VENV)/.nemo-gym-installed
OSS_VENV := .venv-oss
OSS_STAMP := $(OSS_VENV)/.installed
TARGET ?= mock
HYPOTHESIS_PROFILE ?= ci

.PHONY: serve test lint unit bench bench-smoke contracts contracts-mock install linux-deps sdk-matrix clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(VENV)/bin/python
	$(PIP) install --upgrade pip
	$(PIP) install -e '.[dev]'
	touch $@

# NeMo Gym 0.7.0 declares Python >= 3.13.14; its sandbox layer runs on 3.11 (see docs/nemo-gym.md).
$(NEMO_STAMP): $(STAMP)
	$(PIP) install --no-deps --ignore-requires-python nemo-gym==0.7.0
	$(PIP) install PyYAML pydantic omegaconf 'tenacity>=9.1.4' aiohttp
	touch $@

# The real opensandbox-server lives in its own venv: its pins must not move the SDK's.
$(OSS_STAMP):
	$(PYTHON) -m venv $(OSS_VENV)
	$(OSS_VENV)/bin/python -m pip --disable-pip-version-check -q install opensandbox-server==1.1.1
	touch $@

install: $(STAMP) $(NEMO_STAMP) $(OSS_STAMP)

# The linux runtime's tools (and curl and procps for its tests): installed with apt-get when one is missing and
# we are root on a Debian-like machine; otherwise nothing happens and those tests skip, saying why.
LINUX_TOOLS := bwrap nft ip curl ps
LINUX_PACKAGES := bubblewrap nftables iproute2 curl procps
linux-deps:
	@missing=""; for tool in $(LINUX_TOOLS); do command -v $$tool >/dev/null 2>&1 || missing="$$missing $$tool"; done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing$$missing for the linux runtime"; \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $(LINUX_PACKAGES); \
	else \
		echo "linux runtime tools missing:$$missing (not root or no apt-get): its tests will skip"; \
	fi

serve: $(STAMP)
	$(VENV)/bin/sandproof serve

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

unit: install linux-deps
	HYPOTHESIS_PROFILE=$(HYPOTHESIS_PROFILE) $(PY) -m pytest -q --junitxml=reports/junit.xml

bench-smoke: $(STAMP) linux-deps
	$(PY) bench/run_all.py --smoke

# The contract suite against the in-process mocks, with its fidelity report.
contracts-mock: install
	$(VENV)/bin/sandproof check --target mock --profile $(HYPOTHESIS_PROFILE) --report reports/contracts -q
	$(PY) -m tests.mutants --report reports/contracts

test: lint unit contracts-mock bench-smoke

bench: install
	$(PY) bench/run_all.py

contracts: install
	$(VENV)/bin/sandproof check --target $(TARGET)

sdk-matrix: $(STAMP)
	$(PY) -m harness.sdk_matrix

clean:
	rm -rf $(VENV) $(OSS_VENV) reports .mypy_cache .ruff_cache .hypothesis
