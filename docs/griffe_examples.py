"""Griffe extension for the API reference: render ``Example:`` sections as doctest examples.

fncore's docstrings head their doctests ``Example:`` (singular). Griffe's Google parser reads
that as an admonition whose ``>>>`` lines are plain Markdown, where ``['x']`` looks like a
link; ``Examples:`` makes it parse them as highlighted Python examples instead.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_HEADER = re.compile(r"^(\s*)Example:\s*$", re.MULTILINE)


class ExampleSections(griffe.Extension):
    """Rename ``Example:`` section headers to ``Examples:`` when docstrings are loaded."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite the header in ``obj``'s docstring, if it has one."""
        docstring = obj.docstring
        if docstring is not None and "Example:" in docstring.value:
            docstring.value = _HEADER.sub(r"\1Examples:", docstring.value)
