"""When an MCP server's tools are listed again (real server processes).

A listing stands until the server says its tools changed, its connection is new, or its
``tools_ttl`` has passed. Each server counts the ``tools/list`` requests it answers; its
tool ``listings`` tells.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable

import pytest
from mcp_support import SERVERS, demo_command
from returns.result import Success

from fncore import Agent, MCPServer, RegistrationError, Registry
from fncore.testing import ScriptedModel, tool_calls

LEGACY = [sys.executable, str(SERVERS / "legacy.py")]
"""A server on protocol 2025-11-25, which sends its changes unasked."""


@pytest.fixture
async def demo() -> AsyncIterator[MCPServer]:
    """The demo server over stdio (protocol 2026-07-28), stopped after the test."""
    server = MCPServer("demo", command=demo_command())
    yield server
    await server.aclose()


async def _listings(server: MCPServer) -> int:
    """How many times the server has been asked for its tools (asking does not list)."""
    return int((await server.call("listings", {})).content)


def _agent(model: object, *servers: MCPServer) -> Agent:
    return Agent(model, registry=Registry(), mcp_servers=servers)  # type: ignore[arg-type]


def _answers() -> ScriptedModel:
    """A model that answers three times in text, calling no tool."""
    return ScriptedModel(["a", "b", "c"])


def _offered(model: ScriptedModel, request: int) -> set[str]:
    return {spec.name for spec in model.requests[request].tools}


async def _until(condition: Callable[[], bool]) -> None:
    """Wait (as long as it takes, up to a generous bound) until ``condition`` holds."""
    for _ in range(3000):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the condition never held")


async def test_later_runs_do_not_list_the_tools_again(demo: MCPServer) -> None:
    """Run after run, the listing made when the server started stands: no tools/list."""
    agent = _agent(_answers(), demo)
    for _ in range(3):
        assert isinstance(await agent.run("hi"), Success)
    assert await _listings(demo) == 1
    await agent.connect()
    assert await _listings(demo) == 1


@pytest.mark.parametrize("command", [demo_command(), LEGACY], ids=["2026-07-28", "2025-11-25"])
async def test_a_server_that_says_its_tools_changed_is_listed_again(command: list[str]) -> None:
    """After tools/list_changed the next run lists once, offers the new tool, rebuilds the stack."""
    server = MCPServer("demo", command=command)
    model = ScriptedModel([tool_calls(("grow", {})), "grown", tool_calls(("extra", {})), "x", "y"])
    agent = _agent(model, server)
    await agent.connect()
    before = agent.describe()
    assert "extra" not in before.tools
    assert isinstance(await agent.run("grow"), Success)
    assert await _listings(server) == 1
    outcome = await agent.run("extra")
    assert isinstance(outcome, Success)
    assert outcome.unwrap().messages[1].tool_results[0].content == "extra!"
    assert "extra" in _offered(model, 2)
    assert agent.describe() is not before
    assert "extra" in agent.describe().tools
    assert await _listings(server) == 2
    assert isinstance(await agent.run("again"), Success)
    assert await _listings(server) == 2
    await agent.aclose()


async def test_agents_sharing_a_server_each_rebuild_on_one_listing(demo: MCPServer) -> None:
    """One agent's run lists the changed tools; the other agent's next run offers them too."""
    first = _agent(ScriptedModel([tool_calls(("grow", {})), "grown"]), demo)
    model = ScriptedModel(["a", "b"])
    second = _agent(model, demo)
    assert isinstance(await second.run("hi"), Success)
    assert "extra" not in _offered(model, 0)
    assert isinstance(await first.run("grow"), Success)
    await first.connect()
    assert "extra" in first.describe().tools
    assert isinstance(await second.run("hi"), Success)
    assert "extra" in _offered(model, 1)
    assert await _listings(demo) == 2


async def test_a_quiet_change_is_not_seen_until_the_connection_is_new(demo: MCPServer) -> None:
    """A change the server does not tell of stands unseen; a new connection lists again."""
    model = ScriptedModel([tool_calls(("grow_quietly", {})), "grown", "a"])
    agent = _agent(model, demo)
    assert isinstance(await agent.run("grow"), Success)
    assert isinstance(await agent.run("hi"), Success)
    assert "extra" not in _offered(model, 2)
    assert await _listings(demo) == 1
    await demo.aclose()
    await agent.connect()
    assert await _listings(demo) == 1  # a new server process, listed once more
    assert demo.standing() is not None


async def test_a_change_stream_the_server_ends_counts_as_a_change(demo: MCPServer) -> None:
    """The server ends its subscriptions/listen stream: the next run lists once more."""
    agent = _agent(_answers(), demo)
    await agent.connect()
    assert (await demo.call("hang_up", {})).content == "hung up"
    await _until(lambda: demo.standing() is None)
    assert isinstance(await agent.run("hi"), Success)
    assert isinstance(await agent.run("hi"), Success)
    assert await _listings(demo) == 2


async def test_tools_ttl_zero_lists_at_every_run() -> None:
    """``tools_ttl=0``: every run lists, and sees a change the server did not tell of."""
    server = MCPServer("demo", command=demo_command(), tools_ttl=0)
    model = ScriptedModel([tool_calls(("grow_quietly", {})), "grown", "a", "b"])
    agent = _agent(model, server)
    assert isinstance(await agent.run("grow"), Success)
    assert isinstance(await agent.run("hi"), Success)
    assert "extra" in _offered(model, 2)
    assert isinstance(await agent.run("hi"), Success)
    assert await _listings(server) == 3
    await agent.aclose()


async def test_a_listing_stands_for_tools_ttl_seconds_of_the_clock() -> None:
    """With ``tools_ttl=30`` a listing stands until 30 s have passed on the server's clock."""
    now = [1000.0]
    server = MCPServer("demo", command=demo_command(), tools_ttl=30, clock=lambda: now[0])
    agent = _agent(_answers(), server)
    await agent.connect()
    now[0] += 29.5
    assert isinstance(await agent.run("hi"), Success)
    assert await _listings(server) == 1
    now[0] += 0.5
    assert isinstance(await agent.run("hi"), Success)
    assert await _listings(server) == 2
    now[0] += 29.5
    assert isinstance(await agent.run("hi"), Success)
    assert await _listings(server) == 2
    await agent.aclose()


async def test_a_told_change_does_not_wait_for_tools_ttl() -> None:
    """A server that says its tools changed is listed again before its ``tools_ttl`` passes."""
    server = MCPServer("demo", command=demo_command(), tools_ttl=3600, clock=lambda: 0.0)
    model = ScriptedModel([tool_calls(("grow", {})), "grown", "a"])
    agent = _agent(model, server)
    assert isinstance(await agent.run("grow"), Success)
    assert isinstance(await agent.run("hi"), Success)
    assert "extra" in _offered(model, 2)
    assert await _listings(server) == 2
    await agent.aclose()


@pytest.mark.parametrize("ttl", [-1, float("inf"), float("nan"), True, "5"])
def test_a_bad_tools_ttl_is_a_registration_error(ttl: object) -> None:
    """``tools_ttl`` is None or zero or more seconds, finite."""
    with pytest.raises(RegistrationError, match="tools_ttl must be zero or more seconds"):
        MCPServer("demo", command=demo_command(), tools_ttl=ttl)  # type: ignore[arg-type]
    assert MCPServer("demo", command=demo_command(), tools_ttl=0).tools_ttl == 0.0
    assert MCPServer("demo", command=demo_command()).tools_ttl is None
