"""The MCP server of ``bench/mcp_tools.py``: one tool, ``add``, over stdio (the official SDK)."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("bench")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


if __name__ == "__main__":
    server.run("stdio")
