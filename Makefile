# The two commands the README documents.  Both set everything up from nothing.
PY ?= python3
VENV ?= .venv
# The dev venv's real folder, outside the checkout: a local marketplace install copies the whole
# checkout (nothing excluded but .git), and skips a symbolic link that points outside it, so
# `.venv` is such a link (made by `make setup` when there is no .venv yet).
VENV_HOME ?= $(HOME)/.cache/episteme/dev-venvs/$(notdir $(CURDIR))-$(shell printf %s "$(CURDIR)" | cksum | cut -d' ' -f1)

.PHONY: setup test test-portable demo lint lock docs docs-check

NPM_PREFIX ?= $(HOME)/.cache/episteme-npm

# The dev venv (with the CPU torch the reference tests need), chromium, and the real Claude Code
# CLI for `claude plugin validate` (cached under $(NPM_PREFIX); skipped when npm is absent).
setup:
	@if [ "$(VENV)" = .venv ] && [ ! -e .venv ] && [ ! -L .venv ]; then \
		mkdir -p "$(VENV_HOME)" && ln -s "$(VENV_HOME)" .venv; fi
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
		tests/test_lint.py tests/test_wiki_model.py tests/test_wikiindex.py tests/test_wikiwrite.py \
		tests/test_wikibatch_hostile.py

# requirements.lock: the user venv's dependency set, pinned for every platform (setup_env.py
# installs it with --no-deps: no resolver).  Run after changing the dependencies in pyproject.toml;
# tests/test_setup_payload.py fails while the lock misses a dependency.
lock:
	$(VENV)/bin/python -m uv pip compile pyproject.toml --extra all --universal --python-version 3.10 \
		--no-emit-package episteme --custom-compile-command "make lock" -q -o requirements.lock

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
