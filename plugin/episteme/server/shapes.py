"""The JSON shapes the server builds itself (``TypedDict``: the routes return plain dicts, so
``/openapi.json`` and every response are what they were; the types say, for a reader and a type
checker, which keys a client can count on).  The answer and trace results are the query
package's own (``episteme.query``); they pass through here with only what the server adds.

Standard library only: :mod:`.jobs` and :mod:`.wikiview` are imported without FastAPI.
"""

from typing import Any, TypedDict


class JobProgress(TypedDict):
    """Where a job is: ``done``/``total`` in ``unit`` (passages while embedding, sections while
    writing), and the paper's sections done so far in either phase."""

    phase: str
    done: int
    total: int
    unit: str
    sections_done: int
    sections_total: int | None


class _JobKeys(TypedDict):
    job: str
    kind: str
    paper: str
    status: str  # queued | running | done | failed | cancelled
    progress: JobProgress
    created_at: str | None
    started_at: str | None
    finished_at: str | None


class JobJSON(_JobKeys, total=False):
    """``GET /jobs/{id}`` (and each entry of ``GET /jobs``): the keys above always, these
    when they apply (Python 3.10 has no ``NotRequired``)."""

    batch: str
    file: str
    seconds: float
    result: dict[str, Any]
    error: str | None
    http_status: int | None
    details: Any


class SectionRef(TypedDict):
    """A wiki section an answer used, and the page it lives on (from ``index.md``)."""

    id: str
    page: str | None
    description: str | None


class PageSummary(TypedDict):
    """One entry of ``GET /wiki``."""

    page: str
    title: str
    type: str | None
    tags: list[str]
    links: int


class LinkRecord(TypedDict):
    """A ``[[link]]`` of a page or answer as the UI renders it (:mod:`.pageview`)."""

    raw: str
    kind: str  # link | embed | self
    target: str
    anchor: str
    page: str | None
    display: str
    plain: str
    dangling: bool


class PageView(TypedDict):
    """A page's text with every link replaced by a token naming its record in ``links``."""

    preamble: str
    sections: list[dict[str, str]]  # {id, title, body}
    body: str
    links: list[LinkRecord]


class AnswerView(TypedDict):
    """An answer's text as the UI renders it."""

    text: str
    links: list[LinkRecord]


class PageSection(TypedDict):
    """One section of a page, as ``GET /wiki/{page}`` lists it."""

    id: str
    title: str
    level: int
    description: str
    sources: list[str]
    body: str


class WikiPageJSON(TypedDict):
    """``GET /wiki/{page}``."""

    page: str
    title: str
    type: str | None
    tags: list[str]
    frontmatter: dict[str, Any]
    markdown: str
    preamble: str
    sections: list[PageSection]
    links: dict[str, str | None]
    backlinks: list[dict[str, str]]  # {page, title}
    view: PageView


class PageClaimsJSON(TypedDict):
    """``GET /wiki/{page}/claims``: ``reason`` says why nothing could be checked."""

    page: str
    findings: list[dict[str, Any]]
    reason: str | None
    summary: dict[str, Any] | None
    sections_verified: int
    sections_cached: int
