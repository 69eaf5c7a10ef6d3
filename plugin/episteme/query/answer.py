"""Step 2 of a query: an answer written from the retrieved wiki sections only, citing them.

Three ways, one contract (the answer text cites section ids as ``[sec_002]``):

* **Claude** (an API key is configured): the sections go into the prompt as delimited untrusted
  data (:func:`episteme.llm.client.wrap_untrusted` + :data:`~episteme.llm.client.UNTRUSTED_NOTICE`), and a
  forced tool call returns the answer plus the ids it used; ids outside the retrieved set are
  rejected and Claude is asked again (``LLMClient.complete_tool``'s validate loop).
* **The agent** (inside Claude Code, no key): the wiki-query skill has the agent write the
  answer itself from ``retrieve.py``'s output, then run ``trace.py``; nothing here runs.
* **Offline**: a deterministic extractive answer (:mod:`episteme.query.answer_offline`): the
  sentences that answer the question, chosen from the retrieved sections *and the passages of
  the papers they point to*, each cited as ``[sec_NNN]`` plus its paper passage, checked by the
  tracer; it abstains, naming the closest topics, when nothing answers.  With no paper stores
  (a wiki without SQLite/Chroma) it falls back to :func:`extractive_answer` on the wiki text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..errors import EpistemeError
from .answer_features import wiki_sentences
from .answer_params import NO_ANSWER

MAX_SECTION_CHARS = 6000  # per section in the prompt: bounded prompt size
EXTRACTIVE_SENTENCES = 3
RELEVANCE_MARGIN = 0.25  # extractive: keep sentences scoring within this of the best one
_CITE = re.compile(r"\[(sec_\d{3,}(?:\s*[,;]\s*sec_\d{3,})*)\]")

SYSTEM_PROMPT = (
    "You answer questions about research papers using ONLY the wiki sections given in the user "
    "message. Every sentence of your answer must be supported by those sections; cite the "
    "section(s) each sentence comes from as [sec_XXX] at the end of the sentence. If the "
    "sections do not contain the answer, say so plainly instead of guessing. Be concise: a few "
    "sentences, no preamble. Answer through the `answer` tool."
)

ANSWER_TOOL = {
    "name": "answer",
    "description": "Return the answer to the question, written from the given wiki sections only.",
    "input_schema": {
        "type": "object",
        "properties": {
            "answer": {"type": "string", "description": "The answer, citing [sec_XXX] ids."},
            "sections_used": {
                "type": "array", "items": {"type": "string"},
                "description": "Ids of the sections the answer relies on.",
            },
        },
        "required": ["answer", "sections_used"],
    },
}


def not_covered(closest_topics: Sequence[str] = ()) -> str:
    """What an answer says when no wiki section is relevant (``retrieve`` reports
    ``covered: false``), naming the closest topics the wiki does have."""
    topics = [t for t in closest_topics if t][:3]
    return NO_ANSWER + (f" The closest topics it has: {'; '.join(topics)}." if topics else "")


def keep_verified(answer_text: str, traced: dict) -> tuple[str, list[str]]:
    """``(answer, dropped)``: the answer without the sentences its own trace rejects
    (contradicted or unsupported claims).  The offline answerer calls it so that it never
    states what the papers contradict or do not say."""
    from ..pdf.passages import split_sentences
    from .trace import strip_citations

    rejected = {" ".join(c["claim"].split()) for c in traced.get("claims", [])
                if c.get("verdict", "supported" if c.get("supported") else "unsupported") != "supported"}
    if not rejected:
        return answer_text, []
    kept, dropped = [], []
    for a, b in split_sentences(answer_text):
        sent = answer_text[a:b]
        bare = " ".join(strip_citations(sent).split())
        if bare and any(bare == r or (len(r) > 20 and (r in bare or bare in r)) for r in rejected):
            dropped.append(bare)
        else:
            kept.append(sent)
    return " ".join(kept).strip(), dropped


def cited_ids(answer: str) -> list[str]:
    """Section ids cited in ``answer`` as ``[sec_002]`` / ``[sec_002, sec_007]``, in order."""
    out: dict[str, None] = {}
    for m in _CITE.finditer(answer or ""):
        for sid in re.split(r"\s*[,;]\s*", m.group(1)):
            out.setdefault(sid.strip(), None)
    return list(out)


def build_messages(question: str, sections: Sequence[dict], max_chars: int = MAX_SECTION_CHARS
                   ) -> tuple[str, list[dict]]:
    """The system prompt and the user turn: question + each section as a delimited block."""
    from ..llm.client import UNTRUSTED_NOTICE, wrap_untrusted

    blocks = []
    for s in sections:
        text = s.get("text", "")[:max_chars]
        body = f"Title: {s.get('title', '')}\nSources: {', '.join(s.get('sources') or [])}\n\n{text}"
        blocks.append(wrap_untrusted(f"{s['id']} | {s.get('page', '')}", body))
    user = (
        f"Question: {question}\n\nWiki sections (cite them by the id in each block's label):\n\n"
        + "\n\n".join(blocks)
    )
    return f"{SYSTEM_PROMPT}\n\n{UNTRUSTED_NOTICE}", [{"role": "user", "content": user}]


def answer_with_claude(settings, question: str, sections: Sequence[dict], *, client=None) -> dict:
    """Claude's answer: ``{"answer", "mode": "claude", "sections_used", "usage"}``."""
    from ..llm.budget import Budget, share
    from ..llm.client import LLMClient

    budget = Budget.for_settings(client.settings if client is not None else settings)
    room = budget.evidence_chars(budget.reply_tokens(1500), SYSTEM_PROMPT, question) - 200 * len(sections)
    n, cap = share([len(s.get("text", "")) for s in sections], room, MAX_SECTION_CHARS, 800)
    sections = list(sections)[:n]  # the best-ranked that fit the model's window (LLM_CONTEXT)
    known = {s["id"] for s in sections}
    if not sections:
        return {"answer": NO_ANSWER, "mode": "claude", "sections_used": []}

    def validate(data: dict) -> None:
        if not str(data.get("answer", "")).strip():
            raise ValueError("the answer is empty")
        bad = [sid for sid in list(data.get("sections_used") or []) + cited_ids(data["answer"])
               if sid not in known]
        if bad:
            raise ValueError(f"cites section ids that were not given: {', '.join(sorted(set(bad)))}; "
                             f"use only {', '.join(sorted(known))}")

    system, messages = build_messages(question, sections, cap)
    own = client is None
    client = client or LLMClient(settings)
    try:
        data = client.complete_tool(system, messages, ANSWER_TOOL, max_tokens=budget.reply_tokens(1500),
                                    validate=validate)
        usage = client.usage_summary()
    finally:
        if own:
            client.close()
    text = str(data["answer"]).strip()
    used = list(dict.fromkeys([*cited_ids(text), *[s for s in data.get("sections_used") or [] if s in known]]))
    return {"answer": text, "mode": "claude", "sections_used": used, "usage": usage, "model": client.label}


