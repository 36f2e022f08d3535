"""MCP servers as tool sources: `MCPServer`, and the set of them an agent offers tools from.

A server starts on first use (an agent's first run, or `Agent.connect`) and stays up until
``aclose()``; a server that exits or drops the connection starts again on next use. Its
tools are listed when it starts, and that listing stands, run after run, until the server
says its tool list changed (``notifications/tools/list_changed``), its connection is new, or
its ``tools_ttl`` has passed; a run that finds it no longer standing lists the tools again,
so a server's new or removed tools are offered from the next run on. The ``mcp`` SDK is
imported only when a server starts.
"""

from __future__ import annotations

import asyncio
import importlib.util
import operator
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, final
from urllib.parse import urlsplit

from fncore._distribution import install_hint
from fncore.core import RegistrationError, Tool, ToolResult
from fncore.core._checks import timeout_problem, ttl_problem
from fncore.runtime._mcp_tools import mcp_tool

if TYPE_CHECKING:
    from fncore.runtime._mcp_client import Connection

_PREFIX = re.compile(r"[A-Za-z0-9_-]*")


class MCPServerError(RegistrationError):
    """An MCP server cannot be started, reached or listed; one line naming the server.

    Example:
        >>> str(MCPServerError("time", "command 'mcp-server-tim' not found"))
        "MCP server 'time': command 'mcp-server-tim' not found"
    """

    def __init__(self, server: str, reason: str) -> None:
        super().__init__(f"MCP server {server!r}: {reason}")
        self.server = server
        """The server's name."""


