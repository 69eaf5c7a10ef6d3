"""index.md / index.json / log.md formats: round trips, tolerant readers, log parsing for lint."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from episteme.errors import EpistemeError
from episteme.wiki.index import (
    IndexEntry,
    IndexMd,
    append_log,
    make_log_entry,
    parse_index_json,
    parse_index_md,
    parse_log,
    read_index_json,
    read_index_md,
    read_log,
    render_index_json,
    write_index_json,
    write_index_md,
)

SEED_STYLE = """# Index

Some intro text kept as the header.

## sec_001
Transformer architecture overview.
Encoder-decoder structure, self-attention.
Source: attention_is_all_you_need.pdf

## sec_002
Multi-head attention mechanism.
Page: multi-head-attention.md
Sources: attention.pdf, bert.pdf
"""


def test_parse_seed_layout_joins_description_lines_and_reads_sources():
    idx = parse_index_md(SEED_STYLE)
    assert list(idx.entries) == ["sec_001", "sec_002"]
    e1, e2 = idx.entries["sec_001"], idx.entries["sec_002"]
    assert e1.description == "Transformer architecture overview. Encoder-decoder structure, self-attention."
    assert e1.sources == ["attention_is_all_you_need.pdf"] and e1.page == ""
    assert e2.page == "multi-head-attention.md" and e2.sources == ["attention.pdf", "bert.pdf"]
    assert "Some intro text" in idx.header and not idx.problems


def test_index_md_round_trip_is_stable_and_numeric_order(tmp_path):
    idx = IndexMd(entries={
        "sec_1000": IndexEntry("sec_1000", "Big one", "a.md", ["x.pdf"]),
        "sec_999": IndexEntry("sec_999", "Small one", "b/c.md", ["x.pdf", "y.pdf"]),
    })
    assert write_index_md(tmp_path, idx) is True
    text = (tmp_path / "index.md").read_text()
    assert text.index("## sec_999") < text.index("## sec_1000")
    assert "Source: x.pdf, y.pdf" in text and "Page: b/c.md" in text
    again = read_index_md(tmp_path)
    assert again.entries == idx.entries
    assert write_index_md(tmp_path, again) is False  # unchanged → not rewritten


def test_index_md_reports_duplicates_and_bad_headings():
    idx = parse_index_md("# Index\n\n## not-an-id\n\n## sec_001\nA\nSource: a.pdf\n\n## sec_001\nB\nSource: b.pdf\n")
    assert any("listed twice" in p for p in idx.problems)
    assert any("not a section id" in p for p in idx.problems)


def test_index_json_accepts_bare_strings_and_writes_lists(tmp_path):
    (tmp_path / "index.json").write_text(json.dumps({"sec_002": "a.pdf", "sec_001": ["a.pdf", "b.pdf"], "sec_003": None}))
    m = read_index_json(tmp_path)
    assert m == {"sec_002": ["a.pdf"], "sec_001": ["a.pdf", "b.pdf"], "sec_003": []}
    assert write_index_json(tmp_path, m) is True
    text = (tmp_path / "index.json").read_text()
    assert json.loads(text) == {"sec_001": ["a.pdf", "b.pdf"], "sec_002": ["a.pdf"], "sec_003": []}
    assert text.index("sec_001") < text.index("sec_002")
    assert write_index_json(tmp_path, m) is False
    assert render_index_json({}) == "{}\n" and read_index_json(tmp_path / "nowhere") == {}


@pytest.mark.parametrize("bad", ["[1, 2]", "{not json", '{"sec_001": 5}'])
def test_index_json_rejects_garbage(bad):
    with pytest.raises(EpistemeError):
        parse_index_json(bad)


def test_log_append_and_parse(tmp_path):
    (tmp_path / "log.md").write_text("# Log\n\nAppend-only record.")  # no trailing newline
    append_log(tmp_path, make_log_entry("ingest", "attention.pdf", pages=["t.md", "m.md", "t.md"],
                                        created=["sec_001", "sec_002"], updated=["sec_000"],
                                        date=dt.date(2026, 1, 2)))
    append_log(tmp_path, make_log_entry("write | section", "bert\nnewline", pages=["b.md"], created=["sec_003"]))
    entries, problems = read_log(tmp_path)
    assert not problems and len(entries) == 2
    e = entries[0]
    assert (e.date, e.op, e.subject) == ("2026-01-02", "ingest", "attention.pdf")
    assert e.pages == ["t.md", "m.md"] and e.sections == ["sec_001", "sec_002", "sec_000"]
    assert entries[1].op == "write / section" and entries[1].subject == "bert newline"
    assert entries[1].date == dt.date.today().isoformat()
    text = (tmp_path / "log.md").read_text()
    assert "Append-only record.\n\n## [2026-01-02] ingest | attention.pdf\n" in text


def test_log_created_when_missing_and_lint_problems(tmp_path):
    append_log(tmp_path, make_log_entry("lint-fix", "wiki"))
    assert (tmp_path / "log.md").read_text().startswith("# Log")
    entries, problems = parse_log("# Log\n\n## [2026-13-45] ingest | x\n## garbage heading\n## [2026-01-01] ok | y\n- pages: a.md\n")
    assert [e.op for e in entries] == ["ingest", "ok"]
    assert len(problems) == 2 and entries[1].pages == ["a.md"] and entries[1].line == 5
