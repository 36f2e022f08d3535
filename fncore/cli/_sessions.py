"""``fncore sessions``: list, show and delete the sessions of the configured store.

The store is the one ``[sessions] url`` names (by default ``sessions.db`` in fncore's data
directory), as ``fncore run --session`` uses it. These commands only read, except
``delete``: a SQLite file that does not exist yet is not made to list it.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TextIO, TypeVar

from fncore import (
    Container,
    Message,
    PostgresSessionStore,
    ReasoningPart,
    SessionCatalog,
    SessionStore,
    SqliteSessionStore,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    load_container,
)
from fncore._session_url import redact_password
from fncore.adapter import Part
from fncore.cli._errors import CommandFailed
from fncore.cli._text import safe
from fncore.cli._trace import count

_T = TypeVar("_T")

INDENT = "  "
"""What each line of a message's content starts with, under its role."""


def store_url(container: Container) -> str:
    """The URL of the container's session store, its password redacted."""
    return redact_password(str(container.config.sessions.url()))


async def open_store(store: SessionStore) -> None:
    """Open ``store`` now, so that a store that cannot be used fails before anything runs.

    Raises:
        SessionStoreError: if the store cannot be opened (see its subclasses).
    """
    if isinstance(store, SqliteSessionStore | PostgresSessionStore):
        await store.open()


def as_catalog(store: SessionStore, url: str) -> SessionCatalog:
    """``store``, checked to be able to list and delete its sessions.

    Raises:
        CommandFailed: if it cannot (a store of your own with only ``load`` and ``commit``).
    """
    if not isinstance(store, SessionCatalog):
        msg = (
            f"the session store {url} ({type(store).__name__}) cannot list or delete "
            "sessions: give it list_sessions() and delete() (see SessionCatalog)"
        )
        raise CommandFailed(msg)
    return store


def _made(store: SessionStore) -> bool:
    """Whether the store may hold sessions: not a SQLite file that does not exist yet."""
    return not isinstance(store, SqliteSessionStore) or store.path.exists()


def _with_store(
    config: str | None,
    settings: Mapping[str, Any],
    work: Callable[[SessionCatalog | None, str], Awaitable[_T]],
) -> _T:
    """Load the container, open its store, and run ``work(store, url)``, then close it.

    ``store`` is ``None`` when the store is a SQLite file not made yet (it holds nothing).
    """
    container = load_container(config, overrides=settings)

    async def run() -> _T:
        async with container:
            url = store_url(container)
            store = container.sessions()
            if not _made(store):
                return await work(None, url)
            catalog = as_catalog(store, url)
            await open_store(catalog)
            return await work(catalog, url)

    return asyncio.run(run())


def _shown(name: str) -> str:
    """A session id as printed: as it is, or quoted when it would not read as one word."""
    plain = name and name.isprintable() and not any(c.isspace() for c in name)
    return name if plain else repr(name)


def _no_session(name: str, url: str) -> CommandFailed:
    msg = f"no session {name!r} in {url}; 'fncore sessions list' shows the sessions there"
    return CommandFailed(msg)


def list_command(*, config: str | None, settings: Mapping[str, Any], out: TextIO) -> None:
    """``fncore sessions list``: one line per session, by id: messages and version.

    An empty store prints nothing on ``out``, and says so on stderr.

    Raises:
        ConfigError: for bad configuration (a malformed ``sessions.url``, say).
        SessionStoreError: if the store cannot be opened or read.
    """

    async def listed(store: SessionCatalog | None, url: str) -> None:
        infos = [] if store is None else await store.list_sessions()
        if not infos:
            print(f"no sessions in {url}", file=sys.stderr)
            return
        names = [_shown(info.id) for info in infos]
        width = max(len(name) for name in names)
        digits = max(len(str(info.message_count)) for info in infos)
        for name, info in zip(names, infos, strict=True):
            n = info.message_count
            messages = " " * (digits - len(str(n))) + count(n, "message")
            print(f"{name:<{width}}  {messages}  version {info.version}", file=out)

    _with_store(config, settings, listed)


async def _show(store: SessionCatalog, name: str, out: TextIO) -> bool:
    session = await store.load(name)
    if session is None:
        return False
    out.write("\n".join(f"{render_message(m)}\n" for m in session.messages))
    return True


async def _delete(store: SessionCatalog, name: str, out: TextIO) -> bool:
    if not await store.delete(name):
        return False
    print(f"deleted session {_shown(name)}", file=out)
    return True


ACTIONS: dict[str, Callable[[SessionCatalog, str, TextIO], Awaitable[bool]]] = {
    "show": _show,
    "delete": _delete,
}
"""What ``fncore sessions ACTION NAME`` does to one session; ``False`` if there is none."""


def session_command(
    action: str, name: str, *, config: str | None, settings: Mapping[str, Any], out: TextIO
) -> None:
    """``fncore sessions show NAME`` (the conversation, one block per message) or ``delete``.

    Raises:
        ConfigError: for bad configuration.
        SessionStoreError: if the store cannot be opened, read or written.
        CommandFailed: if there is no session ``name``.
    """
    act = ACTIONS[action]

    async def on_one(store: SessionCatalog | None, url: str) -> None:
        if store is None or not await act(store, name, out):
            raise _no_session(name, url)

    _with_store(config, settings, on_one)


def _lines(text: str) -> list[str]:
    """``text``'s lines, each safe to print (`safe`); one empty line for no text."""
    return safe(text, lines=True).splitlines() or [""]


def part_lines(part: Part) -> list[str]:
    """One part's lines, every stored text in them escaped: a session may hold anything."""
    if isinstance(part, TextPart):
        return _lines(part.text)
    if isinstance(part, ToolCallPart):
        return [safe(f"call {part.name}({part.arguments}) [{part.id}]")]
    if isinstance(part, ToolResultPart):
        what = "error from" if part.is_error else "result of"
        head = safe(f"{what} {part.name} [{part.call_id}]:")
        lines = _lines(part.content)
        if len(lines) <= 1:
            return [f"{head} {lines[0]}".rstrip()]
        return [head, *(INDENT + line for line in lines)]
    if isinstance(part, ReasoningPart):
        text = part.text or ("[redacted]" if part.redacted else "")
        lines = _lines(text)
        return [f"thinking: {lines[0]}".rstrip(), *(INDENT + line for line in lines[1:])]
    return [safe(f"[{part.media_type}, {len(part.data)} bytes]")]  # a DataPart


def render_message(message: Message) -> str:
    """One message as a block: its role, then each part, indented, on lines of its own.

    Example:
        >>> print(render_message(Message.user("What is 2 + 3?")))
        user:
          What is 2 + 3?
        >>> call = ToolCallPart("call_1", "add", '{"a": 2, "b": 3}')
        >>> print(render_message(Message("assistant", (call,))))
        assistant:
          call add({"a": 2, "b": 3}) [call_1]
    """
    lines = [line for part in message.parts for line in part_lines(part)]
    body = "\n".join(f"{INDENT}{line}".rstrip() for line in lines)
    return f"{message.role}:\n{body}" if body else f"{message.role}:"
