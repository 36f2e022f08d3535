"""What the SQLite and PostgreSQL stores share: the tables, the statements, the commit.

Three tables::

    fncore_sessions     id (key), version, length, token, state
    fncore_messages     session_id, seq (key together), version, body
    fncore_checkpoints  id (key), stage, claim, claim_until, expires, body

``version`` is the session's version (how many runs committed); ``length`` its number of
messages; ``token`` tells one life of a session id from the next (after a delete); ``state``
the session state as `encode_state` writes it. A message row holds one message (``body``,
as `encode_message` writes it) at position ``seq``, and the session version that wrote it.

A commit is one transaction: a compare-and-set on the session row (``UPDATE ... WHERE
version = loaded``, or an ``INSERT`` that does nothing if the id exists), then the new
messages appended as rows. Messages are never rewritten: a turn writes only its own, so it
costs the same however long the conversation is. A message row never changes once written
(a shortened history deletes rows, and what follows is written as new rows), so a store
that remembers a session at some version reads back only the rows written since.

A checkpoint row holds a paused run's checkpoint (``body``, as `encode_checkpoint` writes
it), with what the statements test in columns: its stage, who claims it until when, and when
it expires. A change to it is an ``UPDATE ... WHERE claim = mine`` in the transaction that
also commits the session (and writes the next checkpoint), so the three apply together.
Listing the checkpoints that wait for decisions selects the ``paused``, unexpired, unclaimed
rows by those columns, and decodes them to sort and filter them.

The commit is written once, as steps (`commit_steps`) that each store runs on its own
driver: SQLite's blocking one in a worker thread, PostgreSQL's asynchronous one.
"""

from __future__ import annotations

import uuid
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal, Protocol, TypeAlias, TypeVar, final

from cachetools import LRUCache

from fncore.core import (
    ChangeResult,
    Checkpoint,
    CheckpointChange,
    Message,
    Session,
    SessionUpdate,
)
from fncore.session_stores._codec import (
    decode_checkpoint,
    decode_message,
    decode_state,
    encode_checkpoint,
    encode_message,
    encode_state,
)
from fncore.session_stores._errors import (
    NotSerializable,
    SessionStoreCorrupt,
    SessionStoreError,
)
from fncore.session_stores._listing import clock, listed
from fncore.session_stores._protocols import CheckpointInfo, SessionInfo

SCHEMA_VERSION = 2
"""The schema version this fncore writes; a store recorded at a higher one is refused."""

DEFAULT_CACHE = 256
"""How many sessions a store remembers (their messages decoded), most recently used first."""

READ = """
SELECT -1, state, version, length, token FROM fncore_sessions WHERE id = ?
UNION ALL
SELECT seq, body, NULL, NULL, NULL FROM fncore_messages WHERE session_id = ? AND version > ?
"""
"""The session row (as seq -1) and its message rows written after a version, in one
statement: one consistent snapshot in both databases. Unordered, so that the database finds
the rows by the ``(session_id, version)`` index (an ``ORDER BY seq`` makes SQLite walk every
message of the session in key order instead); the store sorts the few rows it gets."""

INSERT_SESSION = """
INSERT INTO fncore_sessions (id, version, length, token, state) VALUES (?, 1, ?, ?, ?)
ON CONFLICT (id) DO NOTHING
"""
UPDATE_SESSION = """
UPDATE fncore_sessions
SET version = version + 1, length = CASE WHEN length < ? THEN length ELSE ? END + ?, state = ?
WHERE id = ? AND version = ?
RETURNING token, length
"""
DELETE_TAIL = "DELETE FROM fncore_messages WHERE session_id = ? AND seq >= ?"
INSERT_MESSAGE = "INSERT INTO fncore_messages (session_id, seq, version, body) VALUES (?, ?, ?, ?)"
READ_PREFIX = "SELECT seq, body FROM fncore_messages WHERE session_id = ? AND seq < ? ORDER BY seq"
DELETE_MESSAGES = "DELETE FROM fncore_messages WHERE session_id = ?"
DELETE_SESSION = "DELETE FROM fncore_sessions WHERE id = ?"
LIST_SESSIONS = "SELECT id, version, length FROM fncore_sessions"

