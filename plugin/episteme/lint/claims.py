"""wiki-lint ``--claims``, the lint rule's own part: the findings of a section's claim results
(``claim-contradicted`` error, ``claim-unsupported`` and ``claim-misquoted`` warnings), the
per-section cache, the provenance of removed or replaced papers (``lost_support``), the pages
changed ``--since`` and the per-page table.

Light (standard library + the wiki and lint layers): the verifier is reached only through
:mod:`episteme.lint.claims_run`, imported when ``--claims`` is asked for.

Incremental (:class:`ClaimCache`): results are kept per section in
``<wiki>/.episteme/claims-cache.json`` under a key made of the section body, its sources and each
source's sha256 in SQLite (``absent`` once removed) and the verifier's code.  When a key changes
because a source was removed or re-ingested with another hash, each claim that the old result
held supported on that paper and that is no longer supported says so (``lost_support`` in
``data`` and in the message).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..wiki.files import DATA_DIR
from .rules import Finding, finding

#: Bump when what a cached result means changes (claim splitting, result layout).
CACHE_VERSION = 1
CACHE_FILE = "claims-cache.json"
MESSAGE_QUOTE = 160  # characters of evidence quoted in a message (data has the full quote)


# ------------------------------------------------------------------------------ the cache


class ClaimCache:
    """Per-section results in ``<wiki>/.episteme/claims-cache.json`` (written atomically)."""

    def __init__(self, root: str):
        self.path = Path(root) / DATA_DIR / CACHE_FILE
        self.data: dict[str, Any] = {}
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            if isinstance(raw, dict) and isinstance(raw.get("sections"), dict):
                self.data = raw["sections"]
        except (OSError, ValueError):
            self.data = {}
        self.dirty = False

    def get(self, sid: str) -> dict | None:
        e = self.data.get(sid)
        return e if isinstance(e, dict) else None

    def put(self, sid: str, entry: dict) -> None:
        self.data[sid] = entry
        self.dirty = True

    def save(self, keep: set[str] | None = None) -> None:
        if keep is not None:
            for sid in list(self.data):
                if sid not in keep:
                    del self.data[sid]
                    self.dirty = True
        if not self.dirty:
            return
        from ..fsutil import atomic_write_text

        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.path, json.dumps({"version": CACHE_VERSION, "sections": self.data},
                                                ensure_ascii=False, separators=(",", ":")))
        self.dirty = False


def section_key(sec: Any, papers: Any, code: str) -> tuple[str, dict[str, str]]:
    """The cache key of a section, and the sha of each source (``absent`` when not ingested)."""
    shas = {}
    for s in sec.sources:
        pid = papers.resolve(s)
        shas[s] = papers.sha[pid] if pid else "absent"
    h = hashlib.sha256()
    h.update(code.encode())
    h.update(sec.body.encode("utf-8", "surrogatepass"))
    h.update(json.dumps(shas, sort_keys=True).encode())
    return h.hexdigest()[:24], shas


# ------------------------------------------------------------------------------ findings


RULE_OF = {"contradicted": "claim-contradicted", "unsupported": "claim-unsupported"}
#: A contradiction is a lint *error* only when the sentence is worded like its evidence, so the
#: two are aligned beyond doubt: the near-copy diff (``altered_copy``: the sentence copies the
#: passage's sentence but changes a value, name or direction), or a verifier contradiction whose
#: sentence is this close to the evidence (difflib ratio over words).  Every other contradiction
#: is ``claim-check``, a warning that reads "check this".  Why: on a wiki an agent wrote in its
#: own words, none of the verifier's other red marks was right (0 of 63 on the shipped code,
#: 0 of 36 with the issue-31 verifier; benchmarks/RESULTS-prose.md), while near copies are the
#: case the rules were built and measured on (benchmarks/RESULTS-claims.md).
CONFIDENT_CODES = frozenset({"altered_copy"})
CONFIDENT_RATIO = 0.8
_WORDS = re.compile(r"[^\W_]+", re.UNICODE)


def confident(result: dict) -> bool:
    """Whether a ``contradicted`` result is aligned beyond doubt (see :data:`CONFIDENT_CODES`)."""
    if (result.get("reason") or {}).get("code") in CONFIDENT_CODES:
        return True
    quote = ((result.get("evidence") or {}).get("quote") or "").lower()
    text = (result.get("text") or "").lower()
    if not quote or not text:
        return False
    a, b = _WORDS.findall(text), _WORDS.findall(quote)
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio() >= CONFIDENT_RATIO


def _short(text: str, limit: int) -> str:
    t = " ".join(text.split())
    return t if len(t) <= limit else t[:limit].rsplit(" ", 1)[0] + " …"


def result_findings(file: str, sec: Any, results: list[dict]) -> list[Finding]:
    """The findings of one section's results (lines made absolute)."""
    out: list[Finding] = []
    for r in results:
        v = r.get("verdict")
        rule = RULE_OF.get(v)
        if rule == "claim-contradicted" and not confident(r):
            rule = "claim-check"
        if rule is None and v == "supported" and r.get("kind") == "quote":
            rule = "claim-misquoted"
        if rule is None:
            continue
        reason = r.get("reason") or {}
        ev = r.get("evidence")
        if rule == "claim-misquoted":
            msg = f"quote not found verbatim in {', '.join(sec.sources)} (the closest passage supports it): " \
                  f"\"{_short(r['text'], 200)}\""
        elif rule == "claim-check":
            msg = f"check this: \"{_short(r['text'], 200)}\" — {reason.get('text', '')}"
        else:
            msg = f"{v}: \"{_short(r['text'], 200)}\" — {reason.get('text', '')}"
        if r.get("lost_support"):
            ls = r["lost_support"]
            msg += f"; it lost its support: {ls['paper']} was {ls['why']}"
        if ev and rule != "claim-misquoted" and v == "contradicted":  # (an error or a check)
            msg += (f" — evidence: {ev['paper']}, {ev.get('section') or '?'}, p. {ev.get('page')}: "
                    f"\"{_short(ev.get('quote') or '', MESSAGE_QUOTE)}\"")
        elif ev and v == "unsupported" and reason.get("code") not in ("no_source",):
            msg += (f" — closest: {ev['paper']}, {ev.get('section') or '?'}, p. {ev.get('page')}: "
                    f"\"{_short(ev.get('quote') or '', MESSAGE_QUOTE)}\"")
        data = {"section_id": sec.id, "claim": r["text"], "verdict": v, "kind": r.get("kind"),
                "reason": reason, "evidence": ev}
        if r.get("verifier_verdict"):
            data["verifier_verdict"] = r["verifier_verdict"]
        if r.get("lost_support"):
            data["lost_support"] = r["lost_support"]
        out.append(finding(rule, file, sec.body_line + int(r.get("line") or 0), msg, **data))
    return out


