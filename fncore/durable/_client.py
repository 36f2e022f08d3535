"""`DurableClient`: list, show and cancel durable runs without launching DBOS or any agent.

What ``fncore runs list`` and ``fncore runs show`` use: a ``DBOSClient`` that raises at
once on an unreachable database (rather than retrying), in any process, while workers run.
"""

from __future__ import annotations

import asyncio
import os
from types import TracebackType
from typing import Self, final

import sqlalchemy as sa
from dbos import DBOSClient

from fncore._session_url import parse_session_url, redact_password
from fncore.durable._config import APP_NAME, durable_url
from fncore.durable._errors import (
    DurableUnavailable,
    DurableUnavailableError,
    UnknownRun,
    guarded,
)
from fncore.durable._runs import DurableRunInfo, RunsView
from fncore.durable._sqlite import client_engine
from fncore.settings import DurableSettings

__all__ = ["DurableClient"]


@final
class DurableClient:
    """Durable runs in the database, seen from outside: `runs`, `show`, `cancel`.

    Use it as an async context manager::

        async with DurableClient(settings.durable) as client:
            for run in await client.runs(status="PENDING"):
                print(run.id, run.agent)

    Args:
        settings: The ``[durable]`` settings (default: `DurableSettings()`).

    Raises (on entering, and from each method): `DurableUnavailableError` if the database
    cannot be reached or used.
    """

    __slots__ = ("_client", "_engine", "_url", "_view")

    def __init__(self, settings: DurableSettings | None = None) -> None:
        self._url = durable_url(DurableSettings() if settings is None else settings, os.environ)
        self._client: DBOSClient | None = None
        self._engine: sa.Engine | None = None
        self._view = RunsView(self._connected, self._url, fresh=True)  # type: ignore[arg-type]

    def _connected(self) -> DBOSClient:
        if self._client is None:
            msg = "enter the DurableClient first: async with DurableClient(...) as client"
            raise RuntimeError(msg)
        return self._client

    async def __aenter__(self) -> Self:
        """Connect to the database (no migration, no launch)."""
        parsed = parse_session_url(self._url)
        if parsed.path is not None and not parsed.path.exists():
            shown = redact_password(self._url)
            raise DurableUnavailableError(
                DurableUnavailable(
                    message=(
                        f"no durable runs yet: {str(parsed.path)!r} does not exist (a worker or "
                        "a durable run makes it)"
                    ),
                    url=shown,
                )
            )
        self._engine = client_engine(self._url)
        connect = asyncio.to_thread(
            DBOSClient,
            system_database_url=self._url,
            system_database_engine=self._engine,
            application_name=APP_NAME,
            retry_connection_errors=False,
        )
        self._client = await guarded(self._url, connect)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Close the connections."""
        client, self._client = self._connected(), None
        engine, self._engine = self._engine, None
        await asyncio.to_thread(client.destroy)
        if engine is not None:  # the client does not dispose of an engine it was given
            engine.dispose()

    async def runs(
        self, *, status: str | None = None, limit: int = 50
    ) -> tuple[DurableRunInfo, ...]:
        """The durable runs of fncore, the newest first (steps not included)."""
        return await self._view.runs(status=status, limit=limit)

    async def show(self, run_id: str) -> DurableRunInfo | UnknownRun:
        """Run ``run_id``, with its steps; `UnknownRun` if there is none."""
        return await self._view.show(run_id)

    async def cancel(self, run_id: str) -> UnknownRun | None:
        """Cancel run ``run_id``; `UnknownRun` if there is none."""
        return await self._view.cancel(run_id)
