# rdpcalc — set-up and everyday commands.
#   make test      create .venv (unless a virtualenv is active), install with the dev, fl and distributed extras, run pytest
#   make figures   install, then regenerate every figure under figures/
#   make bench     install, then run the benchmarks (bench/results.md)
#   make lint      ruff, and the import contract (imports point down the floors: README "Architecture")

ifdef VIRTUAL_ENV
PYTHON := $(VIRTUAL_ENV)/bin/python
else
PYTHON := .venv/bin/python
endif
STAMP := $(dir $(PYTHON)).rdpcalc-installed

.PHONY: install test test-all figures bench lint clean

$(PYTHON):
	python3 -m venv .venv

$(STAMP): pyproject.toml | $(PYTHON)
	$(PYTHON) -m pip install --quiet --upgrade pip
	$(PYTHON) -m pip install --quiet -e '.[dev,fl,distributed]'
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(PYTHON) -m pytest -q

test-all: $(STAMP)
	RDPCALC_SLOW=all $(PYTHON) -m pytest -q

figures: $(STAMP)
	$(PYTHON) -m rdpcalc figures all --out figures
	$(PYTHON) -m rdpcalc claims --markdown figures/claims.md > /dev/null

bench: $(STAMP)
	$(PYTHON) bench/run.py

lint: $(STAMP)
	$(PYTHON) -m ruff check rdpcalc tests bench
	$(dir $(PYTHON))lint-imports --no-cache

clean:
	rm -rf .venv build *.egg-info .pytest_cache
