"""A small MCP server for the tests, written with the official SDK.

``python demo.py`` serves it over stdio; ``python demo.py http PORT [TOKEN]`` over
streamable HTTP on 127.0.0.1:PORT at ``/mcp``, refusing requests without the header
``Authorization: Bearer TOKEN`` when a token is given. It counts the ``tools/list``
requests it answers (the tool ``listings`` tells), so tests see when a client lists.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ImageContent, TextContent
from mcp.types import Tool as ListedTool


class CountingServer(MCPServer):
    """The SDK's server, counting the ``tools/list`` requests it answers."""

    listed = 0

    async def list_tools(self) -> list[ListedTool]:
        """Every tool, as the SDK lists them; one more listing counted."""
        CountingServer.listed += 1
        return await super().list_tools()


server = CountingServer("demo")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def shout(text: str, times: int = 1) -> str:
    """Upper-case a text, repeated `times` times."""
    return " ".join([text.upper()] * times)


@server.tool()
def crash() -> str:
    """Exit the server process in the middle of the call."""
    os._exit(3)


@server.tool()
async def slow(seconds: float) -> str:
    """Wait some seconds, then answer."""
    await asyncio.sleep(seconds)
    return "done"


@server.tool()
def fail(reason: str) -> str:
    """Fail with the given reason."""
    raise ToolError(reason)


@server.tool()
def picture() -> list[Any]:
    """A caption and a tiny image."""
    return [
        TextContent(type="text", text="a dot"),
        ImageContent(type="image", data="iVBORw0=", mime_type="image/png"),
    ]


def _extra() -> str:
    """An extra tool, added while the server runs."""
    return "extra!"


@server.tool()
async def grow(ctx: Context) -> str:
    """Add a tool named `extra` to this server, and say that the tool list changed."""
    server.add_tool(_extra, name="extra")
    await ctx.notify_tools_changed()
    return "grown"


@server.tool()
def grow_quietly() -> str:
    """Add a tool named `extra` to this server, and tell no one."""
    server.add_tool(_extra, name="extra")
    return "grown"


@server.tool()
def hang_up() -> str:
    """End every `subscriptions/listen` stream, gracefully, as the server stays up."""
    listen = server._lowlevel_server.get_request_handler("subscriptions/listen")
    assert listen is not None
    listen.handler.close()
    return "hung up"


@server.tool()
def listings() -> int:
    """How many `tools/list` requests this server has answered."""
    return CountingServer.listed


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


def _http(port: int, token: str | None) -> None:
    import uvicorn

    app = server.streamable_http_app()

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and token is not None:
            headers = dict(scope["headers"])
            if headers.get(b"authorization") != f"Bearer {token}".encode():
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await app(scope, receive, send)

    uvicorn.run(guarded, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "http":
        _http(int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else None)
    else:
        server.run("stdio")
