"""Measure what an MCP tool call costs through an fncore agent, against the SDK's own call.

The server is ``bench/_mcp_server.py`` (the official SDK's ``MCPServer``, one tool ``add``)
over stdio, started once. The reference workload of ``overhead.py`` (the model, in-process
and instant, asks for ``add(1, 2)``, then answers) runs with ``add`` as a function tool and
as the server's tool; each figure is the minimum of the per-round means, in interleaved
rounds in one process:

* ``sdk``: ``ClientSession.call_tool("add", ...)`` on the SDK's session, directly;
* ``server``: `MCPServer.call` (fncore's connection and result mapping) on the same session;
* ``relist``: ``agent.connect()`` with nothing changed: what every run starts with, the
  check that each server's listing stands (no request, see ``MCPServer(tools_ttl=...)``);
* ``list``: the same with ``tools_ttl=0`` (a second server process): the listing every run
  starts with then, one ``tools/list`` round trip, as before listings were kept;
* ``run_function``: ``agent.run`` with ``add`` a function tool;
* ``run_mcp``: ``agent.run`` with ``add`` the server's tool (listing included).

``call_path = run_mcp - run_function - relist`` is what one call costs through the agent's
tool path (validation, the ``tool_call`` onion, the timeout, the SDK call, the mapping), and
``call_path_ratio = call_path / sdk``.

Usage::

    python bench/mcp_tools.py            # full run, human-readable table
    python bench/mcp_tools.py --json     # the same, then one JSON object as the last line
    python bench/mcp_tools.py --quick    # a fast smoke run (figures are rough)
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from fncore import Agent, MCPServer, Registry

if TYPE_CHECKING:  # mypy reads bench/ as a package (see bench/__init__.py)
    from bench import _measure
else:  # run as a script, whose folder is on sys.path
    import _measure

SERVER = str(Path(__file__).with_name("_mcp_server.py"))
RUNS = 300
"""Runs per round unless ``--runs`` says: a call crosses two processes, so fewer."""


async def measure(rounds: int, runs: int) -> _measure.Figures:
    """Every figure, and their differences and ratios."""
    server = MCPServer("bench", command=[sys.executable, SERVER])
    mcp_agent = Agent(_measure.InstantModel(), registry=Registry(), mcp_servers=[server])
    await mcp_agent.connect()
    listing = MCPServer("bench", command=[sys.executable, SERVER], tools_ttl=0)
    listing_agent = Agent(_measure.InstantModel(), registry=Registry(), mcp_servers=[listing])
    await listing_agent.connect()
    connection = server._connection  # the SDK's session fncore talks through
    assert connection is not None
    assert connection.client is not None
    session = connection.client.session
    arguments = {"a": 1, "b": 2}

    async def sdk(_: str) -> object:
        return await session.call_tool("add", arguments)

    async def through_server(_: str) -> object:
        return await server.call("add", arguments)

    async def relist(_: str) -> None:
        await mcp_agent.connect()

    async def list_again(_: str) -> None:
        await listing_agent.connect()

    works = [
        _measure.Workload("sdk", sdk),
        _measure.Workload("server", through_server),
        _measure.Workload("relist", relist),
        _measure.Workload("list", list_again),
        _measure.Workload("run_function", _measure.agent_with(None).run),
        _measure.Workload("run_mcp", mcp_agent.run),
    ]

    async def nothing() -> None:
        pass

    try:
        best = await _measure.minimum_of_rounds(works, rounds, runs, nothing)
    finally:
        await mcp_agent.aclose()
        await listing_agent.aclose()
    call_path = best["run_mcp"] - best["run_function"] - best["relist"]
    return {
        "sdk_us": best["sdk"],
        "server_us": best["server"],
        "relist_us": best["relist"],
        "list_us": best["list"],
        "run_function_us": best["run_function"],
        "run_mcp_us": best["run_mcp"],
        "server_extra_us": best["server"] - best["sdk"],
        "call_path_us": call_path,
        "call_path_extra_us": call_path - best["sdk"],
        "server_ratio": best["server"] / best["sdk"],
        "call_path_ratio": call_path / best["sdk"],
        "rounds": rounds,
        "runs": runs,
    }


ROWS: list[tuple[str, str, Callable[[float], str]]] = [
    ("sdk_us", "ClientSession.call_tool, directly", lambda v: f"{v:8.1f} µs"),
    ("server_us", "MCPServer.call (same session)", lambda v: f"{v:8.1f} µs"),
    ("relist_us", "a run's start: the listing stands", lambda v: f"{v:8.1f} µs"),
    ("list_us", "a run's start with tools_ttl=0: a listing", lambda v: f"{v:8.1f} µs"),
    ("run_function_us", "a run, add a function tool", lambda v: f"{v:8.1f} µs"),
    ("run_mcp_us", "a run, add the MCP server's tool", lambda v: f"{v:8.1f} µs"),
    ("server_extra_us", "MCPServer.call's own cost", lambda v: f"{v:8.1f} µs"),
    ("call_path_us", "an MCP call through the agent's tool path", lambda v: f"{v:8.1f} µs"),
    ("call_path_extra_us", "  of which beyond the SDK's call", lambda v: f"{v:8.1f} µs"),
    ("server_ratio", "MCPServer.call / SDK", lambda v: f"{v:8.3f}"),
    ("call_path_ratio", "tool path / SDK", lambda v: f"{v:8.3f}"),
]


def report(figures: _measure.Figures) -> str:
    """The figures as a human-readable table."""
    rounds, runs = figures["rounds"], figures["runs"]
    lines = [f"MCP tool call cost ({rounds} rounds of {runs} runs; minimum of round means)"]
    lines += [f"  {label:<44} {shown(figures[key])}" for key, label, shown in ROWS]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its figures."""
    args = sys.argv[1:] if argv is None else list(argv)
    if "--quick" not in args and not any(a.startswith("--runs") for a in args):
        args += ["--runs", str(RUNS)]
    return _measure.main(__doc__, args, measure, report)


if __name__ == "__main__":
    raise SystemExit(main())
