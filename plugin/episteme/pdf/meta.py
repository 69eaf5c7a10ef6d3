"""Paper metadata: year, venue, arXiv id and DOI from the PDF, and BibTeX for ``episteme cite``.

Sources, most trusted first: identifiers printed by the publisher or arXiv (the rotated arXiv
stamp in the margin of page 1, a ``doi.org`` link or ``doi:`` line on the first pages), then
the document information dictionary (``/Subject`` often names the journal, ``/doi`` the DOI),
then the first page's own text (a venue line such as "Proceedings of ...", "Published as a
conference paper at ICLR 2015", a copyright year).  Title and authors come from the splitter
(:func:`episteme.pdf.split._guess_title` / ``_guess_authors``).  Standard library only.
"""

from __future__ import annotations

import re
import unicodedata

ARXIV_ID = re.compile(r"arXiv:\s*(?P<id>\d{4}\.\d{4,5}(?:v\d+)?|[a-z\-]+(?:\.[A-Z]{2})?/\d{7}(?:v\d+)?)",
                      re.I)
DOI = re.compile(r"\b(10\.\d{4,9}/[^\s\"<>,;]+[^\s\"<>,;.)\]])")
VENUE = re.compile(
    r"\b(proceedings of|proc\. of|conference|workshop|symposium|journal of|transactions on|"
    r"published as|annual meeting)\b",
    re.I,
)
STRONG_VENUE = re.compile(r"\b(proceedings of|proc\. of|journal of|transactions on|"
                          r"published as)\b", re.I)
#: the stamp a preprint server prints on every page ("bioRxiv preprint doi: ...")
SERVER_STAMP = re.compile(r"\b(?P<venue>bioRxiv|medRxiv)\b", re.I)
COPYRIGHT_YEAR = re.compile(r"(?:©|\(c\)|copyright)\s*(19[5-9]\d|20[0-3]\d)", re.I)
YEAR = re.compile(r"(?<!\d)(19[5-9]\d|20[0-3]\d)(?!\d)")
PUBLISHED = re.compile(r"published|posted|this version|available online|issued|accepted",
                       re.I)
DATED = re.compile(r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(?:\d{1,2},?\s+)?"
                   r"(?:19[5-9]\d|20[0-3]\d)\b", re.I)
_PUBLISHED_AS = re.compile(r"^(?:published as|accepted as|to appear)\b.*?\b(?:at|in)\s+", re.I)
INPROCEEDINGS = re.compile(r"(?i:proceedings|conference|workshop|symposium|meeting|\biclr\b|"
                           r"\bneurips\b|\bnips\b|\bicml\b|\bacl\b|\bemnlp\b|\bcvpr\b)|"
                           r"\b[A-Z]{3,}\s?['’]\s?\d{2}\b")
#: "Proceedings of" an academy or a society is a journal (PNAS, the KNAW's Proceedings)
JOURNAL_PROCEEDINGS = re.compile(r"proceedings of the (?:national |royal )?(?:academy|society)|"
                                 r"akademie|academy of sciences", re.I)
#: a preprint server named as the venue: the entry stays @misc
PREPRINT_VENUE = re.compile(r"\b(?:arxiv|biorxiv|medrxiv|psyarxiv|socarxiv|ssrn|preprint)\b",
                            re.I)
#: a line about another version of the paper ("An earlier version of this paper appeared in
#: the Proceedings of ..."): its venue and year are not this document's
OTHER_VERSION = re.compile(r"\b(?:earlier|previous|preliminary|short(?:er)?|extended|"
                           r"conference) version\b|\bappeared (?:in|at)\b", re.I)
#: ACM's first-page block: "CIKM'13, Oct. 27–Nov. 1, 2013, San Francisco, CA, USA."
ACM_VENUE = re.compile(r"^(?P<venue>[A-Z][A-Za-z]{2,}\s?['’]\s?\d{2})\s*,")
#: a journal's footer with its DOI link: "PLOS ONE | https://doi.org/10.1371/..."
JOURNAL_FOOTER = re.compile(r"^(?P<venue>[A-Z][\w &.-]{2,60}?)\s*\|\s*(?:https?://)?(?:dx\.)?"
                            r"doi\.org/10\.")
#: a technical report: its series and number on the first pages ("CSL-89-1", "Technical
#: Report TR-2004-12"), or the words
TECH_REPORT = re.compile(r"\b(?:technical report|tech\.? rep(?:ort)?\.?|research report|"
                         r"working paper|discussion paper)\b|^[A-Z]{2,5}[-·‐]\d{2}[-·‐]\d{1,4}\b",
                         re.I)
THESIS = re.compile(r"\b(?:(?P<kind>master'?s?|doctoral|ph\.?\s?d\.?|honou?rs|bachelor'?s?) "
                    r"thesis|dissertation|submitted in partial fulfil+ment|"
                    r"degree of (?P<degree>master|doctor|bachelor))\b", re.I)


