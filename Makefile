# The two commands the README documents.  Both set everything up from nothing.
PY ?= python3
VENV ?= .venv

.PHONY: setup test test-portable demo lint docs docs-check

NPM_PREFIX ?= $(HOME)/.cache/episteme-npm

# The dev venv (with the CPU torch the reference tests need), chromium, and the real Claude Code
# CLI for `claude plugin validate` (cached under $(NPM_PREFIX); skipped when npm is absent).
setup:
	$(PY) plugin/scripts/setup_env.py --dev --browser --venv $(VENV)
	@if command -v npm >/dev/null 2>&1 && [ ! -x $(NPM_PREFIX)/node_modules/.bin/claude ]; then \
		npm install --prefix $(NPM_PREFIX) --no-audit --no-fund @anthropic-ai/claude-code; fi

# Set up (venv, dependencies, embedding model, chromium) and run the whole test suite.
test: setup
	$(VENV)/bin/python -m ruff check plugin tests benchmarks tools
	PYTHONPATH=plugin $(VENV)/bin/python tools/docs_check.py --check
	PYTHONPATH=plugin $(VENV)/bin/lint-imports
	$(VENV)/bin/python -m pytest -n 2 -q
	$(MAKE) test-portable

# The light suite (graph, lint, wiki writes) as on Windows: no fcntl, no os.fork (see
# tests/helpers/no_fork_no_fcntl); tests/test_portable.py compares its answers with Linux's.
test-portable:
	PYTHONPATH=tests/helpers/no_fork_no_fcntl:plugin $(VENV)/bin/python -m pytest -q -p no:xdist \
		tests/test_graph.py tests/test_graph_lean.py tests/test_pages.py tests/test_querylang.py \
		tests/test_lint.py tests/test_wiki_model.py tests/test_wikiindex.py tests/test_wikiwrite.py

# The main job end to end: ingest the shipped sample paper into a fresh wiki, then ask it.
demo:
	$(PY) plugin/scripts/setup_env.py --venv $(VENV)
	bash examples/demo.sh $(VENV)

# Docs that cannot drift (tools/docs_check.py): rerun the commands README.md and the skills
# show and rewrite their output.  `make test` runs the fast `--check`; `docs` also reruns the
# ingest and chat examples (about 30 s) and rewrites examples/demo-wiki from a fresh ingest.
docs:
	PYTHONPATH=plugin $(VENV)/bin/python tools/docs_check.py --slow

docs-check:
	PYTHONPATH=plugin $(VENV)/bin/python tools/docs_check.py --check --slow
