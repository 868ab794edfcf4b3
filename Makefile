# Quickstart: `make report` (the comparison report) and `make test` (lint + test suite).
# Each target creates .venv when it is missing and installs what it needs.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HYPOTHESIS_PROFILE ?= ci

.PHONY: test report lint bench clean

$(VENV)/.installed-test: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

$(VENV)/.installed-report: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[report]'
	touch $@

lint: $(VENV)/.installed-test
	$(PY) -m ruff check .

test: lint
	HYPOTHESIS_PROFILE=$(HYPOTHESIS_PROFILE) $(PY) -m pytest

report: $(VENV)/.installed-report
	$(PY) -m mutagrad report

bench: $(VENV)/.installed-test
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache .hypothesis .ruff_cache mutagrad-report
