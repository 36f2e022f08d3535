"""The API reference covers every public name, once, and public names look public."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import fncore
import fncore.testing

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "reference"
MEMBER = re.compile(r'^        - "(\w+)"$', re.MULTILINE)


def listed() -> list[str]:
    """Every member the reference pages list explicitly."""
    return [name for page in REFERENCE.glob("*.md") for name in MEMBER.findall(page.read_text())]


def test_every_public_name_is_on_one_reference_page() -> None:
    """Each name in fncore.__all__ is documented on exactly one topic page."""
    names = listed()
    public = [name for name in fncore.__all__ if not name.startswith("__")]
    assert sorted(set(public) - set(names)) == []
    duplicated = sorted({n for n in names if names.count(n) > 1 and n in public})
    assert duplicated == []


def test_public_classes_and_functions_name_their_public_module() -> None:
    """Reprs show fncore.Message, not fncore.core._messages.Message (as HTTPX does)."""
    assert repr(fncore.Message) == "<class 'fncore.Message'>"
    assert fncore.recover.__module__ == "fncore"
    assert fncore.testing.TestModel.__module__ == "fncore.testing"
    private = [
        f"{name}: {obj.__module__}"
        for module in (fncore, fncore.testing)
        for name in module.__all__
        if inspect.isclass(obj := getattr(module, name)) or inspect.isfunction(obj)
        if "._" in obj.__module__
    ]
    assert private == []
