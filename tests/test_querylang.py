"""The query language of ``graph_query.py --mode query``: every operator and rule of issue 2,
precedence, syntax errors with their positions, sorting, randomised laws (double negation,
De Morgan, canonical round trip) and no crash on random input, plus real vault frontmatter."""

from __future__ import annotations

import datetime as dt
import random
import re
from pathlib import Path

import pytest
from episteme.errors import UsageError
from episteme.graph.querylang import (
    QuerySyntaxError,
    field_value,
    parse_query,
    sort_key,
    sort_pages,
)


def m(query: str, props: dict) -> bool:
    return parse_query(query).matches(props)


PAGE = {
    "title": "Attention Is All You Need",
    "type": "Paper",
    "tags": ["#ML/NLP", "transformer", "attention"],
    "sources": ["a.pdf", "b.pdf", "c.pdf"],
    "authors": ["Vaswani", "Shazeer"],
    "level": 7,
    "score": 0.85,
    "draft": False,
    "updated": dt.date(2025, 3, 14),
    "ingested_at": dt.datetime(2025, 3, 14, 9, 30, 15),
    "published": "2017-06-12",
    "rank": "12",
    "notes": None,
    "meta": {"Venue": "NeurIPS"},
}


# --- equality ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query, expected",
    [
        ("type: paper", True),
        ("type: PAPER", True),
        ("type = paper", True),
        ("type:paper", True),
        ("TYPE: paper", True),  # field names are case-insensitive
        ("Type = Paper", True),
        ("type: entity", False),
        ("type: pap", False),  # equality is not substring
        ("title: 'attention is all you need'", True),
        ('title: "Attention Is All You Need"', True),
        ("level: 7", True),
        ("level = 7.0", True),
        ("level: 8", False),
        ("score: 0.85", True),
        ("draft: false", True),
        ("draft: no", True),
        ("draft: true", False),
        ("draft: 0", False),  # a number literal is not a boolean
    ],
)
def test_equality(query: str, expected: bool) -> None:
    assert m(query, PAGE) is expected


def test_exact_key_wins_over_case_insensitive_match() -> None:
    props = {"Type": "upper", "type": "lower"}
    assert m("type: lower", props)
    assert m("Type: upper", props)
    assert m("TYPE: upper", props)  # first key in file order whose casefold matches
    assert field_value(props, "tYpE") == "upper"


def test_list_equality_is_membership() -> None:
    assert m("authors: vaswani", PAGE)
    assert m("authors = SHAZEER", PAGE)
    assert not m("authors: vas", PAGE)
    assert m("levels: 2", {"levels": [1, 2, 3]})
    assert not m("levels: 4", {"levels": [1, 2, 3]})


def test_not_equal_scalar_and_list() -> None:
    assert m("type != entity", PAGE)
    assert not m("type != PAPER", PAGE)
    assert m("authors != Hinton", PAGE)  # no element equal
    assert not m("authors != vaswani", PAGE)  # one element equal
    assert m("empty != x", {"empty": []})
    assert m("level != 8", PAGE)
    assert not m("level != 7", PAGE)
    # != is "present and not equal", so a value of another type is unequal
    assert m("level != abc", PAGE)
    assert m("updated != soon", PAGE)


# --- contains ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query, expected",
    [
        ("title contains attention", True),
        ("title CONTAINS 'ALL YOU'", True),
        ("title contains bert", False),
        ("authors contains vaswani", True),
        ("authors contains vas", False),  # lists match an element exactly
        ("tags contains ml", True),  # nested tag ML/NLP, '#' ignored, case-insensitive
        ("tags contains ml/nlp", True),
        ("tags contains '#ml'", True),
        ("tags contains nlp", False),  # nesting matches from the root only
        ("tags contains m", False),  # not a prefix of the segment
        ("tags contains transformer", True),
        ("tags contains transformers", False),
        ("level contains 7", False),  # contains is for text, lists and mappings
        ("updated contains 2025", False),
        ("meta contains venue", True),  # a mapping contains its keys
        ("meta contains neurips", False),
    ],
)
def test_contains(query: str, expected: bool) -> None:
    assert m(query, PAGE) is expected


