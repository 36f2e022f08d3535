"""One live connection to an MCP server, through the official ``mcp`` SDK.

The SDK's client is an async context manager whose task groups must be entered and left
by the same task, while tool calls come from any run's task. So each connection has an
owner task: it enters the client, reports it ready, waits to be told to close, and leaves.
Calls go through the client from the callers' tasks.

The transport's read stream is watched: when it ends (a stdio server that exited), the
connection is dead, and the next use starts a new one.

A server that declares ``tools.listChanged`` says when its tool list changes: before protocol
2026-07-28 it sends ``notifications/tools/list_changed`` unasked; from 2026-07-28 on, only on a
``subscriptions/listen`` stream, which the owner task opens. Either way the SDK hands the
notification to the client's message handler, which counts it in `Connection.tools_changes`.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from types import TracebackType
from typing import IO, Any, Generic, Self, TextIO, TypeVar, cast

from mcp import Client, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ListenNotSupportedError, Subscription, SubscriptionLost
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import (
    CONNECTION_CLOSED,
    Implementation,
    ServerNotification,
    ToolListChangedNotification,
)

from fncore.core import ToolResult
from fncore.runtime._mcp_tools import result_of

_T = TypeVar("_T")

_CLIENT = Implementation(name="fncore", version="0")


class StartFailed(Exception):
    """The server could not be started or reached; the message says why, in one line."""


class _Watched(Generic[_T]):
    """A read stream that marks its connection dead when it ends."""

    def __init__(self, inner: Any, connection: Connection) -> None:
        self._inner = inner
        self._connection = connection

    async def receive(self) -> _T:
        try:
            item: _T = await self._inner.receive()
        except BaseException:
            self._connection.alive = False
            raise
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> _T:
        try:
            item: _T = await self._inner.__anext__()
        except BaseException:
            self._connection.alive = False
            raise
        return item

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self._inner.aclose()


def _last_line(log: IO[str]) -> str:
    try:
        log.seek(0)
        lines = [line.strip() for line in log.read()[-4000:].splitlines() if line.strip()]
    except (OSError, ValueError):
        return ""
    return lines[-1][:300] if lines else ""


def _retrieve(ready: asyncio.Future[None]) -> None:
    """Mark a settled start as seen, so asyncio never logs it as never retrieved."""
    if not ready.cancelled():
        ready.exception()


async def _stopped(task: asyncio.Task[None]) -> None:
    """Cancel ``task`` and wait until it has stopped."""
    task.cancel()
    await asyncio.wait((task,))


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


class Connection:
    """A started (or starting) connection, owned by one task on one event loop."""

    def __init__(
        self,
        name: str,
        *,
        command: Sequence[str] | None,
        env: Mapping[str, str],
        cwd: str | None,
        url: str | None,
        shown_url: str,
        headers: Mapping[str, str],
    ) -> None:
        self._name = name
        self._command = command
        self._env = dict(env)
        self._cwd = cwd
        self._url = url
        self._shown_url = shown_url
        self._headers = dict(headers)
        self.loop = asyncio.get_running_loop()
        self.alive = True
        self.client: Client | None = None
        self.tools_changes = 0
        """How many times the server has said that its tool list changed (or may have: its
        change stream ended); a listing stands while this count stays as it was."""
        self._ready: asyncio.Future[None] = self.loop.create_future()
        # Only `start` awaits it, and only until it gives up: a failure settled after that
        # (the owner task cancelled by `close`) is nobody's to report.
        self._ready.add_done_callback(_retrieve)
        self._closing = asyncio.Event()
        self._log: TextIO | None = None
        self._task: asyncio.Task[None] | None = None

    @contextlib.asynccontextmanager
    async def _transport(self) -> AsyncIterator[tuple[Any, Any]]:
        if self._command is not None:
            params = StdioServerParameters(
                command=self._command[0],
                args=list(self._command[1:]),
                env=self._env or None,
                cwd=self._cwd,
            )
            errlog = self._log if self._log is not None else sys.stderr
            async with stdio_client(params, errlog=errlog) as (read, write):
                yield _Watched(read, self), write
        else:
            assert self._url is not None
            async with (
                create_mcp_http_client(headers=self._headers or None) as http,
                streamable_http_client(self._url, http_client=http) as (read, write),
            ):
                yield _Watched(read, self), write

    async def _on_message(self, message: ServerNotification | Exception) -> None:
        if isinstance(message, ToolListChangedNotification):
            self.tools_changes += 1
        elif isinstance(message, Exception) and not self._ready.done():
            what = "a stdio program" if self._command is not None else "a server"
            self._ready.set_exception(
                StartFailed(f"is {what} that does not speak MCP: it sent something not JSON-RPC")
            )

    async def _own(self) -> None:
        # The server's stderr goes to a file: its last line explains an early exit.
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as log:
            self._log = cast("TextIO", log)
            try:
                async with (
                    Client(
                        self._transport(), message_handler=self._on_message, client_info=_CLIENT
                    ) as client,
                    self._told_of_changes(client),
                ):
                    self.client = client
                    if not self._ready.done():
                        self._ready.set_result(None)
                    await self._closing.wait()
            except asyncio.CancelledError:
                if not self._ready.done():
                    self._ready.set_exception(StartFailed("was cancelled while starting"))
                raise
            except BaseException as exc:
                if not self._ready.done():
                    self._ready.set_exception(StartFailed(self._why(_leaf(exc))))
            finally:
                self.alive = False
                self._log = None

    @contextlib.asynccontextmanager
    async def _told_of_changes(self, client: Client) -> AsyncIterator[None]:
        """Ask a server that can tell of tool-list changes to do so, while the client is open.

        From protocol 2026-07-28 on, that takes a ``subscriptions/listen`` stream: it stays
        open until the connection closes, and each change on it reaches `_on_message`. A
        stream that ends early counts as one more change (what changes after it goes untold).
        Before 2026-07-28 the server sends its changes unasked.
        """
        capabilities = client.session.server_capabilities
        tools = capabilities.tools if capabilities is not None else None
        async with contextlib.AsyncExitStack() as stack:
            subscription: Subscription | None = None
            if tools is not None and tools.list_changed:
                with contextlib.suppress(ListenNotSupportedError, MCPError, SubscriptionLost):
                    subscription = await stack.enter_async_context(
                        client.listen(tools_list_changed=True)
                    )
            if subscription is not None and subscription.honored.tools_list_changed:
                watch = self.loop.create_task(self._until_ended(subscription))
                stack.push_async_callback(_stopped, watch)
            yield

    async def _until_ended(self, subscription: Subscription) -> None:
        with contextlib.suppress(SubscriptionLost):
            async for _ in subscription:
                pass  # the same change reaches _on_message, which counts it
        self.tools_changes += 1

    def _why(self, exc: BaseException) -> str:
        """Why starting failed, in one line, with no header value or URL secret in it."""
        if self._command is not None:
            program = self._command[0]
            if isinstance(exc, FileNotFoundError):
                return f"command {program!r} not found; install it or fix the command"
            if isinstance(exc, PermissionError):
                return f"command {program!r} cannot be run (permission denied)"
            if isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED:
                said = _last_line(self._log) if self._log is not None else ""
                return "exited while starting" + (f"; its last words: {said}" if said else "")
            return f"could not start: {type(exc).__name__}: {exc}"
        if isinstance(exc, MCPError):
            return f"at {self._shown_url} does not answer as an MCP server: {exc.error.message}"
        return f"cannot reach {self._shown_url}: {type(exc).__name__}: {exc}"

    async def start(self, within: float) -> None:
        """Start the owner task and wait until the client is ready.

        Raises:
            StartFailed: with the reason, if it does not start within ``within`` seconds.
        """
        self._task = self.loop.create_task(self._own())
        try:
            async with asyncio.timeout(within):
                await asyncio.shield(self._ready)
        except TimeoutError:
            await self.close()
            msg = f"did not finish starting within {within}s"
            raise StartFailed(msg) from None
        except StartFailed:
            await self.close()
            raise

    async def close(self) -> None:
        """Tell the owner task to leave the client, and wait until it has."""
        self.alive = False
        self._closing.set()
        task = self._task
        if task is None or task.done():
            return
        if asyncio.get_running_loop() is not self.loop:
            return  # its loop is gone or elsewhere: that loop's end closes the client
        if self.client is None:
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(task)

    async def list_tools(self) -> list[Any]:
        """Every tool of the server, page after page."""
        client = self.client
        assert client is not None
        tools: list[Any] = []
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools

    async def call(self, remote: str, arguments: dict[str, Any]) -> ToolResult:
        """Call ``remote``; a failure, the server's or the connection's, is an error result."""
        client = self.client
        assert client is not None
        try:
            result = await client.call_tool(remote, arguments)
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED or not self.alive:
                self.alive = False
                return ToolResult(
                    f"MCP server {self._name!r} stopped during the call to {remote!r}; "
                    "it restarts on next use.",
                    True,
                )
            return ToolResult(
                f"MCP server {self._name!r} refused the call to {remote!r}: {exc.error.message}",
                True,
            )
        except Exception as exc:
            self.alive = False
            return ToolResult(
                f"MCP server {self._name!r} failed during the call to {remote!r} "
                f"({type(exc).__name__}); it restarts on next use.",
                True,
            )
        return result_of(result.content, result.structured_content, bool(result.is_error))