def mark_lost_support(old: dict | None, results: list[dict], shas: dict[str, str], papers: Any) -> None:
    """Mark claims that were supported on a paper that has since been removed or replaced.

    ``old`` is the section's cache entry from the last run (``shas``: source -> content hash then;
    ``results``), ``results`` its new claim results, ``shas`` the sources' hashes now ("absent"
    when removed).  Each new result that is no longer supported, whose same-text claim was
    supported (or located) on a changed paper, gets ``lost_support = {"paper", "why"}``
    (``why``: "removed" or "re-ingested with another content hash"); lint reports it."""
    if not old:
        return
    old_shas = old.get("shas") or {}
    changed = {}
    for src, sha in old_shas.items():
        if shas.get(src, "absent") != sha:
            pid = papers.resolve(src) or src
            changed[pid] = changed[Path(src).name] = "removed" if shas.get(src, "absent") == "absent" else \
                "re-ingested with another content hash"
    if not changed:
        return
    before = {r.get("text"): r for r in old.get("results") or []}
    for r in results:
        if r.get("verdict") in ("supported", "located"):
            continue
        prev = before.get(r.get("text"))
        if not prev or prev.get("verdict") not in ("supported", "located"):
            continue
        paper = ((prev.get("evidence") or {}).get("paper")) or prev.get("paper")
        if paper in changed:
            r["lost_support"] = {"paper": paper, "why": changed[paper]}
        elif prev.get("verdict") == "located" and len(changed) == 1:
            p = next(iter(changed))
            r["lost_support"] = {"paper": p, "why": changed[p]}


def remember_paper(results: list[dict], sec: Any, papers: Any) -> None:
    """A located quote has no evidence dict: remember which source it was found in."""
    for r in results:
        if r.get("verdict") == "located" and "paper" not in r:
            pids = [p for p in (papers.resolve(s) for s in sec.sources) if p]
            for p in pids:
                if papers.located(r["text"], [p]):
                    r["paper"] = p
                    break


@dataclass
class ClaimsRun:
    findings: list[Finding]
    pages: dict[str, dict[str, int]]
    sections_checked: int = 0
    sections_cached: int = 0
    sections_skipped: int = 0
    seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        tot = {"checked": 0, "supported": 0, "unsupported": 0, "contradicted": 0, "quotes_located": 0}
        for row in self.pages.values():
            for k in tot:
                tot[k] += row.get(k, 0)
        return {**tot, "sections_verified": self.sections_checked, "sections_cached": self.sections_cached,
                "sections_skipped": self.sections_skipped, "seconds": round(self.seconds, 3)}