INSERT_CHECKPOINT = """
INSERT INTO fncore_checkpoints (id, stage, claim, claim_until, expires, body)
VALUES (?, ?, ?, ?, ?, ?)
"""
PURGE_CHECKPOINTS = "DELETE FROM fncore_checkpoints WHERE expires < ?"
READ_CHECKPOINT = "SELECT body, claim, claim_until FROM fncore_checkpoints WHERE id = ?"
CLAIM_CHECKPOINT = """
UPDATE fncore_checkpoints SET claim = ?, claim_until = ?
WHERE id = ? AND stage <> 'done' AND (claim = '' OR claim_until < ?)
"""
LIST_CHECKPOINTS = """
SELECT body, claim, claim_until FROM fncore_checkpoints
WHERE stage = 'paused' AND expires >= ? AND (claim = '' OR claim_until < ?)
"""
"""The rows of the checkpoints waiting for decisions (`waiting`), in no order: a
checkpoint's creation time is in its body, so the store decodes them and sorts."""
CHANGE_CHECKPOINT = """
UPDATE fncore_checkpoints SET stage = ?, claim = ?, claim_until = ?, expires = ?, body = ?
WHERE id = ? AND claim = ?
"""

Fetch: TypeAlias = Literal["rowcount", "all", "many"]
"""What a step wants back: the number of rows changed, every row, or nothing (many rows in)."""


@final
@dataclass(frozen=True, slots=True)
class Step:
    """One statement of a transaction, in ``?`` placeholders."""

    sql: str
    params: Sequence[Any]
    fetch: Fetch


@final
@dataclass(frozen=True, slots=True)
class Written:
    """What a commit wrote: the session's life token, where its new messages start."""

    token: str
    start: int
    prefix: list[Message] | None
    """The messages before ``start``, read in the transaction when the store did not
    remember them."""


_T = TypeVar("_T")

Steps: TypeAlias = Generator[Step, Any, _T]
"""A transaction as statements: each `Step` is sent its result; the last returns a value."""


def commit_steps(
    update: SessionUpdate, bodies: Sequence[str], state: str, known: tuple[str, int] | None
) -> Steps[Written | None]:
    """The statements of one commit; returns ``None`` on a conflict (nothing written).

    Args:
        update: The run's change.
        bodies: Its new messages, encoded.
        state: Its session state, encoded.
        known: The (token, version) of the session the store remembers, if it does.
    """
    sid, version = update.session_id, update.version
    if version == 0:
        token = uuid.uuid4().hex
        changed = yield Step(INSERT_SESSION, (sid, len(bodies), token, state), "rowcount")
        if changed != 1:
            return None
        start = 0
    else:
        keep = update.keep
        rows = yield Step(UPDATE_SESSION, (keep, keep, len(bodies), state, sid, version), "all")
        if not rows:
            return None
        token, length = str(rows[0][0]), int(rows[0][1])
        start = length - len(bodies)
        yield Step(DELETE_TAIL, (sid, start), "rowcount")
    if bodies:
        rows = [(sid, start + i, version + 1, body) for i, body in enumerate(bodies)]
        yield Step(INSERT_MESSAGE, rows, "many")
    prefix = None
    if version and known != (token, version):
        rows = yield Step(READ_PREFIX, (sid, start), "all")
        prefix = _messages(rows, 0, sid)
        if len(prefix) != start:
            raise _missing(sid, len(prefix))
    return Written(token, start, prefix)


def delete_steps(session_id: str) -> Steps[int]:
    """The statements that delete a session and its messages; returns the sessions deleted."""
    yield Step(DELETE_MESSAGES, (session_id,), "rowcount")
    deleted: int = yield Step(DELETE_SESSION, (session_id,), "rowcount")
    return deleted


def _checkpoint_row(checkpoint: Checkpoint) -> tuple[Any, ...]:
    """The columns of ``checkpoint``'s row after its id: stage, claim, until, expiry, body."""
    c = checkpoint
    return (c.stage, c.claim, c.claim_until, c.expires, encode_checkpoint(c))


def _insert(checkpoint: Checkpoint) -> Step:
    return Step(INSERT_CHECKPOINT, (checkpoint.id, *_checkpoint_row(checkpoint)), "rowcount")


def save_steps(checkpoint: Checkpoint) -> Steps[None]:
    """The statements that write a new checkpoint, forgetting the expired ones."""
    yield Step(PURGE_CHECKPOINTS, (checkpoint.created,), "rowcount")
    yield _insert(checkpoint)


def claim_steps(
    checkpoint_id: str, claim: str, until: float, now: float
) -> Steps[list[tuple[Any, ...]]]:
    """The statements that claim a checkpoint; its row as it is then (none: no such id)."""
    yield Step(CLAIM_CHECKPOINT, (claim, until, checkpoint_id, now), "rowcount")
    rows: list[tuple[Any, ...]] = yield Step(READ_CHECKPOINT, (checkpoint_id,), "all")
    return rows


class SessionMovedOn(Exception):
    """The session commit of a checkpoint change conflicted: roll the change back."""


