"""``--where`` predicates the light path may evaluate: parsed, checked against an allow-list, re-rendered for DuckDB.

The light path answers only when it gives the answer Spark gives. So a predicate is never pasted into SQL:
it is tokenized and parsed into a small tree here, every identifier is resolved against the table's columns
(and quoted), every literal is re-rendered, and only constructs known to mean the same in Spark SQL and in
DuckDB are accepted:

- comparisons ``= <> != < <= > >=`` between values of one kind (numbers, strings, dates, timestamps,
  booleans), ``[NOT] BETWEEN``, ``[NOT] IN (literals)``, ``[NOT] LIKE 'pattern'`` (no backslash, whose escape
  rules differ), ``IS [NOT] NULL``, ``AND`` / ``OR`` / ``NOT``, parentheses;
- literals: integers, decimals, strings, ``TRUE``/``FALSE``/``NULL``, ``DATE '...'``, ``TIMESTAMP '...'``;
- functions both dialects define alike: ``lower``, ``upper``, ``length``, ``abs``, ``coalesce``, ``year``,
  ``month``, ``day``.

Anything else (arithmetic, casts, other functions, implicit conversions between kinds) raises
``NotExactError`` and the read goes to Spark, which parses the predicate as it always did.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from .errors import InvalidArgumentError, NotExactError

if TYPE_CHECKING:
    import pyarrow as pa


_TOKEN = re.compile(
    r"""\s*(?:
        (?P<num>\d+(?:\.\d*)?|\.\d+)(?![A-Za-z_0-9])
      | (?P<str>'(?:[^'\\]|'')*')
      | (?P<qid>`(?:[^`]|``)+`)
      | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<op><=|>=|<>|!=|==|=|<|>|\(|\)|,|-)
    )""",
    re.VERBOSE,
)
_KEYWORDS = {"AND", "OR", "NOT", "IN", "LIKE", "IS", "NULL", "TRUE", "FALSE", "BETWEEN", "DATE", "TIMESTAMP"}
#: Words Spark reads in a predicate that the light parser would take for column names (niladic functions, CASE,
#: typed literals): a predicate with one of them is left to Spark's own check.
SPARK_WORDS = frozenset({"CASE", "INTERVAL", "CURRENT_DATE", "CURRENT_TIMESTAMP", "CURRENT_TIME", "CURRENT_USER",
                          "USER", "SESSION_USER", "TIMESTAMP_NTZ", "TIMESTAMP_LTZ", "X"})  # fmt: skip
_COMPARISONS = {"=": "=", "==": "=", "<>": "<>", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
# name -> (argument kinds, result kind); "same" means: the arguments' common kind
_FUNCTIONS = {
    "lower": (("string",), "string"),
    "upper": (("string",), "string"),
    "length": (("string",), "number"),
    "abs": (("number",), "number"),
    "year": (("date|timestamp",), "number"),
    "month": (("date|timestamp",), "number"),
    "day": (("date|timestamp",), "number"),
}
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}\Z")
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?\Z")


@dataclass
class _Tok:
    kind: str  # num, str, id, qid, op, kw, end
    text: str


def _tokens(text: str) -> list[_Tok]:
    out: list[_Tok] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise NotExactError(
                f"the predicate has text the light path does not read at {text[pos : pos + 12].strip()!r}"
            )
        kind = m.lastgroup or ""
        value = m.group(kind)
        if kind == "id" and value.upper() in _KEYWORDS:
            out.append(_Tok("kw", value.upper()))
        else:
            out.append(_Tok(kind, value))
        pos = m.end()
    out.append(_Tok("end", ""))
    return out


def _kind_of(t: pa.DataType) -> str | None:
    import pyarrow as pa

    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "number"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_timestamp(t):
        return "timestamp"
    return None


def quote_ident(name: str) -> str:
    """A column name as a DuckDB identifier."""
    return '"' + name.replace('"', '""') + '"'


def sql_literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


class _Parser:
    def __init__(self, text: str, schema: pa.Schema, what: str = "where") -> None:
        self.what = what
        self.toks = _tokens(text)
        self.i = 0
        self.columns = {f.name.lower(): f for f in schema}

    # --- token helpers
    def peek(self, offset: int = 0) -> _Tok:
        return self.toks[min(self.i + offset, len(self.toks) - 1)]

    def take(self) -> _Tok:
        tok = self.peek()
        self.i += 1
        return tok

    def accept(self, kind: str, text: str | None = None) -> bool:
        tok = self.peek()
        if tok.kind == kind and (text is None or tok.text == text):
            self.i += 1
            return True
        return False

    def expect(self, kind: str, text: str) -> None:
        if not self.accept(kind, text):
            raise NotExactError(f"the light path expected {text!r} in the predicate near {self.peek().text!r}")

    # --- grammar: returns (DuckDB SQL, kind)
    def parse(self) -> str:
        sql, kind = self.or_()
        if self.peek().kind != "end":
            raise NotExactError(f"the light path does not read the predicate past {self.peek().text!r}")
        if kind not in ("boolean", "null"):
            raise NotExactError("the predicate is not a condition (true/false)")
        return sql

    def or_(self) -> tuple[str, str]:
        sql, kind = self.and_()
        while self.accept("kw", "OR"):
            right, rkind = self.and_()
            self._bool(kind, rkind)
            sql, kind = f"({sql} OR {right})", "boolean"
        return sql, kind

    def and_(self) -> tuple[str, str]:
        sql, kind = self.not_()
        while self.accept("kw", "AND"):
            right, rkind = self.not_()
            self._bool(kind, rkind)
            sql, kind = f"({sql} AND {right})", "boolean"
        return sql, kind

    def not_(self) -> tuple[str, str]:
        if self.accept("kw", "NOT"):
            sql, kind = self.not_()
            self._bool(kind)
            return f"(NOT {sql})", "boolean"
        return self.predicate()

    @staticmethod
    def _bool(*kinds: str) -> None:
        if any(k not in ("boolean", "null") for k in kinds):
            raise NotExactError("AND / OR / NOT of a value that is not a condition")

    @staticmethod
    def _same(a: str, b: str, what: str) -> None:
        if a != b and "null" not in (a, b):
            raise NotExactError(f"{what} between a {a} and a {b} (the dialects convert differently)")

    def predicate(self) -> tuple[str, str]:
        left, lkind = self.value()
        tok = self.peek()
        if tok.kind == "op" and tok.text in _COMPARISONS:
            self.take()
            right, rkind = self.value()
            self._same(lkind, rkind, "a comparison")
            return f"({left} {_COMPARISONS[tok.text]} {right})", "boolean"
        if self.accept("kw", "IS"):
            negate = self.accept("kw", "NOT")
            self.expect("kw", "NULL")
            return f"({left} IS {'NOT ' if negate else ''}NULL)", "boolean"
        negate = False
        if (
            tok.kind == "kw"
            and tok.text == "NOT"
            and self.peek(1).kind == "kw"
            and self.peek(1).text in ("IN", "LIKE", "BETWEEN")
        ):
            self.take()
            negate = True
        neg = "NOT " if negate else ""
        if self.accept("kw", "IN"):
            self.expect("op", "(")
            items = []
            while True:
                item, ikind = self.literal()
                self._same(lkind, ikind, "IN")
                if ikind == "null":
                    raise NotExactError("NULL in an IN list")
                items.append(item)
                if not self.accept("op", ","):
                    break
            self.expect("op", ")")
            return f"({left} {neg}IN ({', '.join(items)}))", "boolean"
        if self.accept("kw", "LIKE"):
            pat = self.take()
            if pat.kind != "str":
                raise NotExactError("LIKE takes a string literal pattern on the light path")
            text = pat.text[1:-1]
            if "\\" in text or "''" in text:
                raise NotExactError("a LIKE pattern with a backslash (the escape rules differ)")
            self._same(lkind, "string", "LIKE")
            return f"({left} {neg}LIKE {sql_literal(text)})", "boolean"
        if self.accept("kw", "BETWEEN"):
            low, k1 = self.value()
            self.expect("kw", "AND")
            high, k2 = self.value()
            self._same(lkind, k1, "BETWEEN")
            self._same(lkind, k2, "BETWEEN")
            return f"({left} {neg}BETWEEN {low} AND {high})", "boolean"
        if negate:
            raise NotExactError("NOT where the light path expected IN, LIKE or BETWEEN")
        return left, lkind

    def value(self) -> tuple[str, str]:
        tok = self.peek()
        if self.accept("op", "("):
            sql, kind = self.or_()
            self.expect("op", ")")
            return f"({sql})", kind
        if tok.kind in ("id", "qid") and self.peek(1).kind == "op" and self.peek(1).text == "(":
            return self.function()
        if tok.kind in ("id", "qid"):
            self.take()
            name = tok.text[1:-1].replace("``", "`") if tok.kind == "qid" else tok.text
            field = self.columns.get(name.lower())
            if field is None:
                raise InvalidArgumentError(
                    f"invalid {self.what} predicate: no column {name!r}; the columns are {', '.join(self.columns_list())}"
                )
            col_kind = _kind_of(field.type)
            if col_kind is None:
                raise NotExactError(
                    f"column {field.name!r} is of type {field.type}, which the light path does not compare"
                )
            return quote_ident(field.name), col_kind
        return self.literal()

    def columns_list(self) -> list[str]:
        return [f.name for f in self.columns.values()]

    def function(self) -> tuple[str, str]:
        name = self.take().text.strip("`").lower()
        self.expect("op", "(")
        args: list[tuple[str, str]] = []
        if not self.accept("op", ")"):
            while True:
                args.append(self.value())
                if not self.accept("op", ","):
                    break
            self.expect("op", ")")
        if name == "coalesce":
            if not args:
                raise NotExactError("coalesce() without arguments")
            found = {k for _, k in args if k != "null"}
            if len(found) > 1:
                raise NotExactError("coalesce() of values of different kinds")
            return f"coalesce({', '.join(s for s, _ in args)})", found.pop() if found else "null"
        if name not in _FUNCTIONS:
            raise NotExactError(f"function {name}() is not on the light path's list of functions both dialects share")
        kinds, result = _FUNCTIONS[name]
        if len(args) != len(kinds) or any(k not in want.split("|") for (_, k), want in zip(args, kinds, strict=False)):
            raise NotExactError(f"{name}() with arguments the light path does not check")
        return f"{name}({', '.join(s for s, _ in args)})", result

    def literal(self) -> tuple[str, str]:
        tok = self.take()
        negative = False
        if tok.kind == "op" and tok.text == "-" and self.peek().kind == "num":  # a negative number, not arithmetic
            negative, tok = True, self.take()
        if tok.kind == "num":
            try:
                Decimal(tok.text)
            except InvalidOperation:
                raise NotExactError(f"number {tok.text!r}") from None
            if "." in tok.text:
                # Spark reads 1.5 as DECIMAL(2,1); DuckDB as DECIMAL too. Keep it an exact decimal literal.
                return f"{'-' if negative else ''}{tok.text}", "number"
            if len(tok.text.lstrip("0")) > 18:
                raise NotExactError("an integer literal wider than BIGINT")
            return f"{'-' if negative else ''}{int(tok.text)}", "number"
        if tok.kind == "str":
            text = tok.text[1:-1]
            if "\\" in text or "''" in text:  # Spark: '' joins two literals, \ escapes; DuckDB: '' is a quote
                raise NotExactError(
                    "a string literal with a backslash or a doubled quote (the dialects read them differently)"
                )
            return sql_literal(text), "string"
        if tok.kind == "kw" and tok.text in ("TRUE", "FALSE"):
            return tok.text, "boolean"
        if tok.kind == "kw" and tok.text == "NULL":
            return "NULL", "null"
        if tok.kind == "kw" and tok.text in ("DATE", "TIMESTAMP") and self.peek().kind == "str":
            text = self.take().text[1:-1]
            if tok.text == "DATE":
                if not _DATE.match(text):
                    raise NotExactError(f"DATE literal {text!r} outside the form YYYY-MM-DD")
                try:
                    date.fromisoformat(text)
                except ValueError:
                    raise InvalidArgumentError(f"invalid where predicate: no such date {text!r}") from None
                return f"DATE {sql_literal(text)}", "date"
            if not _TIMESTAMP.match(text):
                raise NotExactError(f"TIMESTAMP literal {text!r} outside the form YYYY-MM-DD HH:MM[:SS[.ffffff]]")
            try:
                datetime.fromisoformat(text)
            except ValueError:
                raise InvalidArgumentError(f"invalid where predicate: no such timestamp {text!r}") from None
            return f"TIMESTAMP {sql_literal(text.replace('T', ' '))}", "timestamp"
        raise NotExactError(f"the light path does not read {tok.text or 'the end'!r} in the predicate")


