"""A small parser for the column list users pass to ``create --schema``.

The text is parsed into columns and types here, in Python, so a typo is reported before any engine
starts, and only re-spelled, quoted DDL built from the parsed pieces ever reaches Spark.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import InvalidArgumentError, invalid
from .identifiers import quote, validate_part

_PRIMITIVES = {
    "boolean": "BOOLEAN", "bool": "BOOLEAN",
    "tinyint": "TINYINT", "byte": "TINYINT",
    "smallint": "SMALLINT", "short": "SMALLINT",
    "int": "INT", "integer": "INT",
    "bigint": "BIGINT", "long": "BIGINT",
    "float": "FLOAT", "real": "FLOAT",
    "double": "DOUBLE",
    "string": "STRING", "text": "STRING",
    "binary": "BINARY",
    "date": "DATE",
    "timestamp": "TIMESTAMP",
    "timestamp_ntz": "TIMESTAMP_NTZ",
}  # fmt: skip
_TOKEN = re.compile(
    r"\s*(?:(?P<word>[A-Za-z_][A-Za-z0-9_]*)|(?P<num>\d+)|(?P<str>'(?:[^'\\]|\\.|'')*')|(?P<sym>[<>(),:]))"
)


@dataclass(frozen=True)
class Column:
    """One column: name, normalised Spark SQL type, nullability, optional comment."""

    name: str
    type: str
    nullable: bool = True
    comment: str | None = None

    def ddl(self) -> str:
        text = f"{quote(self.name)} {self.type}"
        if not self.nullable:
            text += " NOT NULL"
        if self.comment:
            text += " COMMENT " + _sql_string(self.comment)
        return text


def _sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


class _Tokens:
    def __init__(self, text: str) -> None:
        self.text = text
        self.items: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise InvalidArgumentError(f"invalid schema: unexpected {text[pos:].strip()[:20]!r}")
            kind = m.lastgroup or ""
            self.items.append((kind, m.group(kind)))
            pos = m.end()
        self.i = 0

    def peek(self) -> tuple[str, str] | None:
        return self.items[self.i] if self.i < len(self.items) else None

    def next(self, expected: str | None = None) -> tuple[str, str]:
        tok = self.peek()
        if tok is None:
            raise InvalidArgumentError(f"invalid schema: ended early{f', expected {expected!r}' if expected else ''}")
        if expected is not None and tok[1].lower() != expected.lower():
            raise InvalidArgumentError(f"invalid schema: expected {expected!r}, found {tok[1]!r}")
        self.i += 1
        return tok

    def accept(self, value: str) -> bool:
        tok = self.peek()
        if tok is not None and tok[1].lower() == value.lower():
            self.i += 1
            return True
        return False


def _parse_type(toks: _Tokens) -> str:
    kind, word = toks.next()
    if kind != "word":
        raise InvalidArgumentError(f"invalid schema: expected a type, found {word!r}")
    low = word.lower()
    if low in ("decimal", "numeric", "dec"):
        if toks.accept("("):
            p = int(toks.next()[1])
            s = int(toks.next()[1]) if toks.accept(",") else 0
            toks.next(")")
            if not (1 <= p <= 38 and 0 <= s <= p):
                raise InvalidArgumentError(f"invalid schema: DECIMAL({p},{s}) is out of range (precision 1-38)")
            return f"DECIMAL({p},{s})"
        return "DECIMAL(10,0)"
    if low in ("varchar", "char"):
        toks.next("(")
        toks.next()
        toks.next(")")
        return "STRING"
    if low == "array":
        toks.next("<")
        inner = _parse_type(toks)
        toks.next(">")
        return f"ARRAY<{inner}>"
    if low == "map":
        toks.next("<")
        key = _parse_type(toks)
        toks.next(",")
        value = _parse_type(toks)
        toks.next(">")
        return f"MAP<{key}, {value}>"
    if low == "struct":
        toks.next("<")
        fields = []
        while True:
            name = validate_part(toks.next()[1], what="field name")
            toks.accept(":")
            ftype = _parse_type(toks)
            fields.append(f"{quote(name)}: {ftype}")
            if not toks.accept(","):
                break
        toks.next(">")
        return f"STRUCT<{', '.join(fields)}>"
    if low in _PRIMITIVES:
        return _PRIMITIVES[low]
    raise InvalidArgumentError(f"invalid schema: unknown type {word!r}")


def parse_schema(text: str) -> list[Column]:
    """Parse ``"id BIGINT NOT NULL, ts TIMESTAMP, tags ARRAY<STRING>"`` into columns.

    Raises:
        InvalidArgumentError: on any syntax error, unknown type, bad or duplicate column name.
    """
    if not text or not text.strip():
        raise InvalidArgumentError("invalid schema: it is empty; expected e.g. 'id BIGINT, ts TIMESTAMP'")
    toks = _Tokens(text)
    columns: list[Column] = []
    seen: set[str] = set()
    while True:
        kind, name = toks.next()
        if kind != "word":
            raise InvalidArgumentError(f"invalid schema: expected a column name, found {name!r}")
        validate_part(name, what="column name")
        if name.lower() in seen:
            raise InvalidArgumentError(f"invalid schema: column {name!r} appears twice")
        seen.add(name.lower())
        ctype = _parse_type(toks)
        nullable = True
        comment = None
        while True:
            if toks.accept("not"):
                toks.next("null")
                nullable = False
            elif toks.accept("comment"):
                k, v = toks.next()
                if k != "str":
                    raise InvalidArgumentError("invalid schema: COMMENT needs a quoted string")
                comment = v[1:-1].replace("''", "'").replace("\\'", "'")
            else:
                break
        columns.append(Column(name, ctype, nullable, comment))
        if toks.peek() is None:
            break
        toks.next(",")
    return columns


def schema_ddl(columns: list[Column]) -> str:
    return ", ".join(c.ddl() for c in columns)


_POSITION = re.compile(r"\s+(?:(?P<first>FIRST)|AFTER\s+(?P<after>[A-Za-z_][A-Za-z0-9_]*))\s*\Z", re.IGNORECASE)


def parse_type(text: str) -> str:
    """Parse one SQL type (``"bigint"``, ``"decimal(12, 2)"``) into lakecat's normalised spelling."""
    toks = _Tokens(text or "")
    if toks.peek() is None:
        raise InvalidArgumentError("invalid type: it is empty; expected e.g. BIGINT or DECIMAL(12,2)")
    ctype = _parse_type(toks)
    if toks.peek() is not None:
        raise InvalidArgumentError(f"invalid type {text!r}: unexpected {toks.peek()[1]!r}")  # type: ignore[index]
    return ctype


