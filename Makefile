# The two commands of the README's quick start, and `make lint` (what CI runs first: ruff's lint and
# format check, then mypy). Each creates .venv on first use and reuses it.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: parity test lint bench clean

$(STAMP): pyproject.toml constraints.txt constraints-common.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=23"
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[frameworks,hypothesis,zoo,test,lint]" pytest-xdist
	$(BIN)/python -m pip install --quiet -c constraints.txt --no-deps torchvision transformers mindone timm
	touch $(STAMP)

parity: $(STAMP)
	$(BIN)/python -m pytest --parity cases

test: $(STAMP)
	$(BIN)/python -m pytest -n 2

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_check.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
