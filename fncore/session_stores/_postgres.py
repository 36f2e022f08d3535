"""The PostgreSQL session store: many processes, one database (the ``postgres`` extra).

psycopg 3, asynchronous, with a connection pool (psycopg_pool) opened on first use. The
first use also checks the schema and creates or migrates it, under an advisory lock so
that processes starting together migrate once. Commits run in ``READ COMMITTED``: the
``UPDATE ... WHERE version = loaded`` of a second writer waits for the first to finish,
then finds the version changed and writes nothing. Tables are named ``fncore_*`` in the
connection's schema, so the database may hold other tables too.
"""

from __future__ import annotations

import asyncio
import math
from typing import TYPE_CHECKING, Any, TypeVar, final

from fncore._distribution import install_hint
from fncore._session_url import hide_password, redact_password
from fncore.session_stores._errors import (
    NotASessionStore,
    SessionStoreUnavailable,
    written_by_newer,
)
from fncore.session_stores._sql import (
    DEFAULT_CACHE,
    READ,
    SCHEMA_VERSION,
    SqlSessionStore,
    Step,
    Steps,
)
from fncore.settings import ConfigError

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

_T = TypeVar("_T")

LOCK_KEY = 0x666E6373
"""The advisory lock held while the schema is migrated."""

CONNECT_TIMEOUT = 10.0
"""The default of ``timeout``: seconds to wait for the server, or for a pooled connection."""

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (  # 0 -> 1
        "CREATE TABLE fncore_schema (version integer NOT NULL)",
        "INSERT INTO fncore_schema (version) VALUES (0)",
        """CREATE TABLE fncore_sessions (
            id text PRIMARY KEY,
            version bigint NOT NULL,
            length bigint NOT NULL,
            token text NOT NULL,
            state text NOT NULL
        )""",
        """CREATE TABLE fncore_messages (
            session_id text NOT NULL,
            seq bigint NOT NULL,
            version bigint NOT NULL,
            body text NOT NULL,
            PRIMARY KEY (session_id, seq)
        )""",
        "CREATE INDEX fncore_messages_by_version ON fncore_messages (session_id, version)",
    ),
    (  # 1 -> 2
        """CREATE TABLE fncore_checkpoints (
            id text PRIMARY KEY,
            stage text NOT NULL,
            claim text NOT NULL,
            claim_until double precision NOT NULL,
            expires double precision NOT NULL,
            body text NOT NULL
        )""",
        "CREATE INDEX fncore_checkpoints_by_expiry ON fncore_checkpoints (expires)",
    ),
)
"""Step ``i`` brings the schema from version ``i`` to ``i + 1``; all run in one transaction."""


def _pg(sql: str) -> str:
    """The statement in psycopg's placeholders."""
    return sql.replace("?", "%s")


async def _run_step(connection: AsyncConnection[Any], step: Step) -> Any:
    if step.fetch == "many":
        async with connection.cursor() as cursor:
            await cursor.executemany(_pg(step.sql), step.params)
        return None
    cursor = await connection.execute(_pg(step.sql), step.params)
    return cursor.rowcount if step.fetch == "rowcount" else await cursor.fetchall()


async def _drive(connection: AsyncConnection[Any], steps: Steps[_T]) -> _T:
    try:
        step = next(steps)
        while True:
            step = steps.send(await _run_step(connection, step))
    except StopIteration as done:
        result: _T = done.value
        return result


@final
class PostgresSessionStore(SqlSessionStore):
    """A `SessionStore` in PostgreSQL (``postgresql://user:password@host:port/database``).

    Use it from one event loop; close it with ``aclose()``.

    Args:
        url: A libpq connection URL (``postgres://`` works too; ``?sslmode=...`` and other
            libpq parameters go in the query).
        min_connections: Connections the pool keeps open.
        max_connections: Connections the pool opens at most; more concurrent calls wait.
        timeout: Seconds to wait for the server when connecting, and for a free connection
            (all in use, or the server gone): then `SessionStoreUnavailable`.
        cache_size: How many sessions it keeps decoded in memory.

    Raises:
        ConfigError: if psycopg is not installed, or ``url`` is not a connection URL.
    """

    def __init__(
        self,
        url: str,
        *,
        min_connections: int = 1,
        max_connections: int = 10,
        timeout: float = CONNECT_TIMEOUT,
        cache_size: int = DEFAULT_CACHE,
    ) -> None:
        self._postgres = _Postgres(url, min_connections, max_connections, timeout)
        super().__init__(self._postgres, cache_size=cache_size)

    @property
    def url(self) -> str:
        """The URL, its password redacted."""
        return redact_password(self._postgres.conninfo)

    def __repr__(self) -> str:
        return f"PostgresSessionStore({self.url!r})"

    async def open(self) -> None:
        """Connect now: check the schema, create or migrate it, open the pool.

        Every other method does this on first use; call it to fail early.

        Raises:
            SessionStoreUnavailable: if the server cannot be reached or refuses the login.
            NotASessionStore: if the database has ``fncore_*`` tables fncore did not make.
            SessionSchemaTooNew: if a newer fncore wrote the database.
        """
        await self._postgres.pool()

    async def aclose(self) -> None:
        """Close the pool (the store opens a new one if used afterwards)."""
        self._cache.clear()
        await self._postgres.close()