def to_duckdb(predicate: str, schema: pa.Schema, *, what: str = "where") -> str:
    """The predicate as a DuckDB expression over ``schema``'s columns (``what``: the option errors name).

    Raises:
        NotExactError: the predicate uses something outside the allow-list (the read goes to Spark).
        InvalidArgumentError: it names a column the table does not have.
    """
    return _Parser(predicate, schema, what).parse()


def check_columns(predicate: str, schema: pa.Schema, *, what: str = "where") -> None:
    """Refuse a predicate that names a column ``schema`` lacks, where the light parser reads the predicate (anything
    else is left to Spark, which checks it on its own).

    Raises:
        InvalidArgumentError: the predicate names a column ``schema`` does not have.
    """
    try:
        words = {t.text.upper() for t in _tokens(predicate) if t.kind == "id"}
        if words & SPARK_WORDS:
            return
        to_duckdb(predicate, schema, what=what)
    except NotExactError:
        return


# --- row filters of writes: a predicate as "is TRUE", for the light libraries' deletes and overwrites -------------
#: One node of a row filter (``row_filter``): ``("and", [nodes])``, ``("or", [nodes])``, ``("cmp", column, op, value)``,
#: ``("in", column, [values])``, ``("not_in", column, [values])``, ``("null", column)``, ``("not_null", column)``,
#: ``("true",)``, ``("false",)``. Values are Python ints, strings, booleans and dates.
FilterNode = tuple[Any, ...]
_NEGATED = {"=": "<>", "<>": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}
_FLIPPED = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
#: Column kinds a write filter compares: no floats (NaN orders differently), decimals or timestamps (literal types and
#: time zones differ between the libraries).
_FILTER_KINDS = ("integer", "string", "boolean", "date")