def change_steps(
    change: CheckpointChange,
    row: tuple[Any, ...],
    commit: Steps[Written | None] | None,
    follow: Step | None,
) -> Steps[tuple[ChangeResult, Written | None]]:
    """The statements of a checkpoint change (raising `SessionMovedOn` to roll it back)."""
    target = change.checkpoint.id
    changed = yield Step(CHANGE_CHECKPOINT, (*row, target, change.claim), "rowcount")
    if changed != 1:
        return ChangeResult.LOST, None
    written = None
    if commit is not None:
        written = yield from commit
        if written is None:
            raise SessionMovedOn
    if follow is not None:
        yield follow
    return ChangeResult.OK, written


def list_steps() -> Steps[list[SessionInfo]]:
    """The statement that lists the sessions; returns them sorted by id.

    Sorted here, not by ``ORDER BY``: PostgreSQL would order by its database's collation,
    and the order must be the same in every store (Python's, by code point).
    """
    rows = yield Step(LIST_SESSIONS, (), "all")
    found = [SessionInfo(str(row[0]), int(row[1]), int(row[2])) for row in rows]
    return sorted(found, key=lambda info: info.id)


def _missing(session_id: str, seq: int) -> SessionStoreCorrupt:
    msg = f"session {session_id!r} misses message {seq} in the store; restore it from a backup"
    return SessionStoreCorrupt(msg)


def _messages(rows: Sequence[Sequence[Any]], first: int, session_id: str) -> list[Message]:
    """The messages of rows numbered ``first``, ``first + 1``, ... in order."""
    for offset, row in enumerate(rows):
        if int(row[0]) != first + offset:
            raise _missing(session_id, first + offset)
    return [decode_message(row[1]) for row in rows]


def _seq(row: tuple[Any, ...]) -> int:
    return int(row[0])


def _session(
    session_id: str, messages: Sequence[Message], state: dict[str, object], version: int
) -> Session:
    return Session(
        session_id,
        tuple(messages),
        MappingProxyType(state) if state else MappingProxyType({}),
        version,
    )


class Engine(Protocol):
    """How one database runs the statements (SQLite in a thread, PostgreSQL async)."""

    async def read(self, session_id: str, since: int) -> list[tuple[Any, ...]]:
        """The rows of `READ` for ``session_id`` and messages written after ``since``."""

    async def transaction(self, steps: Steps[_T]) -> _T:
        """Run ``steps`` in one transaction, rolled back if any raises; their result."""