def extract_meta(info: dict, first_pages: list[str], rotated: list[str]) -> dict:
    """``{year, venue, arxiv_id, doi}`` (missing ones left out).

    ``info`` is the document information dictionary as plain strings, ``first_pages`` the
    text lines of the first two pages before running heads were removed (a journal's DOI often
    sits in its running head), ``rotated`` the rotated text of page 1 (the arXiv stamp).
    """
    out: dict = {}
    for text in [*rotated, *first_pages]:
        m = ARXIV_ID.search(text)
        if m:
            out["arxiv_id"] = m.group("id")
            break
    for text in [info.get("/doi", ""), info.get("/Subject", ""), *first_pages]:
        m = DOI.search(text or "")
        if m:
            out["doi"] = m.group(1)
            break
    venue = ""
    venue_year = None
    subject_venue = False
    for k, text in enumerate(first_pages[:200]):
        t = text.strip()
        if OTHER_VERSION.search(t) or (k and OTHER_VERSION.search(first_pages[k - 1])):
            continue
        if (VENUE.search(t) and 2 <= len(t.split()) <= 30 and "@" not in t and "http" not in t
                and not t.endswith("-") and (YEAR.search(t) or STRONG_VENUE.search(t))):
            venue = _PUBLISHED_AS.sub("", t).strip().rstrip(".")
            near = " ".join(first_pages[k:k + 2])  # "July 5 - 10, 2020" under the venue
            venue_year = int(YEAR.search(near).group(1)) if YEAR.search(near) else None
            break
    if not venue:
        for t in first_pages[:200]:
            m = ACM_VENUE.match(t.strip()) or JOURNAL_FOOTER.match(t.strip())
            if m:
                venue = m.group("venue").strip()
                y = YEAR.search(t)
                venue_year = int(y.group(1)) if y and m.re is ACM_VENUE else None
                break
    if not venue:
        m = next((SERVER_STAMP.search(t) for t in first_pages if SERVER_STAMP.search(t)), None)
        if m:
            venue = {"biorxiv": "bioRxiv", "medrxiv": "medRxiv"}[m.group("venue").lower()]
    subject = (info.get("/Subject") or "").strip()
    if not venue and subject and (VENUE.search(subject) or re.search(r"\d", subject)) and (
            _printed(subject, first_pages)):
        venue = subject
        subject_venue = True
    if venue:
        out["venue"] = venue[:200]
    # the venue's year, else the first arXiv version's, a copyright line's, and last the year
    # printed most often on the first pages; never the file's creation date (a re-saved or
    # re-printed file dates itself, not the paper)
    # (never a /Subject's year: a template's is the template's, "... Learning 2010" in 2011)
    year = venue_year or (int(YEAR.search(venue).group(1))
                          if YEAR.search(venue) and not subject_venue else None)
    if not year and out.get("arxiv_id") and re.match(r"\d{4}\.", out["arxiv_id"]):
        year = 2000 + int(out["arxiv_id"][:2])
    if not year:
        m = next((COPYRIGHT_YEAR.search(t) for t in first_pages if COPYRIGHT_YEAR.search(t)), None)
        year = int(m.group(1)) if m else None
    if not year:
        # a date ("January 1989", "this version posted March 21, 2022"), not a citation's
        # year; a publication or posting date first
        dated = [(bool(PUBLISHED.search(t[max(0, m.start() - 40):m.start()])),
                  int(YEAR.search(m.group(0)).group(1)))
                 for t in first_pages for m in DATED.finditer(t)]
        # the latest: a paper is received, revised and accepted before it is published
        years = [y for first, y in dated if first] or [y for _, y in dated]
        year = max(years) if years else None
    if year:
        out["year"] = year
    kind = _document_kind(first_pages)
    if kind:
        out["entry_type"] = kind
    return out


def _printed(subject: str, first_pages: list[str]) -> bool:
    """The information dictionary's /Subject is confirmed by the pages: most of its words are
    printed there.  Why: templates leave their own /Subject behind ("Proceedings of the
    International Conference on Machine Learning 2019" in a report that was never there)."""
    words = {w.lower() for w in re.findall(r"[A-Za-z]{4,}", subject)}
    if not words:
        return False
    page = " ".join(first_pages).lower()
    # its year too: the ICML template's "... Machine Learning 2010" in a 2011 paper
    if any(y not in page for y in YEAR.findall(subject)):
        return False
    return sum(w in page for w in words) >= 0.6 * len(words)


