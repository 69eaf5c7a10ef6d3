"""One place for configuration: flags > environment > ``.env`` in the working directory > defaults.

Defaults keep every derived store inside the wiki (``<wiki>/.episteme/``) so that one wiki folder
is self-contained: move or back it up as one.  Standard library only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from .wiki.files import DATA_DIR

DEFAULT_LLM_MODEL = "claude-sonnet-5-5"
#: ``LLM_PROVIDER`` values: the Anthropic Messages API, or any server speaking OpenAI's Chat
#: Completions API (OpenAI itself, Ollama, llama.cpp's server, vLLM, LM Studio, LiteLLM).
LLM_PROVIDERS = ("anthropic", "openai")
DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"


def read_dotenv(path: str | os.PathLike = ".env") -> dict[str, str]:
    """Parse a simple ``KEY=value`` file (``#`` comments, optional quotes, ``export`` prefix)."""
    values: dict[str, str] = {}
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return values
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        if line.startswith("export "):
            line = line[7:].lstrip()
        key, _, value = line.partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        elif " #" in value:
            value = value.split(" #", 1)[0].rstrip()
        values[key.strip()] = value
    return values


@dataclass(frozen=True)
class Settings:
    """Resolved settings.  Paths are absolute."""

    wiki: Path
    sqlite_path: Path
    chroma_path: Path
    chroma_host: str | None = None
    chroma_port: int | None = None
    api_key: str | None = None
    llm_model: str = DEFAULT_LLM_MODEL
    llm_base_url: str | None = None
    #: ``LLM_PROVIDER`` as given (``None``: not set, which means Anthropic when a key is set and
    #: the offline mode otherwise); see :attr:`provider`
    llm_provider: str | None = None
    #: ``LLM_CONTEXT``: the model's context window in tokens (``None``: the provider's default,
    #: :data:`episteme.llm.budget.DEFAULT_CONTEXT`); bounds the evidence sent per call
    llm_context: int | None = None
    embedding_model: str = DEFAULT_EMBEDDING_MODEL
    max_pdf_bytes: int = 50 * 1024 * 1024
    max_pages: int = 200
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def provider(self) -> str:
        """The model API in use: ``LLM_PROVIDER``, else ``anthropic``."""
        return self.llm_provider or "anthropic"

    @property
    def data_dir(self) -> Path:
        """``<wiki>/.episteme``: derived state (stores, lock, caches)."""
        return self.wiki / DATA_DIR

    @property
    def raw_dir(self) -> Path:
        return self.wiki / "raw"

    def with_(self, **changes) -> Settings:
        return replace(self, **changes)


def load_settings(
    wiki: str | os.PathLike | None = None,
    *,
    env: dict[str, str] | None = None,
    dotenv: str | os.PathLike | None = ".env",
    **overrides,
) -> Settings:
    """Resolve settings.  ``overrides`` (from CLI flags) win when not ``None``."""
    merged: dict[str, str] = {}
    if dotenv:
        merged.update(read_dotenv(dotenv))
    merged.update(os.environ if env is None else env)

    def get(key: str) -> str | None:
        v = merged.get(key)
        return v if v not in (None, "") else None

    wiki_path = Path(wiki or get("WIKI_PATH") or "wiki").expanduser().resolve()
    data = wiki_path / DATA_DIR
    sqlite_path = Path(overrides.pop("sqlite_path", None) or get("SQLITE_PATH") or data / "sections.db")
    chroma_path = Path(overrides.pop("chroma_path", None) or get("CHROMA_PATH") or data / "chroma")
    port = overrides.pop("chroma_port", None) or get("CHROMA_PORT")
    provider = (overrides.pop("llm_provider", None) or get("LLM_PROVIDER") or "").strip().lower() or None
    if provider is not None and provider not in LLM_PROVIDERS:
        from .errors import UsageError

        raise UsageError(f"LLM_PROVIDER must be one of {', '.join(LLM_PROVIDERS)}, got {provider!r}")
    if (provider is None and (overrides.get("llm_base_url") or get("LLM_BASE_URL")) and not overrides.get("api_key")
            and not get("LLM_API_KEY") and not get("ANTHROPIC_API_KEY")):
        provider = "openai"  # a server URL and no key: a local OpenAI-compatible server
    # each provider's own variables as fallbacks: an Anthropic key is never sent to another server
    own = "OPENAI" if provider == "openai" else "ANTHROPIC"
    context = overrides.pop("llm_context", None) or get("LLM_CONTEXT")
    try:
        context_tokens = int(context) if context else None
    except ValueError:
        from .errors import UsageError

        raise UsageError(f"LLM_CONTEXT must be a number of tokens, got {context!r}") from None
    if context_tokens is not None and context_tokens < 1024:
        from .errors import UsageError

        raise UsageError(f"LLM_CONTEXT must be at least 1024 tokens, got {context_tokens}")
    values = dict(
        wiki=wiki_path,
        sqlite_path=sqlite_path.expanduser().resolve(),
        chroma_path=chroma_path.expanduser().resolve(),
        chroma_host=overrides.pop("chroma_host", None) or get("CHROMA_HOST"),
        chroma_port=int(port) if port else None,
        api_key=overrides.pop("api_key", None) or get("LLM_API_KEY") or get(f"{own}_API_KEY"),
        llm_model=overrides.pop("llm_model", None) or get("LLM_MODEL")
        or (DEFAULT_LLM_MODEL if provider in (None, "anthropic") else ""),
        llm_base_url=overrides.pop("llm_base_url", None) or get("LLM_BASE_URL") or get(f"{own}_BASE_URL"),
        llm_provider=provider,
        llm_context=context_tokens,
        embedding_model=overrides.pop("embedding_model", None)
        or get("EMBEDDING_MODEL")
        or DEFAULT_EMBEDDING_MODEL,
        max_pdf_bytes=int(overrides.pop("max_pdf_bytes", None) or get("EPISTEME_MAX_PDF_BYTES") or 50 * 1024 * 1024),
        max_pages=int(overrides.pop("max_pages", None) or get("EPISTEME_MAX_PAGES") or 200),
    )
    values.update({k: v for k, v in overrides.items() if v is not None})
    return Settings(**values)