def parse_column_def(text: str) -> tuple[Column, str | None]:
    """Parse ``"c TYPE [NOT NULL] [COMMENT '...'] [AFTER x | FIRST]"`` into a column and its position.

    The position is ``"FIRST"``, ``"AFTER x"`` or None (at the end).
    """
    text = str(text or "")
    position = None
    m = _POSITION.search(text)
    if m:
        position = "FIRST" if m.group("first") else f"AFTER {validate_part(m.group('after'), what='column name')}"
        text = text[: m.start()]
    columns = parse_schema(text)
    if len(columns) != 1:
        raise invalid(f"invalid add_columns item {text!r}: one column per item of the list",
                      f"invalid --add-column {text!r}: one column per --add-column (repeat the option)")  # fmt: skip
    return columns[0], position


@dataclass(frozen=True)
class SchemaChange:
    """One schema change of ``alter``: ``add``, ``rename``, ``drop``, ``widen`` or ``comment`` a column."""

    kind: str
    column: str
    new_name: str | None = None
    type: str | None = None
    nullable: bool = True
    comment: str | None = None
    position: str | None = None

    def __str__(self) -> str:
        if self.kind == "add":
            col = Column(self.column, self.type or "", self.nullable, self.comment)
            return f"add column {col.ddl().replace('`', '')}" + (f" {self.position}" if self.position else "")
        if self.kind == "rename":
            return f"rename column {self.column} to {self.new_name}"
        if self.kind == "drop":
            return f"drop column {self.column}"
        if self.kind == "widen":
            return f"widen column {self.column} to {self.type}"
        return f"set comment of column {self.column}"


def widening_allowed(old: str, new: str) -> bool:
    """int -> bigint, float -> double, decimal(p, s) -> decimal(p2, s) with p2 > p: the widenings every format reads."""
    if (old, new) in {("INT", "BIGINT"), ("FLOAT", "DOUBLE")}:
        return True
    d_old = re.fullmatch(r"DECIMAL\((\d+),(\d+)\)", old)
    d_new = re.fullmatch(r"DECIMAL\((\d+),(\d+)\)", new)
    return bool(d_old and d_new and d_old.group(2) == d_new.group(2) and int(d_new.group(1)) > int(d_old.group(1)))


def split_type_arguments(text: str) -> list[str]:
    """The comma-separated parts of a type's arguments, commas inside ``<...>`` kept (``"STRING, ARRAY<INT>"``)."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch == "<"
        depth -= ch == ">"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return [*parts, cur]
