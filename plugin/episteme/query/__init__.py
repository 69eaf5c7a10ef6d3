"""Answering from the wiki: retrieval over wiki sections, the tracer and verifier that check each
claim against the papers' passages, the answerers (offline and Claude) and chat."""
