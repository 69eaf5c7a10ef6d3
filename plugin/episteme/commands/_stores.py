"""Options shared by the commands that touch the stores (ingest, remove, rebuild)."""

from __future__ import annotations

from ..cliutil import ArgumentParser


def add_store_options(p: ArgumentParser) -> None:
    p.add_argument("--wiki", default=None, help="the wiki folder (default: $WIKI_PATH or ./wiki)")
    p.add_argument("--sqlite-path", default=None, help="SQLite file (default: <wiki>/.episteme/sections.db)")
    p.add_argument("--chroma-path", default=None, help="Chroma folder (default: <wiki>/.episteme/chroma)")
    p.add_argument("--chroma-host", default=None, help="use a Chroma server at this host")
    p.add_argument("--chroma-port", type=int, default=None, help="the Chroma server's port (default 8000)")
    p.add_argument("--embedding-model", default=None,
                   help="embedding model (default all-MiniLM-L6-v2; or a sentence-transformers path)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars on stderr")


def add_model_options(p: ArgumentParser) -> None:
    """The model flags (the commands that call a model: chat, trace, ingest, serve, doctor);
    each overrides its ``LLM_*`` variable."""
    p.add_argument("--llm-provider", choices=("anthropic", "openai"), default=None,
                   help="the model API: anthropic (Claude) or openai (any OpenAI-compatible server, "
                        "local ones too) (default: $LLM_PROVIDER, else anthropic)")
    p.add_argument("--llm-model", default=None, help="the model name (default: $LLM_MODEL)")
    p.add_argument("--llm-base-url", default=None,
                   help="the server's URL, e.g. http://localhost:11434/v1 (default: $LLM_BASE_URL)")
    p.add_argument("--llm-context", type=int, default=None,
                   help="the model's context window in tokens: bounds the evidence per call "
                        "(default: $LLM_CONTEXT, else 200000 for Claude, 8192 for a local server)")


def settings_from_args(args):
    from ..config import load_settings

    return load_settings(
        args.wiki,
        sqlite_path=args.sqlite_path,
        chroma_path=args.chroma_path,
        chroma_host=args.chroma_host,
        chroma_port=args.chroma_port,
        embedding_model=args.embedding_model,
        llm_provider=getattr(args, "llm_provider", None),
        llm_model=getattr(args, "llm_model", None),
        llm_base_url=getattr(args, "llm_base_url", None),
        llm_context=getattr(args, "llm_context", None),
    )
