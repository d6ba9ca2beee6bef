# The two commands of the README's quick start. Each creates .venv on first use and reuses it.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: parity test bench clean

$(STAMP): pyproject.toml constraints.txt constraints-common.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=23"
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[frameworks,hypothesis,zoo,test]" pytest-xdist
	$(BIN)/python -m pip install --quiet -c constraints.txt --no-deps torchvision transformers mindone timm
	touch $(STAMP)

parity: $(STAMP)
	$(BIN)/python -m pytest --parity cases

test: $(STAMP)
	$(BIN)/python -m pytest -n 2

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_check.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