def _filter_kind(t: pa.DataType) -> str | None:
    import pyarrow as pa

    if pa.types.is_integer(t):
        return "integer"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_date(t):
        return "date"
    return None


class _FilterParser:
    """Parses the write subset of a ``--where`` predicate into two trees: rows where it is TRUE, rows where it is FALSE.

    A row where the predicate is NULL is in neither, so a library that reads either tree with two-valued logic (or
    adds its own null handling to a NOT, as pyiceberg's delete does) deletes exactly the rows Spark's DELETE does: the
    trees hold no NOT, and every comparison is guarded by its column's IS NOT NULL.
    """

    def __init__(self, text: str, schema: pa.Schema) -> None:
        words = {t.text.upper() for t in _tokens(text) if t.kind == "id"}
        if words & SPARK_WORDS:
            raise NotExactError("the predicate uses words only Spark reads")
        self.toks = _tokens(text)
        self.i = 0
        self.columns = {f.name.lower(): f for f in schema}

    def peek(self, offset: int = 0) -> _Tok:
        return self.toks[min(self.i + offset, len(self.toks) - 1)]

    def accept(self, kind: str, text: str | None = None) -> bool:
        tok = self.peek()
        if tok.kind == kind and (text is None or tok.text == text):
            self.i += 1
            return True
        return False

    def expect(self, kind: str, text: str) -> None:
        if not self.accept(kind, text):
            raise NotExactError(f"the light path expected {text!r} in the predicate near {self.peek().text!r}")

    def parse(self) -> tuple[FilterNode, FilterNode]:
        out = self.or_()
        if self.peek().kind != "end":
            raise NotExactError(f"the light path does not read the predicate past {self.peek().text!r}")
        return out

    def or_(self) -> tuple[FilterNode, FilterNode]:
        parts = [self.and_()]
        while self.accept("kw", "OR"):
            parts.append(self.and_())
        if len(parts) == 1:
            return parts[0]
        return ("or", [t for t, _ in parts]), ("and", [f for _, f in parts])

    def and_(self) -> tuple[FilterNode, FilterNode]:
        parts = [self.not_()]
        while self.accept("kw", "AND"):
            parts.append(self.not_())
        if len(parts) == 1:
            return parts[0]
        return ("and", [t for t, _ in parts]), ("or", [f for _, f in parts])

    def not_(self) -> tuple[FilterNode, FilterNode]:
        if self.accept("kw", "NOT"):
            true, false = self.not_()
            return false, true
        return self.atom()

    def column(self) -> tuple[str, str] | None:
        tok = self.peek()
        if tok.kind not in ("id", "qid") or (self.peek(1).kind == "op" and self.peek(1).text == "("):
            return None
        self.i += 1
        name = tok.text[1:-1].replace("``", "`") if tok.kind == "qid" else tok.text
        field = self.columns.get(name.lower())
        if field is None:
            raise InvalidArgumentError(f"invalid where predicate: no column {name!r}; the columns are "
                                       f"{', '.join(f.name for f in self.columns.values())}")  # fmt: skip
        kind = _filter_kind(field.type)
        if kind is None:
            raise NotExactError(f"column {field.name!r} is of type {field.type}, which the light path does not filter "
                                "writes on")  # fmt: skip
        return field.name, kind

    def literal(self, kind: str) -> object:
        tok = self.peek()
        self.i += 1
        negative = tok.kind == "op" and tok.text == "-" and self.peek().kind == "num"
        if negative:
            tok = self.peek()
            self.i += 1
        if tok.kind == "num" and kind == "integer" and "." not in tok.text:
            if len(tok.text.lstrip("0")) > 18:
                raise NotExactError("an integer literal wider than BIGINT")
            return -int(tok.text) if negative else int(tok.text)
        if tok.kind == "str" and kind == "string":
            text = tok.text[1:-1]
            if "\\" in text or "''" in text:
                raise NotExactError("a string literal with a backslash or a doubled quote")
            return text
        if tok.kind == "kw" and tok.text in ("TRUE", "FALSE") and kind == "boolean":
            return tok.text == "TRUE"
        if tok.kind == "kw" and tok.text == "DATE" and kind == "date" and self.peek().kind == "str":
            text = self.peek().text[1:-1]
            self.i += 1
            if not _DATE.match(text):
                raise NotExactError(f"DATE literal {text!r} outside the form YYYY-MM-DD")
            try:
                return date.fromisoformat(text)
            except ValueError:
                raise InvalidArgumentError(f"invalid where predicate: no such date {text!r}") from None
        raise NotExactError(f"the light path compares a {kind} column with a {kind} literal only, not "
                            f"{tok.text or 'the end'!r}")  # fmt: skip

    def atom(self) -> tuple[FilterNode, FilterNode]:
        if self.accept("op", "("):
            out = self.or_()
            self.expect("op", ")")
            return out
        if self.peek().kind == "kw" and self.peek().text in ("TRUE", "FALSE"):
            truth = self.peek().text == "TRUE"
            self.i += 1
            return (("true",), ("false",)) if truth else (("false",), ("true",))
        col = self.column()
        if col is None:  # a literal first: ``5 < id``
            start = self.i
            for kind in _FILTER_KINDS:
                self.i = start
                try:
                    value = self.literal(kind)
                except NotExactError:
                    continue
                tok = self.peek()
                if tok.kind != "op" or tok.text not in _COMPARISONS:
                    break
                self.i += 1
                other = self.column()
                if other is None or other[1] != kind:
                    break
                return self.compare(other[0], _FLIPPED[_COMPARISONS[tok.text]], value)
            raise NotExactError("the light path filters writes by comparisons of a column with a literal")
        name, kind = col
        if self.accept("kw", "IS"):
            negate = self.accept("kw", "NOT")
            self.expect("kw", "NULL")
            null, not_null = ("null", name), ("not_null", name)
            return (not_null, null) if negate else (null, not_null)
        negate = self.peek().kind == "kw" and self.peek().text == "NOT"
        if negate:
            self.i += 1
        if self.accept("kw", "IN"):
            self.expect("op", "(")
            values = [self.literal(kind)]
            while self.accept("op", ","):
                values.append(self.literal(kind))
            self.expect("op", ")")
            guard = ("not_null", name)
            within: FilterNode = ("and", [guard, ("in", name, values)])
            without: FilterNode = ("and", [guard, ("not_in", name, values)])
            return (without, within) if negate else (within, without)
        if self.accept("kw", "BETWEEN"):
            low = self.literal(kind)
            self.expect("kw", "AND")
            high = self.literal(kind)
            guard = ("not_null", name)
            inside: FilterNode = ("and", [guard, ("cmp", name, ">=", low), ("cmp", name, "<=", high)])
            outside: FilterNode = ("and", [guard, ("or", [("cmp", name, "<", low), ("cmp", name, ">", high)])])
            return (outside, inside) if negate else (inside, outside)
        if negate:
            raise NotExactError("NOT where the light path expected IN or BETWEEN")
        tok = self.peek()
        if tok.kind != "op" or tok.text not in _COMPARISONS:
            raise NotExactError(f"the light path does not read {tok.text or 'the end'!r} in the predicate")
        self.i += 1
        return self.compare(name, _COMPARISONS[tok.text], self.literal(kind))

    @staticmethod
    def compare(name: str, op: str, value: object) -> tuple[FilterNode, FilterNode]:
        guard = ("not_null", name)
        return ("and", [guard, ("cmp", name, op, value)]), ("and", [guard, ("cmp", name, _NEGATED[op], value)])


def row_filter(predicate: str, schema: pa.Schema) -> FilterNode:
    """The rows a Spark SQL ``predicate`` holds TRUE for, as a tree (``FilterNode``) the light libraries' deletes and
    overwrites take; a row where it is FALSE or NULL is not selected, as in Spark's ``DELETE ... WHERE``.

    Only comparisons of an integer, string, boolean or date column with a literal of its kind, ``[NOT] IN``,
    ``[NOT] BETWEEN``, ``IS [NOT] NULL``, ``AND`` / ``OR`` / ``NOT`` and parentheses are read.

    Raises:
        NotExactError: anything else (the write goes to Spark).
        InvalidArgumentError: the predicate names a column ``schema`` lacks.
    """
    return _FilterParser(str(predicate), schema).parse()[0]
