# The two commands of the README. Each creates .venv if missing and installs the project into it.
VENV ?= .venv
PY := $(VENV)/bin/python
# Real data: $FSSL_DATA if set, else the shared offline copy beside the checkout, else ./data.
export FSSL_DATA ?= $(if $(wildcard ../shared/data),$(abspath ../shared/data),$(CURDIR)/data)
# No PROFILE: rebuild every notebook, table, claim and figure of the published profiles (paper, quick) from the
# committed records (nothing trained; a rebuild that would move a published value fails naming it), then verify
# (every record proven, a random sample retrained within VERIFY_MINUTES, the claims said in words).
# PROFILE=quick|paper|headline|smoke: plan and train that profile's runs, then its notebooks.
PROFILE ?=
VERIFY_MINUTES ?= 6

.PHONY: reproduce test

$(VENV)/.installed: pyproject.toml
	@echo "[make] installing fssl_core and its dependencies into $(VENV) (once: several minutes, torch's CUDA build is several GB)"
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

reproduce: $(VENV)/.installed
ifeq ($(PROFILE),)
	$(PY) -m fssl_core reproduce --profile paper --from-records
	$(PY) -m fssl_core reproduce --profile quick --from-records
	$(PY) -m fssl_core verify --minutes $(VERIFY_MINUTES)
else
	$(PY) -m fssl_core reproduce --profile $(PROFILE)
endif

test: $(VENV)/.installed
	$(PY) -m pytest -q -rs