def shown_url(url: str) -> str:
    """``url`` without what may be secret in it: user, password, query and fragment.

    Example:
        >>> shown_url("https://me:pw@example.com/mcp?key=1")
        'https://example.com/mcp'
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


@final
class MCPServer:
    """An MCP server whose tools an agent offers: a program on stdio, or an HTTP endpoint.

    Give ``command`` (and ``env``) to run a program and talk to it over its stdin and
    stdout, or ``url`` (and ``headers``) for a streamable HTTP server. Each tool of the
    server becomes a `Tool` named ``prefix`` + its name, with the server's description and
    JSON schema; ``tool_call`` middleware wrap it like any other tool.

    Args:
        name: The server's name, in errors and in each tool's ``source``.
        command: The program and its arguments, e.g. ``["mcp-server-time"]``.
        env: Environment variables for the program (on top of a safe few inherited:
            ``PATH``, ``HOME``, ...). Their values never show in a repr or an error.
        cwd: The program's working directory.
        url: The streamable HTTP endpoint, e.g. ``http://127.0.0.1:8000/mcp``.
        headers: HTTP headers of every request (an ``Authorization``, say). Their values
            never show in a repr or an error.
        prefix: Put before each tool's name, to keep two sources' tools apart.
        timeout: Seconds a tool call, or listing the tools, may take.
        startup_timeout: Seconds starting the server may take: running the program (or
            reaching the URL) and the protocol's handshake. Programs started through
            ``npx`` or ``uvx`` may take seconds, so it is generous by default.
        tools_ttl: How long a listing of the server's tools stands, in seconds. ``None``
            (the default): until the server says its tool list changed, or the connection
            is new; a server that does not declare ``tools.listChanged`` is listed once per
            connection. A number: that long at most, or less if the server says so first.
            ``0``: the tools are listed again at the start of every run.
        clock: What a ``tools_ttl`` is measured with (seconds, only differences count);
            code only, for tests.

    Raises:
        RegistrationError: for neither or both of ``command`` and ``url``, an empty
            command, a URL that is not ``http(s)://``, a prefix with other characters than
            letters, digits, ``_`` and ``-``, a timeout or startup timeout that is not a
            positive, finite number of seconds, a ``tools_ttl`` that is not ``None`` or
            zero or more seconds, or no ``mcp`` SDK installed.

    Example:
        >>> MCPServer("time", command=["mcp-server-time"], env={"TOKEN": "s3cret"})
        MCPServer('time', command=['mcp-server-time'], env=['TOKEN'])
    """

    __slots__ = (
        "_clock",
        "_command",
        "_connection",
        "_cwd",
        "_env",
        "_headers",
        "_listed",
        "_lock",
        "_url",
        "name",
        "prefix",
        "startup_timeout",
        "timeout",
        "tools_ttl",
    )

    def __init__(
        self,
        name: str,
        *,
        command: str | Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        url: str | None = None,
        headers: Mapping[str, str] | None = None,
        prefix: str = "",
        timeout: float = 60.0,
        startup_timeout: float = 30.0,
        tools_ttl: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        where = f"MCP server {name!r}"
        if not name:
            msg = "an MCP server needs a name"
            raise RegistrationError(msg)
        if (command is None) == (url is None):
            msg = f"{where}: give either command (a program on stdio) or url (HTTP), not both"
            raise RegistrationError(msg if command is not None else msg.replace(", not both", ""))
        argv = [command] if isinstance(command, str) else list(command or [])
        if command is not None and (not argv or not all(isinstance(a, str) for a in argv)):
            msg = f"{where}: command must be the program and its arguments, as strings"
            raise RegistrationError(msg)
        if command is not None and not argv[0]:
            msg = f"{where}: command names no program"
            raise RegistrationError(msg)
        if url is not None and urlsplit(url).scheme not in ("http", "https"):
            msg = f"{where}: url must start with http:// or https://, not {shown_url(url)!r}"
            raise RegistrationError(msg)
        if not _PREFIX.fullmatch(prefix):
            msg = f"{where}: prefix {prefix!r} may hold only letters, digits, '_' and '-'"
            raise RegistrationError(msg)
        for key, seconds in (("timeout", timeout), ("startup_timeout", startup_timeout)):
            problem = timeout_problem(seconds, f"{where}: {key}")
            if problem is not None:
                raise RegistrationError(problem)
        problem = None if tools_ttl is None else ttl_problem(tools_ttl, f"{where}: tools_ttl")
        if problem is not None:
            raise RegistrationError(problem)
        if importlib.util.find_spec("mcp") is None:
            msg = f"{where}: MCP servers need the mcp SDK: {install_hint('mcp')}"
            raise RegistrationError(msg)
        self.name = name
        """The server's name."""
        self.prefix = prefix
        """Put before each tool's name."""
        self.timeout = float(timeout)
        """Seconds a tool call, or listing the tools, may take."""
        self.startup_timeout = float(startup_timeout)
        """Seconds starting the server may take."""
        self.tools_ttl = None if tools_ttl is None else float(tools_ttl)
        """Seconds a listing of the tools stands at most (``None``: until told it changed)."""
        self._clock = clock
        self._command: tuple[str, ...] | None = None if command is None else tuple(argv)
        self._env = dict(env or {})
        self._cwd = cwd
        self._url = url
        self._headers = dict(headers or {})
        self._connection: Connection | None = None
        self._listed: _Listing | None = None
        self._lock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None

    @property
    def transport(self) -> str:
        """``stdio`` or ``http``."""
        return "stdio" if self._command is not None else "http"

    @property
    def running(self) -> bool:
        """Whether the server is up (started, and not exited or closed since)."""
        c = self._connection
        return c is not None and c.alive and c.client is not None

    def __repr__(self) -> str:
        if self._command is not None:
            where = f"command={list(self._command)!r}"
            if self._env:
                where += f", env={sorted(self._env)!r}"
        else:
            where = f"url={shown_url(self._url or '')!r}"
            if self._headers:
                where += f", headers={sorted(self._headers)!r}"
        prefix = f", prefix={self.prefix!r}" if self.prefix else ""
        return f"MCPServer({self.name!r}, {where}{prefix})"

    async def _connected(self) -> Connection:
        """The live connection, started (again) if there is none on this event loop."""
        loop = asyncio.get_running_loop()
        current = self._connection
        if current is not None and current.alive and current.loop is loop:
            return current
        if self._lock is None or self._lock[0] is not loop:
            self._lock = (loop, asyncio.Lock())
        async with self._lock[1]:
            current = self._connection
            if current is not None and current.alive and current.loop is loop:
                return current
            from fncore.runtime._mcp_client import Connection, StartFailed

            if current is not None:
                await current.close()
            fresh = Connection(
                self.name,
                command=self._command,
                env=self._env,
                cwd=self._cwd,
                url=self._url,
                shown_url=shown_url(self._url or ""),
                headers=self._headers,
            )
            try:
                await fresh.start(self.startup_timeout)
            except StartFailed as exc:
                raise MCPServerError(self.name, str(exc)) from None
            self._connection = fresh
            return fresh

    def standing(self) -> tuple[Tool, ...] | None:
        """The tools of the last listing, while it stands (see ``tools_ttl``); else ``None``.

        It stands while its connection is the server's live one on the running event loop,
        the server has not said that its tool list changed, and ``tools_ttl`` has not passed.
        """
        listed = self._listed
        if listed is None:
            return None
        connection = listed.connection
        if (
            connection is not self._connection
            or not connection.alive
            or connection.tools_changes != listed.changes
        ):
            return None
        ttl = self.tools_ttl
        if ttl is not None and self._clock() - listed.at >= ttl:
            return None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return None  # no event loop running: the connection is of no use here
        return listed.tools if connection.loop is loop else None

    async def tools(self) -> tuple[Tool, ...]:
        """The server's tools as fncore tools: the `standing` listing, or a new one.

        A new listing starts the server if it is not up.

        Raises:
            MCPServerError: if it cannot be started, reached or listed.
        """
        standing = self.standing()
        if standing is not None:
            return standing
        connection = await self._connected()
        changes, at = connection.tools_changes, self._clock()
        try:
            async with asyncio.timeout(self.timeout):
                listed = await connection.list_tools()
        except Exception as exc:
            connection.alive = False
            why = "timed out" if isinstance(exc, TimeoutError) else type(exc).__name__
            raise MCPServerError(self.name, f"listing its tools failed ({why})") from None
        given = [(t.name, t.description or t.title or "", t.input_schema) for t in listed]
        last = self._listed
        if last is not None and last.given == given:
            tools = last.tools  # unchanged: the same tools (and the same stack)
        else:
            tools = tuple(
                mcp_tool(
                    self.call,
                    server=self.name,
                    remote=remote,
                    prefix=self.prefix,
                    description=description,
                    schema=schema,
                    timeout=self.timeout,
                )
                for remote, description, schema in given
            )
        self._listed = _Listing(given, tools, connection, changes, at)
        return tools

    async def call(self, tool: str, arguments: Mapping[str, Any]) -> ToolResult:
        """Call the server's tool ``tool`` (its own name, without the prefix).

        Never raises but for cancellation: a server that cannot start, fails or exits
        gives an error result, and starts again on next use.
        """
        try:
            connection = await self._connected()
        except MCPServerError as exc:
            return ToolResult(str(exc), True)
        return await connection.call(tool, dict(arguments))

    async def aclose(self) -> None:
        """Stop the server (or leave it); it starts again if used after this."""
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection.close()