def test_tags_rules() -> None:
    props = {"tags": ["ml/nlp/bert", "#Vision"]}
    assert m("tags contains ml", props)
    assert m("tags contains ml/nlp", props)
    assert m("tags contains ml/nlp/bert", props)
    assert not m("tags contains ml/nlp/bert/x", props)
    assert m("tags contains vision", props)
    assert m("tags: #vision", props)
    assert m("tags: ml/nlp/bert", props)
    assert not m("tags: ml", props)  # equality stays exact; only contains is hierarchical
    assert m("tags != ml", props)
    assert not m("tags != VISION", props)
    assert m("tags >= 2", props) and not m("tags > 2", props)
    # a string tags field is split on commas / whitespace
    assert m("tags contains b", {"tags": "a, b/c #d"})
    assert m("tags: d", {"tags": "a, b/c #d"})
    assert m("tags contains 2023", {"tags": 2023})
    # other list fields are not hierarchical
    assert not m("topics contains ml", {"topics": ["ml/nlp"]})


# --- numbers and list lengths ------------------------------------------------------------------


@pytest.mark.parametrize(
    "query, expected",
    [
        ("level > 6", True),
        ("level > 7", False),
        ("level >= 7", True),
        ("level < 7", False),
        ("level <= 7", True),
        ("level < 7.5", True),
        ("level > -1", True),
        ("score < 1", True),
        ("score >= 8.5e-1", True),
        ("rank > 9", True),  # a numeric string compares numerically ("12" > 9), not as text
        ("rank: 12.0", True),
        ("rank < 100", True),
        ("sources >= 3", True),  # list vs number: its length
        ("sources > 3", False),
        ("sources = 3", False),  # '=' on a list is membership, not length
        ("sources < 4", True),
        ("authors <= 2", True),
        ("level > abc", False),  # mixed types never match
        ("title > 3", False),
        ("level >= 2025-01", False),
    ],
)
def test_numbers(query: str, expected: bool) -> None:
    assert m(query, PAGE) is expected


def test_list_ordering_with_non_number_is_any_element() -> None:
    props = {"dates": [dt.date(2024, 5, 1), dt.date(2025, 2, 1)], "names": ["b", "d"]}
    assert m("dates > 2025-01", props)
    assert not m("dates > 2025-02", props)
    assert m("names > c", props) and not m("names > d", props)


def test_nan_and_infinity_never_crash() -> None:
    assert not m("x > 1", {"x": float("nan")})
    assert not m("x: 1", {"x": float("nan")})
    assert m("x > 1e308", {"x": float("inf")})
    assert m("x > 1", {"x": 10**400})


# --- dates ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query, expected",
    [
        ("updated > 2025-01", True),
        ("updated > 2025-03", False),  # March is not after March
        ("updated >= 2025-03", True),
        ("updated < 2025-03", False),
        ("updated <= 2025-03", True),
        ("updated < 2025-04", True),
        ("updated: 2025-03", True),  # equality by prefix: any day in March
        ("updated: 2025", True),
        ("updated > 2024", True),
        ("updated > 2025", False),
        ("updated: 2025-03-14", True),
        ("updated: 2025-03-15", False),
        ("updated > 2025-03-13", True),
        ("updated != 2025-03", False),
        ("updated != 2025-04", True),
        ("updated: 2025-03-14T10:00", True),  # the date has day precision: compared by day
        ("ingested_at > 2025-03-14T09:30", False),
        ("ingested_at >= 2025-03-14T09:30", True),
        ("ingested_at > 2025-03-14T09:29:59", True),
        ("ingested_at: 2025-03-14", True),
        ("ingested_at: '2025-03-14 09:30'", True),
        ("ingested_at < 2025-03-14T09:30:15.5", True),
        ("published > 2017-06", False),  # a date-like string compares as a date
        ("published >= 2017-06", True),
        ("published: 2017", True),
        ("published < 2018-01-01", True),
        ("updated > 2025-13", False),  # not a valid date: never matches
        ("updated > 2025-02-30", False),
        ("updated > soon", False),
        ("updated: 20250314", False),
        ("title > 2025-01", False),  # a non-date string vs a date literal
    ],
)
def test_dates(query: str, expected: bool) -> None:
    assert m(query, PAGE) is expected


def test_dates_with_time_zone_compare_wall_clock() -> None:
    tz = dt.timezone(dt.timedelta(hours=2))
    props = {"at": dt.datetime(2025, 1, 2, 23, 30, tzinfo=tz)}
    assert m("at: 2025-01-02", props)
    assert m("at >= 2025-01-02T23:30+02:00", props)
    assert m("at: 2025-01-02T23:30Z", props)


