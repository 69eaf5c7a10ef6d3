# The two commands the README documents.  Both set everything up from nothing.
PY ?= python3
VENV ?= .venv

.PHONY: setup test demo lint

NPM_PREFIX ?= $(HOME)/.cache/episteme-npm

# The dev venv (with the CPU torch the reference tests need), chromium, and the real Claude Code
# CLI for `claude plugin validate` (cached under $(NPM_PREFIX); skipped when npm is absent).
setup:
	$(PY) plugin/scripts/setup_env.py --dev --browser --venv $(VENV)
	@if command -v npm >/dev/null 2>&1 && [ ! -x $(NPM_PREFIX)/node_modules/.bin/claude ]; then \
		npm install --prefix $(NPM_PREFIX) --no-audit --no-fund @anthropic-ai/claude-code; fi

# Set up (venv, dependencies, embedding model, chromium) and run the whole test suite.
test: setup
	$(VENV)/bin/python -m ruff check plugin tests benchmarks
	$(VENV)/bin/python -m pytest -n 2 -q

# The main job end to end: ingest the shipped sample paper into a fresh wiki, then ask it.
demo:
	$(PY) plugin/scripts/setup_env.py --venv $(VENV)
	bash examples/demo.sh $(VENV)