def tally(row: dict[str, int], results: list[dict]) -> None:
    for r in results:
        v = r.get("verdict")
        if v == "located":
            row["quotes_located"] += 1
            continue
        row["checked"] += 1
        if v in row:
            row[v] += 1

def index_json(root: str) -> dict[str, list[str]]:
    try:
        from ..wiki.index import read_index_json

        return read_index_json(root)
    except Exception:  # an unreadable index.json is lint's index-malformed finding, not ours
        return {}


# ------------------------------------------------------------------------------ --since


def changed_pages(root: str, since: str, page_files: list[str]) -> set[str]:
    """Pages changed since ``since``: a git revision when the wiki is in a git work tree (files
    changed since it, committed or not, plus untracked ones), otherwise a date ``YYYY-MM-DD``
    (pages modified on or after it by mtime, or named by a log.md entry of that day or later)."""
    import datetime as dt

    from ..errors import UsageError

    date = None
    try:
        date = dt.date.fromisoformat(since)
    except ValueError:
        date = None
    if date is None:
        import subprocess

        try:
            top = subprocess.run(["git", "-C", root, "rev-parse", "--show-toplevel"], capture_output=True,
                                 text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            top = None
        if top is None or top.returncode != 0:
            raise UsageError(f"--since {since!r}: not a date (YYYY-MM-DD) and {root} is not in a git work tree")
        base = Path(top.stdout.strip())
        rev = subprocess.run(["git", "-C", root, "rev-parse", "--verify", "--quiet", since + "^{commit}"],
                             capture_output=True, text=True, timeout=30)
        if rev.returncode != 0:
            raise UsageError(f"--since {since!r}: not a date (YYYY-MM-DD) nor a git revision")
        names: set[str] = set()
        for args in (["diff", "--name-only", rev.stdout.strip(), "--", "."],
                     ["ls-files", "--others", "--exclude-standard", "--", "."]):
            proc = subprocess.run(["git", "-C", root, *args], capture_output=True, text=True, timeout=60)
            for line in proc.stdout.splitlines():
                p = line.strip()
                if not p:
                    continue
                full = (base / p) if args[0] == "diff" else (Path(root) / p)
                try:
                    names.add(os.path.relpath(full, root).replace(os.sep, "/"))
                except ValueError:
                    continue
        return {p for p in page_files if p in names}
    cutoff = dt.datetime.combine(date, dt.time()).timestamp()
    out = set()
    for p in page_files:
        try:
            if os.stat(os.path.join(root, p)).st_mtime >= cutoff:
                out.add(p)
        except OSError:
            continue
    try:
        from ..wiki.index import read_log

        entries, _bad = read_log(root)
        for e in entries:
            if str(e.date) >= date.isoformat():
                for pg in e.pages:
                    pg = pg if pg.endswith(".md") else pg + ".md"
                    if pg in page_files:
                        out.add(pg)
    except Exception:
        pass
    return out



def format_table(run: ClaimsRun) -> str:
    """The per-page table ``lint --claims --format text`` ends with."""
    rows = sorted(run.pages.items())
    if not rows:
        return ""
    w = max(len("page"), *(len(p) for p, _ in rows))
    w = min(w, 60)
    head = f"{'page':<{w}}  {'checked':>7}  {'supported':>9}  {'unsupported':>11}  {'contradicted':>12}\n"
    out = ["\nclaims per page\n", head]
    tot = [0, 0, 0, 0]
    for p, r in rows:
        vals = [r["checked"], r["supported"], r["unsupported"], r["contradicted"]]
        tot = [a + b for a, b in zip(tot, vals, strict=True)]
        name = p if len(p) <= w else "…" + p[-(w - 1):]
        out.append(f"{name:<{w}}  {vals[0]:>7}  {vals[1]:>9}  {vals[2]:>11}  {vals[3]:>12}\n")
    out.append(f"{'total':<{w}}  {tot[0]:>7}  {tot[1]:>9}  {tot[2]:>11}  {tot[3]:>12}\n")
    s = run.summary()
    out.append(f"({s['quotes_located']} quotes or sentences found verbatim in their sources and skipped; {run.sections_checked} sections "
               f"verified, {run.sections_cached} from the cache"
               + (f", {run.sections_skipped} unchanged and skipped" if run.sections_skipped else "") + ")\n")
    return "".join(out)

