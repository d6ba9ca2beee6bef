# The README's quick start is `make parity` and `make test`; each creates .venv on first use and
# reuses it.
#   make parity     the bundled parity catalogue (cases/)
#   make test       the test suite
#   make test-core  only the tests that need no framework (CORE_TESTS), in .venv-core, where neither
#                   MindSpore nor PyTorch is installed: about 20 s, for changes to the judge, the
#                   registry, the records and the report page
#   make test-slow  only the tests marked slow (make test skips them, saying so)
#   make test-perturbed  the test suite as on another CPU: every MindSpore pass parity runs moved by
#                   4 ulps (PARITY_TEST_PERTURB_ULPS), so a test that leans on this CPU's rounding fails here
#   make lint       ruff's lint and format check, then mypy (CI runs it first)
#   make docs       the documentation site (docs/, Sphinx + MyST + furo) into docs/_build/html, with
#                   warnings as errors and every cross-reference checked
#   make bench      the benchmark (benchmarks/)
#   make opinfo     translate and check every operator of PyTorch's OpInfo database, regenerating
#                   docs/reference/translation-coverage.md (benchmarks/opinfo_sweep.py)
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CORE_VENV := .venv-core
CORE_BIN := $(CORE_VENV)/bin
CORE_STAMP := $(CORE_VENV)/.installed
# The framework-free tier: tests/conftest.py's FRAMEWORK_FREE names the same folders.
CORE_TESTS := tests/engine tests/judge tests/nightly tests/plugin tests/registry tests/tools

.PHONY: parity test test-slow test-perturbed test-core lint docs bench opinfo clean

$(STAMP): pyproject.toml constraints.txt constraints-common.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=23"
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[frameworks,hypothesis,zoo,test,lint,docs]" pytest-xdist
	$(BIN)/python -m pip install --quiet -c constraints.txt --no-deps torchvision transformers mindone timm
	touch $(STAMP)

# The package and what the tests use (pytest, Hypothesis, xdist, playwright), pinned as for .venv,
# but neither framework: the constraints pin their versions and install neither.
$(CORE_STAMP): pyproject.toml constraints.txt constraints-common.txt
	test -x $(CORE_BIN)/python || $(PYTHON) -m venv $(CORE_VENV)
	$(CORE_BIN)/python -m pip install --quiet --upgrade "pip>=23"
	$(CORE_BIN)/python -m pip install --quiet -c constraints.txt -e ".[hypothesis,test]" pytest-xdist
	touch $(CORE_STAMP)

parity: $(STAMP)
	$(BIN)/python -m pytest --parity cases

test: $(STAMP)
	$(BIN)/python -m pytest -n 2

# pytest's exit status 5 is "no test collected": none is marked slow.
test-slow: $(STAMP)
	$(BIN)/python -m pytest -n 2 --run-slow -m slow || test $$? -eq 5

test-perturbed: $(STAMP)
	PARITY_TEST_PERTURB_ULPS=4 $(BIN)/python -m pytest -n 2

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

docs: $(STAMP)
	$(BIN)/python -m sphinx -W -n --keep-going -q -b html docs docs/_build/html

test-core: $(CORE_STAMP)
	@$(CORE_BIN)/python -c "import importlib.util, sys; \
		found = [n for n in ('mindspore', 'torch') if importlib.util.find_spec(n)]; \
		found and sys.exit('$(CORE_VENV) can import ' + ' and '.join(found) + ': the framework-free' \
		' tests run without either (make clean, then make test-core)')"
	$(CORE_BIN)/python -m pytest $(CORE_TESTS)

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_check.py

opinfo: $(STAMP)
	$(BIN)/python benchmarks/opinfo_sweep.py --modules all --table docs/reference/translation-coverage.md

clean:
	rm -rf $(VENV) $(CORE_VENV) build dist docs/_build *.egg-info .pytest_cache .mypy_cache .ruff_cache