def test_impossible_dates_are_plain_text() -> None:
    assert m("d > 2024-02-28", {"d": "2024-02-29"})  # a leap day is a date
    assert not m("d > 2023-02-01", {"d": "2023-02-29"})  # no such day: text, not a date
    assert m("d: 2023-02-29", {"d": "2023-02-29"})  # ... which still equals the same text
    assert not m("d > 2023-02-01", {"d": dt.date(2023, 1, 31)})


def test_epoch_millisecond_numbers_are_numbers() -> None:
    props = {"updated": 1642564062835}  # Dendron
    assert not m("updated > 2025-01", props)
    assert m("updated > 1600000000000", props)


# --- strings ----------------------------------------------------------------------------------


def test_string_ordering_is_case_insensitive() -> None:
    assert m("title > apple", PAGE)
    assert m("title < BANANA", PAGE)
    assert not m("title < attention", PAGE)
    # a numeric-looking string against a text literal, or vice versa: no ordering
    assert not m("rank > abc", PAGE)
    assert not m("rank < abc", PAGE)


def test_bare_values_keep_colons_and_urls() -> None:
    props = {"url": "https://arxiv.org/abs/1706.03762", "time": "10:30"}
    assert m("url: https://arxiv.org/abs/1706.03762", props)
    assert m("url contains arxiv.org/abs", props)
    assert m("time: 10:30", props)


def test_quoted_strings_and_escapes() -> None:
    props = {"q": 'say "hi"', "p": "it's", "b": "a\\b", "my field": "x y", "not": "kw"}
    assert m(r'q: "say \"hi\""', props)
    assert m("q: 'say \"hi\"'", props)
    assert m(r"p: 'it\'s'", props)
    assert m('p: "it\'s"', props)
    assert m("p: it's", props)  # a quote inside a bare word is just a character
    assert m(r'b: "a\\b"', props)
    assert m('"my field": "x y"', props)
    assert m('"not": kw', props)
    assert m('status: "and"', {"status": "AND"})
    assert m(r'x: "a\tb"', {"x": "a\tb"})


def test_booleans() -> None:
    assert m("draft: FALSE", PAGE)
    assert m("draft != true", PAGE)
    assert not m("draft > false", PAGE)  # no ordering on booleans
    assert m("flag: yes", {"flag": True})
    assert m("flag: true", {"flag": "true"})  # a string field compares as text
    assert not m("flag: true", {"flag": 1})


# --- missing values ---------------------------------------------------------------------------


@pytest.mark.parametrize("op", [":", "=", "!=", "<", "<=", ">", ">=", "contains"])
@pytest.mark.parametrize("field", ["absent", "notes", "NOTES"])
def test_missing_or_null_fails_every_comparison(op: str, field: str) -> None:
    assert not m(f"{field} {op} x", PAGE)
    assert not m(f"{field} {op} 1", PAGE)
    assert m(f"NOT {field} {op} x", PAGE)
    assert m(f"NOT ({field} {op} 1)", PAGE)


def test_empty_or_odd_props_never_crash() -> None:
    q = parse_query("a: 1 OR NOT b > 2")
    assert q.matches({}) is True
    assert q.matches(None) is True  # type: ignore[arg-type]
    assert parse_query("a: 1").matches({1: "x", None: 2, (1, 2): 3}) is False
    assert parse_query("1: x").matches({1: "x"}) is True


# --- boolean structure ------------------------------------------------------------------------


def test_keywords_are_case_insensitive() -> None:
    assert m("type: paper and level: 7", PAGE)
    assert m("type: x Or level: 7", PAGE)
    assert not m("not type: paper", PAGE)
    assert m("NoT (type: x)", PAGE)


