"""An MCP server that speaks only protocol 2025-11-25 over stdio, as many deployed ones do.

Plain JSON-RPC, one message a line, no SDK: it refuses ``server/discover`` (so clients fall
back to the ``initialize`` handshake), declares ``tools.listChanged``, and sends
``notifications/tools/list_changed`` unasked, before the result of the call that changed
its tools. Tools: ``grow`` (adds ``extra``) and ``listings`` (how many ``tools/list``
requests it has answered).
"""

from __future__ import annotations

import json
import sys
from typing import Any

VERSION = "2025-11-25"
OBJECT = {"type": "object", "properties": {}}
tools = [
    {"name": "grow", "description": "Add the tool extra.", "inputSchema": OBJECT},
    {"name": "listings", "description": "How many listings.", "inputSchema": OBJECT},
]
listed = 0


def send(message: dict[str, Any]) -> None:
    """Write one JSON-RPC message."""
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def text(value: object) -> dict[str, Any]:
    """A tool result holding ``value`` as text."""
    return {"content": [{"type": "text", "text": str(value)}], "isError": False}


def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """The result of one request."""
    global listed
    if method == "initialize":
        return {
            "protocolVersion": VERSION,
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "legacy", "version": "1"},
        }
    if method == "tools/list":
        listed += 1
        return {"tools": tools}
    if method == "tools/call" and params["name"] == "grow":
        tools.append({"name": "extra", "description": "Extra.", "inputSchema": OBJECT})
        send({"method": "notifications/tools/list_changed"})
        return text("grown")
    if method == "tools/call" and params["name"] == "extra":
        return text("extra!")
    if method == "tools/call" and params["name"] == "listings":
        return text(listed)
    return {}


for line in sys.stdin:
    request = json.loads(line)
    if "id" not in request:
        continue  # a notification (notifications/initialized)
    method = request["method"]
    if method == "server/discover":
        error = {"code": -32601, "message": f"method not found: {method}"}
        send({"id": request["id"], "error": error})
    else:
        send({"id": request["id"], "result": answer(method, request.get("params") or {})})