def extractive_answer(question: str, sections: Sequence[dict], embedder, *,
                      n: int = EXTRACTIVE_SENTENCES) -> dict:
    """The offline answer: the ``n`` sentences of ``sections`` closest to the question, in
    score order, each followed by its section's citation.  Deterministic."""
    from .text import content_terms

    cands: list[tuple[str, str, int]] = []  # sentence, section id, section rank
    seen: set[str] = set()
    for rank, s in enumerate(sections):
        for sent in wiki_sentences(s.get("text", "")):
            key = sent.lower()
            if key not in seen:
                seen.add(key)
                cands.append((sent, s["id"], rank))
    if not cands:
        return {"answer": NO_ANSWER, "mode": "offline", "sections_used": []}
    qterms = set(content_terms(question))
    lex = [len(qterms & set(content_terms(c[0]))) / (len(qterms) or 1) for c in cands]
    # embed only the most promising sentences: bounded work for long sections
    order = sorted(range(len(cands)), key=lambda i: (-lex[i], cands[i][2], i))[:40]
    vecs = embedder.encode([question] + [cands[i][0] for i in order])
    sims = vecs[1:] @ vecs[0]
    scored = sorted(
        ((float(sims[j]) + 0.5 * lex[i] - 0.02 * cands[i][2], i) for j, i in enumerate(order)),
        key=lambda t: (-t[0], t[1]),
    )
    picked: list[int] = []
    best = scored[0][0]
    for score, i in scored:
        if score < best - RELEVANCE_MARGIN:
            break  # much weaker than the best sentence: filler, not an answer
        words = set(cands[i][0].lower().split())
        if any(len(words & set(cands[j][0].lower().split())) > 0.7 * len(words) for j in picked):
            continue  # near-duplicate of a sentence already chosen
        picked.append(i)
        if len(picked) >= n:
            break
    parts = [f"{cands[i][0].rstrip()} [{cands[i][1]}]" for i in picked]
    used = list(dict.fromkeys(cands[i][1] for i in picked))
    return {"answer": " ".join(parts), "mode": "offline", "sections_used": used}


def answer(settings, question: str, sections: Sequence[dict], *, mode: str = "auto",
           embedder=None, client=None, tracer=None, covered: bool = True,
           offline=None) -> dict:
    """Answer with Claude when ``mode`` is ``claude`` (or ``auto`` with a key), else offline.

    Offline, ``offline`` (an :class:`~episteme.query.answer_offline.OfflineAnswerer`, kept warm by
    the query engine) or ``tracer`` (the paper stores) lets the answer quote the papers the
    sections point to; ``covered`` is retrieval's verdict on whether the wiki covers the
    question at all (false → an honest "not covered" naming the closest topics)."""
    from ..llm.client import llm_mode

    if mode not in ("auto", "claude", "offline"):
        raise EpistemeError(f"unknown answer mode {mode!r} (auto, claude or offline)", exit_code=2)
    use = llm_mode(settings) if mode == "auto" else mode
    if use == "claude":
        return answer_with_claude(settings, question, sections, client=client)
    if embedder is None:
        from ..stores.embedding import get_embedder

        embedder = get_embedder(settings)
    if offline is None and tracer is None:
        tracer = _open_tracer(settings, embedder)
    if offline is None and tracer is not None:
        from .answer_offline import OfflineAnswerer

        offline = OfflineAnswerer(settings, embedder, tracer)
    if offline is not None:
        return offline.answer(question, sections, covered=covered)
    if not covered:
        return {"answer": NO_ANSWER, "mode": "offline", "sections_used": [], "abstained": True}
    return extractive_answer(question, sections, embedder)


def _open_tracer(settings, embedder):
    """The paper stores for an offline answer, or ``None`` when the wiki has none (the answer
    then comes from the wiki text alone)."""
    from .trace import Tracer

    try:
        return Tracer(settings, embedder=embedder)
    except EpistemeError:
        return None
