"""The Dataview-style query language of ``graph_query.py --mode query``.

(Why one module of ~740 lines: a tokenizer, a parser and an evaluator that share one grammar
and one set of error messages with columns; splitting them would spread the grammar.)

A query is a boolean filter over one page's frontmatter (a ``dict`` as PyYAML parses it).
It is tokenised and parsed by hand (no dependencies) into a small tree that is then evaluated
once per page, so a malformed query fails before any page is read, with the exact column.

Grammar (keywords ``AND OR NOT CONTAINS`` are case-insensitive)::

    query      := or_expr END
    or_expr    := and_expr ( "OR" and_expr )*
    and_expr   := not_expr ( "AND" not_expr )*
    not_expr   := "NOT" not_expr | primary
    primary    := "(" or_expr ")" | comparison
    comparison := field op value
    field      := NAME | STRING
    op         := ":" | "=" | "!=" | "<" | "<=" | ">" | ">=" | "CONTAINS"
    value      := WORD | STRING

    NAME   := a run of characters other than whitespace, ( ) " ' : = ! < >
    WORD   := a run of characters other than whitespace and ( )   -- so URLs, times and
              "a:b" need no quotes; a WORD is ONE value: `title: Deep Learning` is an error
              (trailing 'Learning'); write `title: "Deep Learning"`.
    STRING := "..." or '...'; backslash escapes: \\n newline, \\t tab, any other \\c is c.

Precedence is NOT > AND > OR; there is no implicit AND.  ``AND``/``OR``/``NOT`` are reserved
as bare names and bare values; quote them (``"not": x``, ``status: "and"``) to use them as text.
``(`` nesting is limited to 100 levels.

Semantics (``q.matches(props)``):

* Field names match frontmatter keys case-insensitively (an exact key wins).  A key whose value
  is ``null`` counts as missing.  A missing field fails every comparison, ``!=`` included, so
  ``NOT (f: x)`` is true for a page without ``f``.
* The value's text is interpreted against the field's type (quotes only delimit text; they do
  not force a string): a number field compares numerically, a boolean field accepts
  ``true/false/yes/no/on/off``, a date field compares with a date literal.  A literal that does
  not fit the field's type (``level > abc``, ``updated > soon``) never matches and never
  raises.
* Dates compare by the literal's precision: ``2025``, ``2025-01``, ``2025-01-31``,
  ``2025-01-31T10:30[:00[.123]]`` (a space instead of ``T`` works when quoted; a time-zone
  suffix is accepted and ignored: wall-clock time as written).  Both sides are cut to the
  coarser precision, then compared: ``updated > 2025-01`` means a month after January 2025,
  ``updated >= 2025-01`` includes January, ``updated: 2025-03`` is any day in March 2025.
  ``datetime.date``, ``datetime.datetime`` and date-like strings in the frontmatter all work.
* Strings compare case-insensitively (``casefold``), also for ``< > <= >=`` (code-point order).
  A string field that looks numeric (``"10"``) compares numerically with a number literal, and
  a date-like string compares as a date with a date literal.  When only one side looks numeric
  (or only one side looks like a date), an ordering comparison never matches.
* ``a != b`` means "the field is present and ``a: b`` is false".  So mixed types are unequal
  (``level != abc`` is true for ``level: 3``), and ``!=`` on a list means no element equals.
* ``:`` and ``=`` are the same equality; on a list they mean membership (an element equals).
* A list compared with ``< <= > >=`` and a number compares its LENGTH (``sources >= 3``); with
  any other literal it matches when some element satisfies the comparison.
* ``contains``: on a string, a case-insensitive substring; on a list, an element equal to the
  value (same rules as ``=``); on a mapping, a key equal to the value; otherwise false.
* ``tags`` (the field, any case) is special: a leading ``#`` is ignored on both sides, a string
  value is split on commas/whitespace into a list, and ``tags contains x`` also matches the
  nested tags ``x/...``.  ``tags: x`` stays exact membership.

Sorting: :func:`sort_key` gives a total order over any frontmatter values (dates, then numbers,
then booleans, then strings, then lists, then anything else; missing last); :func:`sort_pages`
implements ``--sort F`` / ``--sort -F``: the direction applies within each type group, the
groups keep that order, missing values come last in both directions, ties go by page id.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError
from ..wiki.frontmatter import normalize_tags

__all__ = [
    "QuerySyntaxError",
    "Query",
    "parse_query",
    "field_value",
    "sort_key",
    "sort_pages",
    "DEFAULT_SORT",
]

DEFAULT_SORT = "-updated"
MAX_DEPTH = 100

_OP_CHARS = frozenset(":=!<>")
_OPERATORS = {":": "=", "=": "=", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_KEYWORDS = frozenset({"and", "or", "not"})
_QUOTES = "\"'"
_ESCAPES = {"n": "\n", "t": "\t"}

_NUMBER_RE = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_DATE_RE = re.compile(
    r"(\d{4})(?:-(\d{2})(?:-(\d{2})"
    r"(?:[T ](\d{2})(?::(\d{2})(?::(\d{2})(?:\.(\d{1,6})\d*)?)?)?"
    r"(?:Z|[+-]\d{2}(?::?\d{2})?)?)?)?)?"
)
_BOOLS = {"true": True, "yes": True, "on": True, "false": False, "no": False, "off": False}


class QuerySyntaxError(UsageError):
    """A malformed query (exit code 2).

    The message's first line names the 1-based column and the problem; the next two lines show
    the query and a caret under the offending token, so the CLI's stderr line and the JSON
    ``error`` both point at it.  ``position`` is 0-based; ``details`` carries both numbers.
    """

    def __init__(self, problem: str, query: str, position: int):
        self.problem = problem
        self.query = query
        self.position = position
        self.column = position + 1
        shown = query.replace("\n", " ").replace("\t", " ").replace("\r", " ")
        message = (
            f"query syntax error at column {self.column}: {problem}\n"
            f"  {shown}\n"
            f"  {' ' * position}^"
        )
        super().__init__(message, details={"position": position, "column": self.column})


# ----------------------------------------------------------------------------------------------
# Literal values: the query's text pre-interpreted once as every type it could be compared with.


@dataclass(frozen=True)
class _DateVal:
    """A point in time as written (wall clock), with how many leading parts were given:
    1 year, 2 month, 3 day, 4 hour, 5 minute, 6 second, 7 microsecond."""

    parts: tuple[int, ...]
    precision: int


def _days_in_month(year: int, month: int) -> int:
    if month == 2:
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return 29 if leap else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _parse_date(text: str) -> _DateVal | None:
    """``YYYY[-MM[-DD[THH[:MM[:SS[.ffffff]]]][zone]]]`` with valid ranges, else None."""
    m = _DATE_RE.fullmatch(text.strip())
    if not m:
        return None
    groups = m.groups()
    parts: list[int] = []
    for i, g in enumerate(groups):
        if g is None:
            break
        parts.append(int(g.ljust(6, "0")) if i == 6 else int(g))
    if len(parts) >= 2 and not 1 <= parts[1] <= 12:
        return None
    if len(parts) >= 3 and not 1 <= parts[2] <= _days_in_month(parts[0], parts[1]):
        return None
    limits = (23, 59, 59)
    for value, limit in zip(parts[3:6], limits[: len(parts[3:6])], strict=True):
        if value > limit:
            return None
    return _DateVal(tuple(parts), len(parts))


def _date_of(value: _dt.date) -> _DateVal:
    if isinstance(value, _dt.datetime):
        parts = (value.year, value.month, value.day, value.hour, value.minute, value.second,
                 value.microsecond)
        return _DateVal(parts, 7)
    return _DateVal((value.year, value.month, value.day), 3)


def _parse_number(text: str) -> int | float | None:
    t = text.strip()
    if not _NUMBER_RE.fullmatch(t):
        return None
    if any(c in t for c in ".eE"):
        return float(t)
    return int(t)


@dataclass(frozen=True)
class _Literal:
    """The value of a comparison, as written and as each type it may be compared as."""

    text: str
    quoted: bool
    fold: str
    number: int | float | None
    date: _DateVal | None
    boolean: bool | None

    @classmethod
    def of(cls, text: str, quoted: bool) -> _Literal:
        return cls(
            text=text,
            quoted=quoted,
            fold=text.casefold(),
            number=_parse_number(text),
            date=_parse_date(text),
            boolean=_BOOLS.get(text.strip().casefold()),
        )


# ----------------------------------------------------------------------------------------------
# Comparing one frontmatter value with one literal.


def _cmp(a: Any, b: Any) -> int:
    return (a > b) - (a < b)


def _cmp_dates(a: _DateVal, b: _DateVal) -> int:
    p = min(a.precision, b.precision)
    return _cmp(a.parts[:p], b.parts[:p])


def _order(value: Any, lit: _Literal, ordered: bool) -> int | None:
    """-1/0/1 for value vs literal, or None when they are not comparable (mixed types, NaN, or
    an ordering asked of booleans).  Never raises."""
    if value is None:
        return None
    if isinstance(value, bool):
        if ordered or lit.boolean is None:
            return None
        return 0 if value == lit.boolean else 1
    if isinstance(value, (int, float)):
        if lit.number is None or value != value or lit.number != lit.number:
            return None
        return _cmp(value, lit.number)
    if isinstance(value, _dt.date):
        if lit.date is None:
            return None
        return _cmp_dates(_date_of(value), lit.date)
    if isinstance(value, str):
        num = _parse_number(value) if lit.number is not None else None
        if num is not None and lit.number is not None:
            return _cmp(num, lit.number)
        date = _parse_date(value) if lit.date is not None else None
        if date is not None and lit.date is not None:
            return _cmp_dates(date, lit.date)
        if ordered and (lit.number is not None or lit.date is not None):
            return None  # a number/date literal against a non-number/non-date string
        fold = value.casefold()
        if ordered and (_parse_number(value) is not None or _parse_date(value) is not None):
            return None  # a numeric/date-like string against a plain-text literal
        return _cmp(fold, lit.fold)
    return None


def _scalar(value: Any, op: str, lit: _Literal) -> bool:
    """``=  <  <=  >  >=`` between one non-list value and the literal."""
    r = _order(value, lit, op != "=")
    if r is None:
        return False
    if op == "=":
        return r == 0
    if op == "<":
        return r < 0
    if op == "<=":
        return r <= 0
    if op == ">":
        return r > 0
    return r >= 0


def field_value(props: Mapping[Any, Any] | None, name: str) -> Any:
    """The value of frontmatter key ``name``, matched case-insensitively (an exact key first,
    then the first key in file order whose casefold equals).  ``None`` when absent or null."""
    if not props or not isinstance(props, Mapping):
        return None
    try:
        if name in props:
            return props[name]
    except TypeError:
        return None
    want = name.casefold()
    for key, value in props.items():
        if str(key).casefold() == want:
            return value
    return None


# ----------------------------------------------------------------------------------------------
# The query tree.


class _Node:
    def matches(self, props: Mapping[Any, Any]) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def fields(self) -> set[str]:  # pragma: no cover - abstract
        raise NotImplementedError


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _needs_quotes(text: str, *, name: bool) -> bool:
    if not text or text.casefold() in _KEYWORDS or text[0] in _QUOTES:
        return True
    if any(c.isspace() or c in "()" for c in text):
        return True
    return name and any(c in _OP_CHARS or c in _QUOTES for c in text)


@dataclass(frozen=True)
class _Comparison(_Node):
    field: str
    op: str  # one of = != < <= > >= contains
    literal: _Literal
    position: int

    def __str__(self) -> str:
        f = _quote(self.field) if _needs_quotes(self.field, name=True) else self.field
        t = self.literal.text
        v = _quote(t) if self.literal.quoted or _needs_quotes(t, name=False) else t
        return f"{f} {self.op} {v}"

    def fields(self) -> set[str]:
        return {self.field.casefold()}

    def matches(self, props: Mapping[Any, Any]) -> bool:
        value = field_value(props, self.field)
        if value is None:
            return False
        op, lit = self.op, self.literal
        is_tags = self.field.casefold() == "tags"
        if is_tags and not isinstance(value, Mapping):
            return self._match_tags(normalize_tags(value))
        if isinstance(value, (list, tuple)):
            if op == "=" or op == "contains":
                return any(_scalar(v, "=", lit) for v in value)
            if op == "!=":
                return not any(_scalar(v, "=", lit) for v in value)
            if lit.number is not None:
                return _scalar(len(value), op, lit)
            return any(_scalar(v, op, lit) for v in value)
        if op == "contains":
            if isinstance(value, str):
                return lit.fold in value.casefold()
            if isinstance(value, Mapping):
                return any(str(k).casefold() == lit.fold for k in value)
            return False
        if op == "!=":
            return not _scalar(value, "=", lit)
        return _scalar(value, op, lit)

    def _match_tags(self, tags: list[Any]) -> bool:
        op = self.op
        want = (self.literal.text.strip().lstrip("#")).casefold()
        folded = [t.casefold() for t in tags]
        if op == "contains":
            want = want.rstrip("/")
            prefix = want + "/"
            return any(t == want or t.startswith(prefix) for t in folded)
        if op == "=":
            return want in folded
        if op == "!=":
            return want not in folded
        lit = _Literal.of(want, self.literal.quoted)
        if lit.number is not None:
            return _scalar(len(tags), op, lit)
        return any(_scalar(t, op, lit) for t in tags)


@dataclass(frozen=True)
class _Not(_Node):
    child: _Node

    def __str__(self) -> str:
        return f"NOT {self.child}"

    def fields(self) -> set[str]:
        return self.child.fields()

    def matches(self, props: Mapping[Any, Any]) -> bool:
        return not self.child.matches(props)


@dataclass(frozen=True)
class _And(_Node):
    children: tuple[_Node, ...]

    def __str__(self) -> str:
        return "(" + " AND ".join(str(c) for c in self.children) + ")"

    def fields(self) -> set[str]:
        return set().union(*(c.fields() for c in self.children))

    def matches(self, props: Mapping[Any, Any]) -> bool:
        return all(c.matches(props) for c in self.children)


@dataclass(frozen=True)
class _Or(_Node):
    children: tuple[_Node, ...]

    def __str__(self) -> str:
        return "(" + " OR ".join(str(c) for c in self.children) + ")"

    def fields(self) -> set[str]:
        return set().union(*(c.fields() for c in self.children))

    def matches(self, props: Mapping[Any, Any]) -> bool:
        return any(c.matches(props) for c in self.children)


class Query:
    """A parsed query.  ``matches(props)`` evaluates it on one page's frontmatter; ``str(q)``
    is a canonical, fully parenthesised form (what was understood); ``fields`` the casefolded
    field names it reads; ``text`` the original string."""

    def __init__(self, text: str, root: _Node):
        self.text = text
        self._root = root
        self.fields: frozenset[str] = frozenset(root.fields())

    def matches(self, props: Mapping[Any, Any] | None) -> bool:
        """True when the page's frontmatter satisfies the query.  Never raises for any
        PyYAML-produced mapping (``None`` is treated as an empty one)."""
        if not isinstance(props, Mapping):
            props = {}
        return self._root.matches(props)

    def __str__(self) -> str:
        return str(self._root)

    def __repr__(self) -> str:
        return f"Query({self.text!r} -> {self._root})"


# ----------------------------------------------------------------------------------------------
# Tokenising and parsing (the parser pulls tokens from the text in the mode it needs, because a
# bare value may contain ':' or '<' while a field name may not).


class _Parser:
    def __init__(self, text: str):
        self.s = text
        self.n = len(text)
        self.i = 0
        self.depth = 0

    # -- low-level scanning -------------------------------------------------------------------
    def error(self, problem: str, position: int) -> QuerySyntaxError:
        return QuerySyntaxError(problem, self.s, min(max(position, 0), self.n))

    def skip_ws(self) -> None:
        while self.i < self.n and self.s[self.i].isspace():
            self.i += 1

    def at_end(self) -> bool:
        self.skip_ws()
        return self.i >= self.n

    def run(self, start: int, stop: frozenset[str] | str) -> int:
        """End of the run of characters from ``start`` that are neither space nor in stop."""
        j = start
        while j < self.n and not self.s[j].isspace() and self.s[j] not in stop:
            j += 1
        return j

    def describe(self, pos: int) -> str:
        """The token at ``pos`` for an error message."""
        if pos >= self.n:
            return "end of query"
        c = self.s[pos]
        if c in "()":
            return f"'{c}'"
        end = self.run(pos, "()") if c not in _QUOTES else min(self.n, pos + 20)
        token = self.s[pos:end]
        if len(token) > 20:
            token = token[:20] + "..."
        return f"'{token}'"

    def peek_word(self) -> tuple[str, int, int]:
        """A bare word at the cursor (after spaces): (word, start, end); '' when none."""
        self.skip_ws()
        start = self.i
        end = self.run(start, _OP_CHARS | frozenset("()") | frozenset(_QUOTES))
        return self.s[start:end], start, end

    def string(self) -> tuple[str, int]:
        """A quoted string at the cursor; returns (text, start position)."""
        start = self.i
        quote = self.s[start]
        out: list[str] = []
        j = start + 1
        while j < self.n:
            c = self.s[j]
            if c == "\\":
                if j + 1 >= self.n:
                    break
                nxt = self.s[j + 1]
                out.append(_ESCAPES.get(nxt, nxt))
                j += 2
                continue
            if c == quote:
                self.i = j + 1
                return "".join(out), start
            out.append(c)
            j += 1
        raise self.error(f"unterminated string starting at column {start + 1}", start)

    # -- grammar ------------------------------------------------------------------------------
    def parse(self) -> _Node:
        if not self.s.strip():
            raise self.error("empty query", 0)
        node = self.or_expr()
        self.skip_ws()
        if self.i < self.n:
            if self.s[self.i] == ")":
                raise self.error("unmatched ')'", self.i)
            raise self.error(
                f"expected AND, OR or end of query, found {self.describe(self.i)}"
                " (quote a value that contains spaces)",
                self.i,
            )
        return node

    def connective(self, keyword: str) -> bool:
        save = self.i
        word, _start, end = self.peek_word()
        if word.casefold() == keyword and (end >= self.n or self.s[end] not in _OP_CHARS):
            self.i = end
            return True
        self.i = save
        return False

    def or_expr(self) -> _Node:
        items = [self.and_expr()]
        while self.connective("or"):
            items.append(self.and_expr())
        return items[0] if len(items) == 1 else _Or(tuple(items))

    def and_expr(self) -> _Node:
        items = [self.not_expr()]
        while self.connective("and"):
            items.append(self.not_expr())
        return items[0] if len(items) == 1 else _And(tuple(items))

    def not_expr(self) -> _Node:
        negate = False
        while True:
            word, start, end = self.peek_word()
            if word.casefold() != "not":
                break
            if end < self.n and self.s[end] in _OP_CHARS:
                raise self.error(
                    f"'{word}' is a keyword; quote it (\"{word}\") to use it as a field name",
                    start,
                )
            self.i = end
            negate = not negate
        node = self.primary()
        if not negate:
            return node
        # comparisons are two-valued, so NOT NOT x is exactly x (and shallow trees stay shallow)
        return node.child if isinstance(node, _Not) else _Not(node)

    def primary(self) -> _Node:
        self.skip_ws()
        if self.i >= self.n:
            raise self.error("expected a condition, found end of query", self.i)
        c = self.s[self.i]
        if c == "(":
            open_at = self.i
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise self.error(f"parentheses nested deeper than {MAX_DEPTH}", open_at)
            self.i += 1
            node = self.or_expr()
            self.skip_ws()
            if self.i >= self.n:
                raise self.error(f"unclosed '(' (opened at column {open_at + 1})", open_at)
            if self.s[self.i] != ")":
                raise self.error(
                    f"expected AND, OR or ')', found {self.describe(self.i)}"
                    " (quote a value that contains spaces)",
                    self.i,
                )
            self.i += 1
            self.depth -= 1
            return node
        if c == ")":
            raise self.error("expected a condition, found ')'", self.i)
        return self.comparison()

    def comparison(self) -> _Comparison:
        start = self.i
        if self.s[start] in _QUOTES:
            field, _ = self.string()
        else:
            field, _s, end = self.peek_word()
            if not field:
                raise self.error(f"expected a field name, found {self.describe(start)}", start)
            if field.casefold() in _KEYWORDS:
                raise self.error(f"expected a condition, found keyword '{field}'", start)
            self.i = end
        op, op_text = self.operator(field)
        literal = self.value(op_text)
        return _Comparison(field, op, literal, start)

    def operator(self, field: str) -> tuple[str, str]:
        """(normalised operator, as typed)."""
        self.skip_ws()
        pos = self.i
        expected = "an operator (: = != < <= > >= contains)"
        if pos >= self.n:
            raise self.error(f"expected {expected} after '{field}', found end of query", pos)
        if self.s[pos] in _OP_CHARS:
            end = pos
            while end < self.n and self.s[end] in _OP_CHARS:
                end += 1
            token = self.s[pos:end]
            if token not in _OPERATORS:
                raise self.error(f"unknown operator '{token}'; expected {expected}", pos)
            self.i = end
            return _OPERATORS[token], token
        word, _s, end = self.peek_word()
        if word.casefold() == "contains":
            self.i = end
            return "contains", word
        raise self.error(f"expected {expected} after '{field}', found {self.describe(pos)}", pos)

    def value(self, shown: str) -> _Literal:
        self.skip_ws()
        pos = self.i
        if pos >= self.n:
            raise self.error(f"expected a value after '{shown}', found end of query", pos)
        c = self.s[pos]
        if c in _QUOTES:
            text, _ = self.string()
            return _Literal.of(text, True)
        if c in "()":
            raise self.error(f"expected a value after '{shown}', found '{c}'", pos)
        end = self.run(pos, "()")
        word = self.s[pos:end]
        if word.casefold() in _KEYWORDS:
            raise self.error(
                f"expected a value after '{shown}', found keyword '{word}'"
                f" (quote it, \"{word}\", to compare with the word)",
                pos,
            )
        self.i = end
        return _Literal.of(word, False)


def parse_query(text: str) -> Query:
    """Parse a query string; raise :class:`QuerySyntaxError` (exit 2) pointing at the first
    offending token: empty query, unbalanced parentheses, a dangling or unknown operator, an
    unterminated quote, or tokens left over after a complete expression."""
    if not isinstance(text, str):
        raise QuerySyntaxError("the query must be a string", "", 0)
    return Query(text, _Parser(text).parse())


# ----------------------------------------------------------------------------------------------
# Sorting.

# Type groups, in the order they appear in BOTH directions (dates first: the default sort is
# on `updated`); the direction only reverses the order inside a group.
_RANK_DATE, _RANK_NUMBER, _RANK_NAN, _RANK_BOOL, _RANK_TEXT, _RANK_LIST, _RANK_OTHER = range(7)


def _value_key(value: Any, depth: int = 0) -> tuple:
    """(rank, comparable) for one present value; values of one rank are mutually comparable."""
    if isinstance(value, bool):
        return (_RANK_BOOL, int(value))
    if isinstance(value, (int, float)):
        if isinstance(value, float) and math.isnan(value):
            return (_RANK_NAN, 0)
        return (_RANK_NUMBER, value)
    if isinstance(value, _dt.date):
        d = _date_of(value)
        return (_RANK_DATE, d.parts + (0,) * (7 - len(d.parts)))
    if isinstance(value, str):
        num = _parse_number(value)
        if num is not None and not (isinstance(num, float) and math.isnan(num)):
            return (_RANK_NUMBER, num)
        date = _parse_date(value)
        if date is not None:
            return (_RANK_DATE, date.parts + (0,) * (7 - len(date.parts)))
        return (_RANK_TEXT, (value.casefold(), value))
    if isinstance(value, (list, tuple)) and depth < 20:
        return (_RANK_LIST, tuple(_value_key(v, depth + 1) for v in value if v is not None))
    return (_RANK_OTHER, repr(value))


def sort_key(props: Mapping[Any, Any] | None, field: str) -> tuple:
    """A key ordering pages by frontmatter ``field`` ascending, pages without it LAST.

    ``(0, rank, value)`` when present, ``(1,)`` when missing or null, so ``sorted(pages,
    key=lambda p: (sort_key(p.props, f), p.id))`` is ``--sort f``.  The rank keeps mixed types
    comparable by grouping them: dates (and date-like strings, compared on the wall clock),
    numbers (and numeric strings), NaN, booleans, text (case-insensitive), lists
    (element-wise), anything else.  For descending order do not reverse this key (missing pages
    would come first, and the groups would flip): use :func:`sort_pages`.
    """
    value = field_value(props, field)
    if value is None:
        return (1,)
    return (0,) + _value_key(value)


def sort_pages(
    pages: Iterable[tuple[str, Mapping[Any, Any] | None]], spec: str = DEFAULT_SORT
) -> list[tuple[str, Any]]:
    """Sort ``(page_id, props)`` pairs for ``--sort spec``: ``"F"`` (or ``"+F"``) ascending by
    field F, ``"-F"`` descending.  Pages without F (or with null) come last in both directions;
    values of an unusual type for the field come after the usual ones in both directions (the
    type groups of :func:`sort_key` keep their order; the direction applies inside each);
    ties, and the pages without F, are ordered by page id ascending.  Returns the same pair
    objects in a new list.  Raises ``UsageError`` for an empty field name."""
    spec = (spec or "").strip()
    descending = spec.startswith("-")
    field = spec[1:].strip() if spec.startswith(("+", "-")) else spec
    if not field:
        raise UsageError(f"--sort needs a field name (F or -F), got {spec!r}")
    groups: dict[int, list[tuple[Any, str, Any]]] = {}
    missing: list[tuple[str, Any]] = []
    for page in pages:
        page_id, props = page[0], page[1]
        key = sort_key(props, field)
        if key == (1,):
            missing.append((page_id, page))
        else:
            groups.setdefault(key[1], []).append((key[2], page_id, page))
    out: list[Any] = []
    for rank in sorted(groups):
        group = groups[rank]
        group.sort(key=lambda item: item[1])  # id order first: the stable sort keeps it for ties
        group.sort(key=lambda item: item[0], reverse=descending)
        out.extend(p for _v, _i, p in group)
    missing.sort(key=lambda item: item[0])
    return out + [p for _i, p in missing]
