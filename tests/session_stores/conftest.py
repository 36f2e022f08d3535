"""Session stores for the contract tests: each kind, fresh for every test, closed after it."""

from __future__ import annotations

import sys
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from fncore import InMemorySessionStore, SessionStore, open_session_store

KINDS = ("memory", "sqlite", "postgres")
"""Every kind of store; the contract tests run on each."""
DURABLE = ("sqlite", "postgres")
"""The kinds whose sessions outlive the store object (a restart, another process)."""

StoreFactory = Callable[[], Any]


def _url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    kind = request.param
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'sessions.db'}"
    if kind == "postgres":
        url: str = request.getfixturevalue("postgres_url")
        return url
    return "memory://"


@pytest.fixture(params=KINDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionStore]:
    """A fresh store of each kind (PostgreSQL: in a new database)."""
    made = open_session_store(_url(request, tmp_path))
    yield made
    if not isinstance(made, InMemorySessionStore):
        await made.aclose()  # type: ignore[attr-defined]


@pytest.fixture(params=DURABLE)
def durable_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of a fresh database of each durable kind (PostgreSQL: a new database)."""
    return _url(request, tmp_path)


@pytest.fixture
async def durable(durable_url: str) -> AsyncIterator[StoreFactory]:
    """Makes stores on one database (as a restarted process, or another one, would)."""
    url = durable_url
    made: list[Any] = []

    def make() -> Any:
        made.append(open_session_store(url))
        return made[-1]

    yield make
    for each in made:
        await each.aclose()


@pytest.fixture
def sid() -> str:
    """A session id no other test uses."""
    return f"s-{uuid.uuid4().hex[:12]}"


class Planted:
    """A module on ``sys.path`` that leaves a file behind if it is ever imported."""

    name = "fncore_planted_module"
    type_name = f"{name}:Payload"
    """What a forged record names: the module's dataclass."""

    def __init__(self, folder: Path) -> None:
        self.marker = folder / "imported"

    @property
    def imported(self) -> bool:
        """Whether the module ran (or is loaded)."""
        return self.marker.exists() or self.name in sys.modules


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Planted:
    """A module whose import would show: a record naming it must not import it."""
    found = Planted(tmp_path)
    (tmp_path / f"{found.name}.py").write_text(
        f"open({str(found.marker)!r}, 'w').close()\n"
        "import dataclasses\n"
        "@dataclasses.dataclass\n"
        "class Payload:\n"
        "    note: str\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return found
