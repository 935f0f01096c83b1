"""Griffe extension for the API reference: a Google-style ``Example:`` section renders like ``Examples:``.

lakecat's docstrings say ``Example:`` followed by doctest lines; griffe treats the singular as an admonition,
whose ``>>>`` lines Markdown would turn into quotes. As an examples section they render as Python code.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_SINGULAR = re.compile(r"^(\s*)Example:[ \t]*$", re.MULTILINE)


class ExampleSections(griffe.Extension):
    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None and "Example:" in obj.docstring.value:
            obj.docstring.value = _SINGULAR.sub(r"\1Examples:", obj.docstring.value)