@pytest.mark.parametrize(
    "query, canonical",
    [
        ("a: 1 OR b: 2 AND c: 3", "(a = 1 OR (b = 2 AND c = 3))"),
        ("a: 1 AND b: 2 OR c: 3", "((a = 1 AND b = 2) OR c = 3)"),
        ("NOT a: 1 AND b: 2", "(NOT a = 1 AND b = 2)"),
        ("NOT (a: 1 AND b: 2)", "NOT (a = 1 AND b = 2)"),
        ("(a: 1 OR b: 2) AND c: 3", "((a = 1 OR b = 2) AND c = 3)"),
        ("NOT NOT a: 1", "a = 1"),
        ("a: 1 AND b: 2 AND c: 3", "(a = 1 AND b = 2 AND c = 3)"),
        ("tags contains x", "tags contains x"),
        ('"my f" >= "a b"', '"my f" >= "a b"'),
    ],
)
def test_precedence(query: str, canonical: str) -> None:
    assert str(parse_query(query)) == canonical


def test_precedence_by_evaluation() -> None:
    props = {"a": 1, "b": 0, "c": 0}
    assert m("a: 1 OR b: 1 AND c: 1", props)  # a OR (b AND c)
    assert not m("(a: 1 OR b: 1) AND c: 1", props)
    assert not m("NOT a: 1 OR b: 1", props)  # (NOT a) OR b
    assert m("NOT (a: 0 OR b: 1)", props)


def test_issue_examples() -> None:
    model = {"type": "entity", "tags": ["model"], "updated": dt.date(2025, 2, 1)}
    concept = {"type": "concept", "tags": ["attention"], "sources": ["x", "y", "z"]}
    stub = {"type": "concept", "tags": ["stub"], "sources": ["x", "y", "z"]}
    q1 = parse_query("type: entity AND tags contains model AND updated > 2025-01")
    q2 = parse_query("type: comparison OR (type: concept AND tags contains attention)")
    q3 = parse_query("NOT (tags contains stub) AND sources >= 3")
    assert [q1.matches(p) for p in (model, concept, stub)] == [True, False, False]
    assert [q2.matches(p) for p in (model, concept, stub)] == [False, True, False]
    assert [q3.matches(p) for p in (model, concept, stub)] == [False, True, False]
    assert q1.fields == {"type", "tags", "updated"}


# --- syntax errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query, position, fragment",
    [
        ("", 0, "empty query"),
        ("   ", 0, "empty query"),
        ("(type: a", 0, "unclosed '('"),
        ("a: 1 AND (b: 2 OR (c: 3)", 9, "unclosed '('"),
        ("type: a)", 7, "unmatched ')'"),
        ("()", 1, "expected a condition, found ')'"),
        ("type: a AND", 11, "expected a condition, found end of query"),
        ("type: a OR ", 11, "found end of query"),
        ("type: a AND OR b: 1", 12, "keyword 'OR'"),
        ("AND type: a", 0, "keyword 'AND'"),
        ("NOT", 3, "found end of query"),
        ("type", 4, "expected an operator"),
        ("type:", 5, "expected a value after ':'"),
        ("level >=", 8, "expected a value after '>='"),
        ("tags contains", 13, "expected a value after 'contains'"),
        ("type: AND", 6, "keyword 'AND'"),
        ("type: (a)", 6, "expected a value"),
        ("level == 3", 6, "unknown operator '=='"),
        ("level => 3", 6, "unknown operator '=>'"),
        ("level <> 3", 6, "unknown operator '<>'"),
        ("level ! 3", 6, "unknown operator '!'"),
        ("level :> 3", 6, "unknown operator ':>'"),
        ("level is 3", 6, "expected an operator"),
        ("level ~ 3", 6, "expected an operator"),
        ("tags containsx y", 5, "expected an operator"),
        ("title: 'abc", 7, "unterminated string"),
        ('"title: abc', 0, "unterminated string"),
        ('title: "abc\\"', 7, "unterminated string"),
        ("title: deep learning", 12, "expected AND, OR or end of query, found 'learning'"),
        ("(title: deep learning)", 13, "expected AND, OR or ')'"),
        ("a: 1 b: 2", 5, "found 'b:'"),
        ("a: 1 (b: 2)", 5, "found '('"),
        (": x", 0, "expected a field name"),
        ("NOT: x", 0, "'NOT' is a keyword"),
        ("a: 1 AND: x", 5, "expected AND, OR or end of query"),
    ],
)
def test_syntax_errors_point_at_the_position(query: str, position: int, fragment: str) -> None:
    with pytest.raises(QuerySyntaxError) as info:
        parse_query(query)
    err = info.value
    assert err.position == position, err.message
    assert fragment in err.message
    assert f"column {position + 1}" in err.message
    assert err.details == {"position": position, "column": position + 1}