class SqlSessionStore:
    """A `SessionStore` on SQL tables, run by an `Engine`.

    It remembers the sessions it loaded or committed last (``cache_size`` of them), so the
    next load reads only the session row and the messages written since, and a commit
    builds the new session from the one it remembers: a turn costs the same at its
    thousandth message as at its first. Another process's commits are seen at the next
    load, since every load reads the session row.
    """

    def __init__(self, engine: Engine, *, cache_size: int = DEFAULT_CACHE) -> None:
        self._engine = engine
        self._cache: LRUCache[str, tuple[str, Session]] = LRUCache(maxsize=max(cache_size, 1))

    async def _read(self, session_id: str, since: int) -> list[tuple[Any, ...]]:
        """The rows of `READ`, the session row first, then the messages in order."""
        rows = await self._engine.read(session_id, since)
        rows.sort(key=_seq)
        return rows

    async def load(self, session_id: str) -> Session | None:
        """The session as last committed, or ``None`` if there is none.

        Raises:
            SessionStoreError: if the store cannot be read (see the subclasses).
        """
        known = self._cache.get(session_id)
        rows = await self._read(session_id, known[1].version if known else 0)
        if not rows:
            self._cache.pop(session_id, None)
            return None
        head = rows[0]
        token = str(head[4])
        if known is not None and known[0] != token:  # deleted and made anew meanwhile
            known = None
            rows = await self._read(session_id, 0)
            if not rows:
                return None
            head = rows[0]
        version, length = int(head[2]), int(head[3])
        if known is not None and known[1].version == version:
            return known[1]
        body = rows[1:]
        first = int(body[0][0]) if body else length
        before: Sequence[Message] = known[1].messages[:first] if known is not None else ()
        if len(before) != first or first + len(body) != length:
            msg = (
                f"session {session_id!r} holds {length} messages, and the store has "
                f"{len(before) + len(body)}; restore it from a backup"
            )
            raise SessionStoreCorrupt(msg)
        messages = [*before, *_messages(body, first, session_id)]
        session = _session(session_id, messages, decode_state(head[1]), version)
        self._cache[session_id] = (token, session)
        return session

    async def commit(self, update: SessionUpdate) -> Session | None:
        """Apply ``update`` if the session is still at ``update.version``, atomically.

        Returns:
            The session as stored now, or ``None`` on a conflict (nothing was written).

        Raises:
            NotSerializable: if the state (or a message) cannot be stored; nothing was
                written.
            SessionStoreError: if the store cannot be written (see the subclasses).
        """
        steps, values = self._commit_steps(update)
        written = await self._engine.transaction(steps)
        if written is None:
            return None
        return self._remember(update, written, values)

    def _commit_steps(
        self, update: SessionUpdate
    ) -> tuple[Steps[Written | None], dict[str, object]]:
        """The statements committing ``update``, and its state as it will read back."""
        state = encode_state(update.state)
        try:
            values = decode_state(state)
        except SessionStoreError as exc:
            msg = f"session state cannot be read back as it was written: {exc}"
            raise NotSerializable(msg) from None
        bodies = [encode_message(m) for m in update.append]
        remembered = self._cache.get(update.session_id)
        known = None if remembered is None else (remembered[0], remembered[1].version)
        return commit_steps(update, bodies, state, known), values

    def _remember(
        self, update: SessionUpdate, written: Written, values: dict[str, object]
    ) -> Session:
        """The session ``update`` made, remembered for the next load."""
        remembered = self._cache.get(update.session_id)
        if written.prefix is not None:
            before: Sequence[Message] = written.prefix
        elif remembered is not None and update.version:
            before = remembered[1].messages[: written.start]
        else:
            before = ()
        session = _session(
            update.session_id,
            [*before, *update.append],
            values,
            update.version + 1,
        )
        self._cache[update.session_id] = (written.token, session)
        return session

    async def delete(self, session_id: str) -> bool:
        """Forget the session and its messages; ``False`` if there was none."""
        self._cache.pop(session_id, None)
        return await self._engine.transaction(delete_steps(session_id)) > 0

    async def save_checkpoint(self, checkpoint: Checkpoint) -> None:
        """Write a new checkpoint, and forget the expired ones.

        Raises:
            NotSerializable: if its state, metadata or settings cannot be stored.
        """
        await self._engine.transaction(save_steps(checkpoint))

    async def load_checkpoint(self, checkpoint_id: str) -> Checkpoint | None:
        """The checkpoint as stored, or ``None``."""
        rows = await self._engine.transaction(_read_steps(checkpoint_id))
        return _checkpoint(rows)

    async def claim_checkpoint(
        self, checkpoint_id: str, claim: str, until: float, now: float
    ) -> Checkpoint | None:
        """Claim the checkpoint unless it is done or claimed; it as stored now."""
        rows = await self._engine.transaction(claim_steps(checkpoint_id, claim, until, now))
        return _checkpoint(rows)

    async def change_checkpoint(self, change: CheckpointChange) -> ChangeResult:
        """Apply ``change`` whole, in one transaction, if its claim holds."""
        row = _checkpoint_row(change.checkpoint)
        follow = None if change.follow is None else _insert(change.follow)
        update = change.session
        commit, values = (None, {}) if update is None else self._commit_steps(update)
        try:
            result, written = await self._engine.transaction(
                change_steps(change, row, commit, follow)
            )
        except SessionMovedOn:
            return ChangeResult.CONFLICT
        if update is not None and written is not None:
            self._remember(update, written, values)
        return result

    async def list_checkpoints(
        self,
        *,
        limit: int | None = None,
        agent: str | None = None,
        metadata: Mapping[str, object] | None = None,
        now: float | None = None,
    ) -> list[CheckpointInfo]:
        """The checkpoints waiting for decisions, oldest first (see `CheckpointCatalog`).

        Every waiting checkpoint is read and decoded, then filtered and sorted.

        Raises:
            ValueError: if ``limit`` is negative.
            SessionStoreError: if the store cannot be read (see the subclasses).
        """
        at = clock(now, limit)
        rows = await self._engine.transaction(_list_checkpoint_steps(at))
        found = (decode_checkpoint(body, str(claim), float(until)) for body, claim, until in rows)
        return listed(found, at, limit=limit, agent=agent, metadata=metadata)

    async def list_sessions(self) -> list[SessionInfo]:
        """Every session stored (id, version, number of messages), sorted by id.

        Raises:
            SessionStoreError: if the store cannot be read (see the subclasses).
        """
        return await self._engine.transaction(list_steps())


def _read_steps(checkpoint_id: str) -> Steps[list[tuple[Any, ...]]]:
    rows: list[tuple[Any, ...]] = yield Step(READ_CHECKPOINT, (checkpoint_id,), "all")
    return rows


def _list_checkpoint_steps(now: float) -> Steps[list[tuple[Any, ...]]]:
    rows: list[tuple[Any, ...]] = yield Step(LIST_CHECKPOINTS, (now, now), "all")
    return rows


def _checkpoint(rows: list[tuple[Any, ...]]) -> Checkpoint | None:
    if not rows:
        return None
    body, claim, until = rows[0]
    return decode_checkpoint(body, str(claim), float(until))
