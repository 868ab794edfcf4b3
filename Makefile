# Quickstart: `make report` (the comparison report) and `make test` (lint + test suite).
# Each target creates .venv when it is missing and installs what it needs.
# CI (.ci/run) also runs `make test-oldest` and `make test-newest`: the suite on the oldest
# supported Python with the oldest supported numpy, and on the newest with the newest.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HYPOTHESIS_PROFILE ?= ci
# pytest-xdist workers: the suite's subprocess and browser tests wait, so two share 2 CPUs well.
PYTEST_WORKERS ?= 2
PYTEST_ARGS := -n $(PYTEST_WORKERS)

# The version matrix. The floors are pyproject.toml's; pyenv keeps the Pythons on this project's
# machines (set OLDEST_PYTHON / NEWEST_PYTHON to use others).
PYENV_VERSIONS := $(or $(PYENV_ROOT),$(HOME)/.pyenv)/versions
OLDEST_PYTHON ?= $(lastword $(sort $(wildcard $(PYENV_VERSIONS)/3.11.*/bin/python)))
NEWEST_PYTHON ?= $(lastword $(sort $(wildcard $(PYENV_VERSIONS)/3.13.*/bin/python)))
OLDEST_PINS := "numpy==2.2.*" "attrs==23.1.*" "xxhash==3.4.*"
VENVS := .venvs

.PHONY: test test-oldest test-newest report lint bench clean

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
	$(PY) -m mypy

test: lint
	HYPOTHESIS_PROFILE=$(HYPOTHESIS_PROFILE) $(PY) -m pytest $(PYTEST_ARGS)

# Python 3.11, numpy 2.2, attrs 23.1, xxhash 3.4: the checkout installed editable, so the suite tests it.
$(VENVS)/oldest/.installed: pyproject.toml
	@test -x "$(OLDEST_PYTHON)" || { echo "no Python 3.11 found: set OLDEST_PYTHON"; exit 1; }
	rm -rf $(VENVS)/oldest
	$(OLDEST_PYTHON) -m venv $(VENVS)/oldest
	$(VENVS)/oldest/bin/python -m pip install --quiet --upgrade pip
	$(VENVS)/oldest/bin/python -m pip install --quiet $(OLDEST_PINS) -e '.[test]'
	touch $@

test-oldest: $(VENVS)/oldest/.installed
	$(VENVS)/oldest/bin/python -c "import sys, numpy; print('Python', sys.version.split()[0], 'numpy', numpy.__version__)"
	HYPOTHESIS_PROFILE=$(HYPOTHESIS_PROFILE) $(VENVS)/oldest/bin/python -m pytest $(PYTEST_ARGS)

# Python 3.13 and the newest numpy, with mutagrad installed from the wheel built now (as a
# user installs it), so the suite tests the package, not the checkout.
$(VENVS)/newest/.installed: pyproject.toml
	@test -x "$(NEWEST_PYTHON)" || { echo "no Python 3.13 found: set NEWEST_PYTHON"; exit 1; }
	rm -rf $(VENVS)/newest
	$(NEWEST_PYTHON) -m venv $(VENVS)/newest
	$(VENVS)/newest/bin/python -m pip install --quiet --upgrade pip
	$(VENVS)/newest/bin/python -m pip install --quiet --upgrade numpy '.[test]'
	touch $@

test-newest: $(VENVS)/newest/.installed
	rm -rf $(VENVS)/dist
	$(VENVS)/newest/bin/python -m pip wheel --quiet --no-deps --wheel-dir $(VENVS)/dist .
	$(VENVS)/newest/bin/python -m pip install --quiet --force-reinstall --no-deps $(VENVS)/dist/mutagrad-*.whl
	$(VENVS)/newest/bin/python -c "import sys, numpy, mutagrad; print('Python', sys.version.split()[0], 'numpy', numpy.__version__, 'mutagrad from', mutagrad.__file__)"
	HYPOTHESIS_PROFILE=$(HYPOTHESIS_PROFILE) $(VENVS)/newest/bin/python -m pytest $(PYTEST_ARGS)

report: $(VENV)/.installed-report
	$(PY) -m mutagrad report

bench: $(VENV)/.installed-test
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) $(VENVS) build src/*.egg-info .pytest_cache .hypothesis .ruff_cache .mypy_cache mutagrad-report