def test_error_message_has_caret_line_under_the_token() -> None:
    with pytest.raises(QuerySyntaxError) as info:
        parse_query("type: entity AND level >> 3")
    err = info.value
    assert isinstance(err, UsageError) and err.exit_code == 2
    first, shown, caret = err.message.split("\n")
    assert first.startswith("query syntax error at column 24:")
    assert shown == "  type: entity AND level >> 3"
    assert caret == "  " + " " * 23 + "^"
    assert shown[caret.index("^")] == ">"


def test_nesting_limit_is_an_error_not_a_crash() -> None:
    deep = "(" * 150 + "a: 1" + ")" * 150
    with pytest.raises(QuerySyntaxError, match="nested deeper"):
        parse_query(deep)
    ok = "(" * 90 + "a: 1" + ")" * 90
    assert parse_query(ok).matches({"a": 1})
    many_nots = "NOT " * 5001 + "a: 1"
    assert parse_query(many_nots).matches({"a": 2})
    long_and = " AND ".join(["a: 1"] * 3000)
    assert parse_query(long_and).matches({"a": 1})


# --- sorting ----------------------------------------------------------------------------------

PAGES = [
    ("c.md", {"updated": dt.date(2025, 1, 5), "n": 3}),
    ("a.md", {"updated": dt.date(2024, 12, 31), "n": 10}),
    ("b.md", {"n": "2"}),  # no updated
    ("e.md", {"updated": dt.datetime(2025, 1, 5, 8, 0), "n": None}),
    ("d.md", {"updated": dt.date(2025, 1, 5)}),
    ("f.md", {"Updated": "2025-02"}),
]


def ids(pages) -> list[str]:
    return [p[0] for p in pages]


def test_sort_default_is_updated_descending_missing_last() -> None:
    assert ids(sort_pages(PAGES)) == ["f.md", "e.md", "c.md", "d.md", "a.md", "b.md"]


def test_sort_ascending_missing_last_ties_by_id() -> None:
    assert ids(sort_pages(PAGES, "updated")) == ["a.md", "c.md", "d.md", "e.md", "f.md", "b.md"]
    assert ids(sort_pages(PAGES, "+updated")) == ids(sort_pages(PAGES, "updated"))
    # numbers and numeric strings sort numerically; missing / null last both ways
    assert ids(sort_pages(PAGES, "n")) == ["b.md", "c.md", "a.md", "d.md", "e.md", "f.md"]
    assert ids(sort_pages(PAGES, "-N")) == ["a.md", "c.md", "b.md", "d.md", "e.md", "f.md"]


def test_sort_key_orders_missing_last_and_mixed_types_without_error() -> None:
    values = [3, "b", "A", dt.date(2020, 1, 1), True, ["x"], {"k": 1}, None, float("nan"), 2.5]
    pages = [(f"p{i}", {"v": v}) for i, v in enumerate(values)] + [("zz", {})]
    keys = [sort_key(p, "v") for _i, p in pages]
    assert sorted(keys)[-1] == (1,)
    ordered = ids(sorted(pages, key=lambda p: (sort_key(p[1], "v"), p[0])))
    asc = ids(sort_pages(pages, "v"))
    assert ordered == asc
    # dates, numbers, NaN, booleans, text (case-insensitive), lists, other; missing last
    assert asc == ["p3", "p9", "p0", "p8", "p4", "p2", "p1", "p5", "p6", "p7", "zz"]
    desc = ids(sort_pages(pages, "-v"))
    assert desc == ["p3", "p0", "p9", "p8", "p4", "p1", "p2", "p5", "p6", "p7", "zz"]


def test_sort_descending_keeps_odd_types_after_the_usual_ones() -> None:
    pages = [
        ("x.md", {"updated": "+002023-04-30 1238"}),  # text in a date field (real vaults have it)
        ("y.md", {"updated": dt.date(2023, 5, 1)}),
        ("z.md", {"updated": dt.date(2023, 6, 1)}),
        ("w.md", {}),
    ]
    assert ids(sort_pages(pages, "-updated")) == ["z.md", "y.md", "x.md", "w.md"]
    assert ids(sort_pages(pages, "updated")) == ["y.md", "z.md", "x.md", "w.md"]


def test_sort_spec_errors() -> None:
    for bad in ["", "-", "+", "  "]:
        with pytest.raises(UsageError):
            sort_pages(PAGES, bad)