@final
class _Listing:
    """A server's tools as listed on one connection: what stands until it changes."""

    __slots__ = ("at", "changes", "connection", "given", "tools")

    def __init__(
        self,
        given: list[tuple[str, str, dict[str, Any]]],
        tools: tuple[Tool, ...],
        connection: Connection,
        changes: int,
        at: float,
    ) -> None:
        self.given = given
        """Each tool's name, description and schema, as the server gave them."""
        self.tools = tools
        """The fncore tools made from them."""
        self.connection = connection
        """The connection they were listed on."""
        self.changes = changes
        """Its `Connection.tools_changes` when the listing was asked for."""
        self.at = at
        """The server's clock when the listing was asked for."""


@final
class MCPTools:
    """The MCP servers of one agent: their tools, checked at the start of each run."""

    __slots__ = ("_held", "_task", "servers", "tools")

    def __init__(self, servers: Iterable[MCPServer]) -> None:
        self.servers = tuple(servers)
        names = [s.name for s in self.servers]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            msg = f"two MCP servers are named {twice[0]!r}; give each its own name"
            raise RegistrationError(msg)
        self.tools: tuple[Tool, ...] = ()
        """The tools of the last listing."""
        self._held: tuple[tuple[Tool, ...], ...] | None = None
        """Each server's tools in `tools`."""
        self._task: asyncio.Task[bool] | None = None

    async def refresh(self) -> bool:
        """Each server's tools: its standing listing, or a new one (see ``tools_ttl``).

        Concurrent runs share one listing in flight.

        Returns:
            Whether the tools differ from the last time (or this is the first).

        Raises:
            MCPServerError: for the first server that cannot be started or listed.
        """
        task = self._task
        if task is None or task.done() or task.get_loop() is not asyncio.get_running_loop():
            if self._held is not None and all(
                map(operator.is_, (s.standing() for s in self.servers), self._held)
            ):
                return False  # every listing stands, and `tools` holds it
            task = self._task = asyncio.ensure_future(self._list())
        return await asyncio.shield(task)

    async def _list(self) -> bool:
        listed = await asyncio.gather(*(s.tools() for s in self.servers))
        self._held = tuple(listed)
        tools = tuple(t for server_tools in listed for t in server_tools)
        if len(tools) == len(self.tools) and all(map(operator.is_, tools, self.tools)):
            return False  # each server gave back the tools it listed last time
        self.tools = tools
        return True

    async def aclose(self) -> None:
        """Stop every server."""
        for server in reversed(self.servers):
            await server.aclose()
