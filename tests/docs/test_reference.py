"""The API reference covers every public name, once, and public names look public."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

import fncore
import fncore.adapter
import fncore.errors
import fncore.events
import fncore.serve
import fncore.settings
import fncore.stores
import fncore.testing

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "reference"
BLOCK = re.compile(r"^::: ([\w.]+)$", re.MULTILINE)
DOCUMENTED_MODULES = [
    fncore,
    fncore.errors,
    fncore.events,
    fncore.serve,
    fncore.settings,
    fncore.stores,
    fncore.testing,
]
"""The modules whose every public name has its own entry in the reference."""


def resolve(path: str) -> object:
    """The object a ``::: a.b.c`` line documents."""
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def documented() -> list[tuple[str, object]]:
    """Every object the reference pages document on its own, with its path."""
    paths = [path for page in REFERENCE.glob("*.md") for path in BLOCK.findall(page.read_text())]
    return [(path, resolve(path)) for path in paths if "." in path]


def test_every_public_name_is_documented_once() -> None:
    """Each public name of fncore, fncore.errors, fncore.events, ... has exactly one entry.

    A name two modules export (`fncore.AgentError` is `fncore.errors.AgentError`) is the
    same object, documented once, under the module whose name it shows.
    """
    entries = [obj for _, obj in documented() if not inspect.ismodule(obj)]
    problems = [
        f"{module.__name__}.{name}: {count} entries"
        for module in DOCUMENTED_MODULES
        for name in module.__all__
        if not name.startswith("__")
        if (count := sum(obj is getattr(module, name) for obj in entries)) != 1
    ]
    assert problems == []


def test_every_adapter_helper_is_documented() -> None:
    """`fncore.adapter`'s own names are on its page (its re-exports of the core are elsewhere)."""
    paths = {path for path, _ in documented()}
    own = {
        name
        for name in fncore.adapter.__all__
        if getattr(getattr(fncore.adapter, name), "__module__", "") == "fncore.adapter"
        or name in {"ApiKey", "Client", "ExceptionMapper"}
    }
    assert sorted(n for n in own if f"fncore.adapter.{n}" not in paths) == []


def test_entries_use_the_module_each_object_shows() -> None:
    """An entry's path is the public name fncore gave the object (``fncore.errors.X``).

    Objects defined in a public module (`fncore.Container` in `fncore.container`,
    `fncore.errors.ConfigError` in `fncore.settings`) may be documented where they are
    re-exported.
    """
    renaming = {"fncore", "fncore.errors", "fncore.events", "fncore.testing", "fncore.adapter"}
    wrong = [
        path
        for path, obj in documented()
        if (inspect.isclass(obj) or inspect.isfunction(obj))
        and obj.__module__ in renaming
        and path.rpartition(".")[0] != obj.__module__
    ]
    assert wrong == []


@pytest.mark.parametrize("page", sorted(p.name for p in REFERENCE.glob("*.md")))
def test_each_page_opens_with_a_class(page: str) -> None:
    """A reference page's first entry is its main class, not an alias such as ``on``."""
    objects = [
        resolve(path) for path in BLOCK.findall((REFERENCE / page).read_text()) if "." in path
    ]
    objects = [obj for obj in objects if not inspect.ismodule(obj)]
    if objects:
        assert inspect.isclass(objects[0]), f"{page} opens with {objects[0]!r}"


def test_public_classes_and_functions_name_their_public_module() -> None:
    """Reprs show fncore.Message, not fncore.core._messages.Message (as HTTPX does)."""
    assert repr(fncore.Message) == "<class 'fncore.Message'>"
    assert fncore.recover.__module__ == "fncore"
    assert fncore.testing.TestModel.__module__ == "fncore.testing"
    private = [
        f"{name}: {obj.__module__}"
        for module in DOCUMENTED_MODULES
        for name in module.__all__
        if inspect.isclass(obj := getattr(module, name)) or inspect.isfunction(obj)
        if "._" in obj.__module__
    ]
    assert private == []
