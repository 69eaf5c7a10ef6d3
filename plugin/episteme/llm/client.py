"""The model client shared by the wiki writer, the query answerer and the LLM verifier: the
one import path for callers (``from episteme.llm.client import LLMClient, ...``).

``LLMClient(settings)`` is the configured model, whichever API it speaks
(:mod:`episteme.llm.base` holds the interface and what every implementation shares;
:mod:`episteme.llm.anthropic_api` and :mod:`episteme.llm.openai_api` the two protocols).  Why a
wrapper around the SDKs rather than calling them directly: structured output that is checked
(schema + the caller's ``validate``, the error fed back and asked again a bounded number of
times), failures a user can act on (retries with backoff honouring ``retry-after``, one-line
errors naming the server, the model and what it said), cost visibility, and paper text kept as
delimited data (:func:`wrap_untrusted`, :data:`UNTRUSTED_NOTICE`).

Importing this module loads neither SDK: light modules and offline runs never pay for them.
"""

from __future__ import annotations

from . import anthropic_api, openai_api  # noqa: F401 - each registers its provider
from .base import (
    MODEL_PRICES,
    OPENAI_PRICES,
    PRICES_AS_OF,
    UNTRUSTED_NOTICE,
    LLMClient,
    LLMError,
    check_schema,
    estimate_cost,
    format_usage,
    inside_agent,
    llm_mode,
    mode_report,
    model_label,
    model_price,
    wrap_untrusted,
)

__all__ = [
    "LLMClient",
    "LLMError",
    "MODEL_PRICES",
    "OPENAI_PRICES",
    "PRICES_AS_OF",
    "UNTRUSTED_NOTICE",
    "check_schema",
    "estimate_cost",
    "format_usage",
    "inside_agent",
    "llm_mode",
    "mode_report",
    "model_label",
    "model_price",
    "wrap_untrusted",
]