def _document_kind(first_pages: list[str]) -> str:
    """"techreport" or "thesis" kinds when the first pages say so, else ""."""
    head = first_pages[:60]  # the title page: a thesis cited in the text is not this one
    for t in head:
        m = THESIS.search(t) if len(t.split()) <= 20 else None
        if m:
            kind = (m.group("kind") or m.group("degree") or "").lower()
            if not kind:
                deg = re.search(r"degree of (master|doctor)", " ".join(head), re.I)
                kind = deg.group(1).lower() if deg else ""
            if kind.startswith("master"):
                return "mastersthesis"
            return "phdthesis" if kind.startswith(("doctor", "ph")) or "dissertation" in \
                t.lower() else "thesis"
    if any(TECH_REPORT.search(t.strip()) for t in head):
        return "techreport"
    return ""


def _ascii(s: str) -> str:
    s = s.replace("Ł", "L").replace("ł", "l").replace("ß", "ss")
    return unicodedata.normalize("NFKD", s).encode("ascii", "ignore").decode()


def _bib_escape(s: str) -> str:
    s = re.sub(r"\s+", " ", s).strip()
    return re.sub(r"([&%$#_{}])", r"\\\1", s)


def _title_case(title: str) -> str:
    """A title printed in capitals (ICLR, IEEE) in title case; others as printed."""
    letters = [c for c in title if c.isalpha()]
    if letters and sum(c.isupper() for c in letters) > 0.8 * len(letters):
        small = {"a", "an", "and", "at", "by", "for", "in", "of", "on", "or", "the", "to", "with"}
        words = title.lower().split()
        return " ".join(w if (i and w in small) else w[:1].upper() + w[1:]
                        for i, w in enumerate(words))
    return title


def cite_key(paper: dict) -> str:
    """The paper's BibTeX key: the one its reference manager gave (``meta.citation_key``, from
    Zotero), else ``<first author's last name><year><first title word>``."""
    given = str((paper.get("meta") or {}).get("citation_key") or "").strip()
    if given and re.fullmatch(r"[^\s,{}%#~\\\"']+", given):
        return given
    authors = paper.get("authors") or []
    last = _ascii(authors[0].split()[-1]).lower() if authors else "anon"
    year = (paper.get("meta") or {}).get("year") or ""
    words = [w for w in re.findall(r"[A-Za-z0-9]+", _ascii(paper.get("title") or ""))
             if w.lower() not in ("a", "an", "the", "on", "of", "for", "and")]
    first = words[0].lower() if words else "paper"
    return re.sub(r"[^a-z0-9]", "", f"{last}{year}{first}") or "paper"


def bibtex(paper: dict) -> str:
    """A BibTeX entry for a stored paper (``store.paper()``: title, authors, meta)."""
    meta = paper.get("meta") or {}
    venue = meta.get("venue") or ""
    arxiv = meta.get("arxiv_id")
    fields: list[tuple[str, str]] = [("title", _title_case(paper.get("title") or ""))]
    if paper.get("authors"):
        fields.append(("author", " and ".join(paper["authors"])))
    given = meta.get("bibtex_type")  # a reference manager's item type (Zotero) beats a guess
    printed_kind = meta.get("entry_type")  # what the first pages say the document is
    doi = meta.get("doi") or ""
    if given in ("inproceedings", "article") and venue:
        kind = given
        fields.append(("booktitle" if given == "inproceedings" else "journal", venue))
    elif printed_kind in ("techreport", "phdthesis", "mastersthesis", "thesis") and not given:
        kind = printed_kind
        if venue:
            fields.append(("institution" if kind == "techreport" else "school", venue))
    elif venue and PREPRINT_VENUE.search(venue):
        kind = "misc"
        fields.append(("howpublished", venue))
    elif venue and INPROCEEDINGS.search(venue) and not JOURNAL_PROCEEDINGS.search(venue):
        kind = "inproceedings"
        fields.append(("booktitle", venue))
    elif venue:
        kind = "article"
        fields.append(("journal", venue))
    elif doi and not doi.startswith("10.48550/"):
        kind = "article"  # a publisher's DOI on the page: a published article, journal unread
    else:
        kind = "misc"
        if arxiv:
            fields.append(("howpublished", f"arXiv preprint arXiv:{arxiv}"))
    if meta.get("year"):
        fields.append(("year", str(meta["year"])))
    if meta.get("doi"):
        fields.append(("doi", meta["doi"]))
    if arxiv:
        fields += [("eprint", re.sub(r"v\d+$", "", arxiv)), ("archivePrefix", "arXiv")]
    # the title in double braces keeps its capitalisation (BERT, TW-IDF) in every style
    body = ",\n".join(
        f"  {k} = {{{{{_bib_escape(v)}}}}}" if k == "title" else f"  {k} = {{{_bib_escape(v)}}}"
        for k, v in fields)
    return f"@{kind}{{{cite_key(paper)},\n{body}\n}}\n"
