#!/usr/bin/env bash
# The main job end to end: a fresh wiki, ingest a paper (stores + wiki pages), look at the
# graph, ask a question with traced sources, lint everything.
#   bash examples/demo.sh [VENV] [PDF] [QUESTION]
# Offline by default (extractive writer and answers); set ANTHROPIC_API_KEY to use Claude.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-.venv}
PDF=${2:-examples/sample-paper.pdf}
QUESTION=${3:-${DEMO_QUESTION:-What limits the input length of a sentence embedding model?}}
EP="$VENV/bin/episteme"
# outside the checkout: a local marketplace install copies the whole folder
WIKI=${DEMO_WIKI:-${TMPDIR:-/tmp}/episteme-demo-wiki}

rm -rf "$WIKI"
cp -r wiki "$WIKI"
echo "== ingest $PDF into $WIKI/" >&2
"$EP" ingest "$PDF" --wiki "$WIKI" --write
echo "== hubs of the written wiki" >&2
"$EP" graph --wiki "$WIKI" --mode hubs --limit 8 --format text
echo "== chat: $QUESTION" >&2
"$EP" chat "$QUESTION" --wiki "$WIKI" --format text
echo "== lint (pages, indexes and stores)" >&2
"$EP" lint --wiki "$WIKI" --stores
