# The two commands of the README. Each creates .venv if missing and installs the project into it.
VENV ?= .venv
PY := $(VENV)/bin/python
# Real data: $FSSL_DATA if set, else the shared offline copy beside the checkout, else ./data.
export FSSL_DATA ?= $(if $(wildcard ../shared/data),$(abspath ../shared/data),$(CURDIR)/data)
PROFILE ?= headline

.PHONY: reproduce test

$(VENV)/.installed: pyproject.toml
	@echo "[make] installing fssl_core and its dependencies into $(VENV) (once: several minutes, torch's CUDA build is several GB)"
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

reproduce: $(VENV)/.installed
	$(PY) -m fssl_core reproduce --profile $(PROFILE)

test: $(VENV)/.installed
	$(PY) -m pytest -q -rs