# --- randomised laws and robustness -----------------------------------------------------------

FIELDS = ["a", "B", "tags", "d", "n", "missing"]
VALUES = ["1", "2", "x", "X", "2025-01", "2025", "true", "'a b'", "ml", "1.5", "-3"]
OPS = [":", "=", "!=", "<", "<=", ">", ">=", "contains"]


def random_query(rng: random.Random, depth: int = 0) -> str:
    roll = rng.random()
    if depth > 3 or roll < 0.4:
        return f"{rng.choice(FIELDS)} {rng.choice(OPS)} {rng.choice(VALUES)}"
    if roll < 0.55:
        return f"NOT {random_query(rng, depth + 1)}"
    if roll < 0.7:
        return f"({random_query(rng, depth + 1)})"
    joiner = rng.choice([" AND ", " OR ", " and ", " Or "])
    return random_query(rng, depth + 1) + joiner + random_query(rng, depth + 1)


def random_value(rng: random.Random, depth: int = 0):
    choices = [
        lambda: rng.randint(-5, 5),
        lambda: rng.choice([0.5, 1.5, float("nan")]),
        lambda: rng.choice(["x", "X", "1", "ml/nlp", "#ml", "2025-01-03", "a b", ""]),
        lambda: dt.date(rng.randint(2023, 2026), rng.randint(1, 12), rng.randint(1, 28)),
        lambda: dt.datetime(2025, 1, rng.randint(1, 3), rng.randint(0, 23)),
        lambda: rng.choice([True, False, None]),
        lambda: {"k": 1},
    ]
    if depth < 2 and rng.random() < 0.25:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return rng.choice(choices)()


def random_props(rng: random.Random) -> dict:
    return {f: random_value(rng) for f in FIELDS[:-1] if rng.random() < 0.8}


@pytest.fixture(scope="module")
def random_cases() -> list[tuple[str, dict]]:
    rng = random.Random(20260529)
    return [(random_query(rng), random_props(rng)) for _ in range(600)]


def test_random_laws(random_cases) -> None:
    rng = random.Random(7)
    for text, props in random_cases:
        q = parse_query(text)
        r = rng.choice(random_cases)[0]
        value = q.matches(props)
        assert isinstance(value, bool)
        assert parse_query(f"NOT NOT ({text})").matches(props) == value
        assert parse_query(f"NOT ({text})").matches(props) == (not value)
        other = parse_query(r).matches(props)
        # De Morgan
        assert parse_query(f"NOT (({text}) AND ({r}))").matches(props) == parse_query(
            f"NOT ({text}) OR NOT ({r})"
        ).matches(props)
        assert parse_query(f"NOT (({text}) OR ({r}))").matches(props) == parse_query(
            f"NOT ({text}) AND NOT ({r})"
        ).matches(props)
        assert parse_query(f"({text}) AND ({r})").matches(props) == (value and other)
        assert parse_query(f"({text}) or ({r})").matches(props) == (value or other)
        # the canonical form means the same thing
        assert parse_query(str(q)).matches(props) == value
        assert str(parse_query(str(q))) == str(q)


def test_random_missing_field_comparisons_fail(random_cases) -> None:
    rng = random.Random(11)
    for _text, props in random_cases[:200]:
        op, val = rng.choice(OPS), rng.choice(VALUES)
        assert not parse_query(f"missing {op} {val}").matches(props)
        assert parse_query(f"NOT missing {op} {val}").matches(props)