class _Postgres:
    """The pool, opened on first use."""

    def __init__(self, conninfo: str, min_size: int, max_size: int, timeout: float) -> None:
        try:
            import psycopg
        except ImportError:
            msg = f"a postgresql:// session store needs psycopg: {install_hint('postgres')}"
            raise ConfigError(msg) from None
        try:
            psycopg.conninfo.conninfo_to_dict(conninfo)
        except psycopg.ProgrammingError as exc:
            detail = hide_password(" ".join(str(exc).split()), conninfo)
            msg = f"session store URL {redact_password(conninfo)!r}: {detail}"
            raise ConfigError(msg) from None
        self.conninfo = conninfo
        self._sizes = (max(min_size, 1), max(max_size, min_size, 1))
        self._timeout = timeout
        self._pool: AsyncConnectionPool[Any] | None = None
        self._opening: asyncio.Future[AsyncConnectionPool[Any]] | None = None

    @property
    def _seconds(self) -> int:
        """``timeout`` as libpq's ``connect_timeout``: whole seconds, at least 2 (its floor)."""
        return max(2, math.ceil(self._timeout))

    def _unavailable(self, exc: Exception) -> SessionStoreUnavailable:
        detail = hide_password(" ".join(str(exc).split()), self.conninfo)
        msg = (
            f"cannot reach the session store {redact_password(self.conninfo)!r}: {detail}; "
            "check that PostgreSQL runs there and sessions.url"
        )
        return SessionStoreUnavailable(msg)

    async def pool(self) -> AsyncConnectionPool[Any]:
        """The open pool; the first call connects, checks and migrates."""
        if self._pool is not None:
            return self._pool
        if self._opening is None or self._opening.done():
            self._opening = asyncio.ensure_future(self._open())
        opening = self._opening
        try:
            return await asyncio.shield(opening)
        finally:
            if opening.done() and not opening.cancelled() and opening.exception() is not None:
                self._opening = None

    async def _open(self) -> AsyncConnectionPool[Any]:
        import psycopg
        from psycopg_pool import AsyncConnectionPool

        try:
            async with await psycopg.AsyncConnection.connect(
                self.conninfo, autocommit=True, connect_timeout=self._seconds
            ) as connection:
                await self._prepare(connection)
        except psycopg.OperationalError as exc:
            raise self._unavailable(exc) from None
        low, high = self._sizes
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            self.conninfo,
            min_size=low,
            max_size=high,
            open=False,
            timeout=self._timeout,  # the longest a call waits for a connection
            kwargs={"autocommit": True, "connect_timeout": self._seconds},
            name="fncore-sessions",
        )
        try:  # wait for the first connection: a pool still connecting cannot be cancelled
            await pool.open(wait=True, timeout=self._timeout)
        except BaseException:
            await pool.close()
            raise
        self._pool = pool
        return pool

    async def _prepare(self, connection: AsyncConnection[Any]) -> None:
        if await self._version(connection) >= SCHEMA_VERSION:
            return
        # Locked before the transaction begins, so that it sees another process's migration.
        await connection.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
        try:
            async with connection.transaction():
                version = await self._version(connection)  # another process may have migrated
                for step in MIGRATIONS[version:SCHEMA_VERSION]:
                    for statement in step:
                        await connection.execute(statement)
                await connection.execute("UPDATE fncore_schema SET version = %s", (SCHEMA_VERSION,))
        finally:
            await connection.execute("SELECT pg_advisory_unlock(%s)", (LOCK_KEY,))

    async def _version(self, connection: AsyncConnection[Any]) -> int:
        """The schema version recorded (0 for none), after checking the tables are fncore's."""
        cursor = await connection.execute(
            "SELECT to_regclass('fncore_schema') IS NOT NULL, "
            "to_regclass('fncore_sessions') IS NOT NULL"
        )
        row = await cursor.fetchone()
        has_schema, has_sessions = row if row is not None else (False, False)
        where = repr(redact_password(self.conninfo))
        if not has_schema:
            if has_sessions:
                msg = (
                    f"the database {where} has a table fncore_sessions but no fncore_schema: "
                    "fncore did not make it; nothing was changed: use another database or schema"
                )
                raise NotASessionStore(msg)
            return 0
        cursor = await connection.execute("SELECT max(version) FROM fncore_schema")
        found = await cursor.fetchone()
        version = int(found[0]) if found is not None and found[0] is not None else 0
        if version > SCHEMA_VERSION:
            raise written_by_newer(f"the schema of session store {where}", version, SCHEMA_VERSION)
        return version

    async def read(self, session_id: str, since: int) -> list[tuple[Any, ...]]:
        """The rows of `READ`."""
        import psycopg

        try:
            async with (await self.pool()).connection() as connection:
                cursor = await connection.execute(_pg(READ), (session_id, session_id, since))
                rows: list[tuple[Any, ...]] = await cursor.fetchall()
                return rows
        except psycopg.OperationalError as exc:
            raise self._unavailable(exc) from None

    async def transaction(self, steps: Steps[_T]) -> _T:
        """Run ``steps`` in one transaction."""
        import psycopg

        try:
            pool = await self.pool()
            async with pool.connection() as connection, connection.transaction():
                return await _drive(connection, steps)
        except psycopg.OperationalError as exc:
            raise self._unavailable(exc) from None

    async def close(self) -> None:
        """Close the pool, if open."""
        pool, self._pool, self._opening = self._pool, None, None
        if pool is not None:
            await pool.close()
