# The two commands the README documents.  Both set everything up from nothing.
PY ?= python3
VENV ?= .venv

.PHONY: setup test demo lint

setup:
	$(PY) plugin/scripts/setup_env.py --dev --browser --venv $(VENV)

# Set up (venv, dependencies, embedding model, chromium) and run the whole test suite.
test: setup
	$(VENV)/bin/python -m ruff check plugin tests benchmarks
	$(VENV)/bin/python -m pytest -n 2 -q

# The main job end to end: ingest the shipped sample paper into a fresh wiki, then ask it.
demo:
	$(PY) plugin/scripts/setup_env.py --venv $(VENV)
	bash examples/demo.sh $(VENV)
