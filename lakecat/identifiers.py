"""Table identifiers: parsing, validation and quoting. User text never reaches SQL unquoted."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import InvalidArgumentError

_PART = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def validate_part(part: str, *, what: str = "identifier") -> str:
    """Return ``part`` if it is a valid identifier part, else raise InvalidArgumentError."""
    if not isinstance(part, str) or not _PART.match(part):
        raise InvalidArgumentError(
            f"invalid {what} {part!r}: use letters, digits and underscores, not starting with a digit"
        )
    return part


def quote(part: str) -> str:
    """Quote one identifier part for Spark SQL (backticks, inner backticks doubled)."""
    return "`" + part.replace("`", "``") + "`"


@dataclass(frozen=True, order=True)
class TableIdent:
    """A validated ``namespace.table`` name."""

    namespace: str
    name: str

    @classmethod
    def parse(cls, text: str) -> TableIdent:
        """Parse ``namespace.table``; anything else is an InvalidArgumentError.

        Example:
            >>> TableIdent.parse("sales.orders").quoted
            '`sales`.`orders`'
        """
        if not isinstance(text, str):
            raise InvalidArgumentError(f"invalid table name {text!r}: expected 'namespace.table'")
        parts = text.split(".")
        if len(parts) != 2:
            raise InvalidArgumentError(f"invalid table name {text!r}: expected 'namespace.table'")
        try:
            validate_part(parts[0], what="namespace")
            validate_part(parts[1], what="table name")
        except InvalidArgumentError as e:
            raise InvalidArgumentError(f"invalid table name {text!r}: {str(e).split(': ', 1)[1]}") from None
        return cls(parts[0], parts[1])

    def __str__(self) -> str:
        return f"{self.namespace}.{self.name}"

    @property
    def quoted(self) -> str:
        return f"{quote(self.namespace)}.{quote(self.name)}"


def parse_columns(text: str | list[str] | tuple[str, ...]) -> list[str]:
    """Parse ``"a, b"`` or a list of column names, validating each."""
    items = text.split(",") if isinstance(text, str) else list(text)
    cols = [c.strip() for c in items if c and c.strip()]
    if not cols:
        raise InvalidArgumentError("expected at least one column name")
    return [validate_part(c, what="column name") for c in cols]