def test_random_text_parses_or_raises_query_syntax_error() -> None:
    rng = random.Random(99)
    alphabet = list("ab :=!<>()\"'\\#-/.,1 \t") + ["AND ", "OR ", "NOT ", "contains ", "é", "\n"]
    props = random_props(random.Random(1))
    for _ in range(4000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        try:
            q = parse_query(text)
        except QuerySyntaxError as e:
            assert 0 <= e.position <= len(text)
            assert f"column {e.position + 1}" in e.message
            continue
        assert isinstance(q.matches(props), bool)
        assert isinstance(q.matches({}), bool)


def test_random_props_never_crash_sorting(random_cases) -> None:
    pages = [(f"p{i:03d}", props) for i, (_t, props) in enumerate(random_cases)]
    for field in FIELDS:
        asc = sort_pages(pages, field)
        desc = sort_pages(pages, "-" + field)
        present = [p for p in pages if field_value(p[1], field) is not None]
        k = len(present)
        assert {i for i, _ in asc[:k]} == {i for i, _ in present}
        assert {i for i, _ in desc[:k]} == {i for i, _ in present}
        assert ids(asc[k:]) == sorted(ids(asc[k:])) == ids(desc[k:])


# --- real frontmatter -------------------------------------------------------------------------


def _frontmatters(root: Path) -> list[tuple[str, dict]]:
    import yaml
    out = []
    for path in sorted(root.rglob("*.md")):
        text = path.read_text(encoding="utf-8", errors="replace")
        match = re.match(r"---\r?\n(.*?)\r?\n---\r?\n", text, re.S)
        props = {}
        if match:
            try:
                loaded = yaml.safe_load(match.group(1))
            except yaml.YAMLError:
                loaded = None
            props = loaded if isinstance(loaded, dict) else {}
        out.append((path.relative_to(root).as_posix(), props))
    return out


def test_real_13th_age_vault_matches_a_plain_scan(vaults_dir: Path) -> None:
    pages = _frontmatters(vaults_dir / "13th-age-srd")
    assert len(pages) > 500

    def plain(pred) -> set[str]:
        return {pid for pid, p in pages if pred(p)}

    def query(text: str) -> set[str]:
        q = parse_query(text)
        return {pid for pid, p in pages if q.matches(p)}

    def level_at_least_5(v) -> bool:
        # the vault has ints, empty values and lists ([5th level+]); quoted numbers count too
        if isinstance(v, bool) or v is None:
            return False
        if isinstance(v, (int, float)):
            return v >= 5
        if isinstance(v, list):
            return len(v) >= 5
        try:
            return float(v) >= 5
        except ValueError:
            return False

    def is_type(p, t: str) -> bool:
        return isinstance(p.get("type"), str) and p["type"].lower() == t  # "Humanoid" too

    humanoid_5 = plain(lambda p: is_type(p, "humanoid") and level_at_least_5(p.get("level")))
    assert humanoid_5 and query("type: humanoid AND level >= 5") == humanoid_5
    assert query("TYPE: HUMANOID and LEVEL >= 5") == humanoid_5
    undead_or_beast = plain(lambda p: is_type(p, "undead") or is_type(p, "beast"))
    assert query("type: undead OR type: beast") == undead_or_beast
    not_humanoid = {pid for pid, _p in pages} - plain(lambda p: is_type(p, "humanoid"))
    assert query("NOT type: humanoid") == not_humanoid

    def has_tag_root(p, root: str) -> bool:
        tags = p.get("tags") or []
        tags = tags if isinstance(tags, list) else [tags]
        return any(str(t).lstrip("#").lower().split("/")[0] == root for t in tags)

    races = plain(lambda p: has_tag_root(p, "13a"))
    assert races and query("tags contains 13A") == races

    def updated_after(p, year: int, month: int) -> bool:
        v = p.get("updated")
        return isinstance(v, dt.date) and (v.year, v.month) > (year, month)

    later = plain(lambda p: updated_after(p, 2023, 3))
    assert later and query("updated > 2023-03") == later
    ordered = sort_pages(pages, "-updated")
    dated = [p for p in ordered if isinstance(p[1].get("updated"), dt.date)]
    assert ordered[: len(dated)] == dated
    assert [p[1]["updated"] for p in dated] == sorted((p[1]["updated"] for p in dated), reverse=True)


def test_real_dendron_vault_never_crashes(vaults_dir: Path) -> None:
    pages = _frontmatters(vaults_dir / "dendron-site")
    assert len(pages) > 500
    queries = [
        "updated > 2025-01",
        "updated > 1600000000000",
        "title contains dendron OR desc contains note",
        "NOT (tags contains x) AND id != abc",
        "created <= 2021",
    ]
    counts = {}
    for text in queries:
        q = parse_query(text)
        counts[text] = sum(q.matches(p) for _pid, p in pages)
    assert counts["updated > 2025-01"] == 0  # epoch milliseconds are numbers, not dates
    assert counts["updated > 1600000000000"] > 0
    assert counts["title contains dendron OR desc contains note"] > 0
    for field in ("updated", "title", "tags"):
        assert len(sort_pages(pages, "-" + field)) == len(pages)
