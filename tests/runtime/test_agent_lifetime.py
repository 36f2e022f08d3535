"""``async with agent:``: connect on entering (MCP servers start), close on leaving."""

from __future__ import annotations

import asyncio

import pytest
from mcp_support import demo_command

from fncore import Agent, MCPServer, Registry
from fncore.errors import MCPServerError
from fncore.testing import ScriptedModel, TestModel, tool_calls


def demo_server() -> MCPServer:
    """The test suite's demo MCP server, over stdio."""
    return MCPServer("demo", command=demo_command())


async def test_the_server_runs_inside_the_block_and_is_stopped_after() -> None:
    """Entering starts the server and offers its tools before any run; leaving stops it."""
    server = demo_server()
    model = ScriptedModel([tool_calls(("add", {"a": 1, "b": 2})), "done"])
    agent = Agent(model, registry=Registry(), mcp_servers=[server])
    assert not server.running
    async with agent as entered:
        assert entered is agent
        assert server.running
        assert agent.tools["add"].source == "mcp server demo"
        pid = (await server.call("pid", {})).content
        result = (await agent.run("1 and 2")).unwrap()
        assert [r.content for m in result.messages for r in m.tool_results] == ["3"]
        assert (await server.call("pid", {})).content == pid  # the same process all along
    assert not server.running


async def test_leaving_on_an_exception_stops_the_server_and_lets_it_through() -> None:
    """A block that raises still closes the agent; the exception is not swallowed."""
    server = demo_server()
    running: list[bool] = []

    async def failing_block() -> None:
        async with Agent(TestModel(), registry=Registry(), mcp_servers=[server]):
            running.append(server.running)
            raise LookupError

    with pytest.raises(LookupError):
        await failing_block()
    assert running == [True]
    assert not server.running


async def test_nested_and_concurrent_blocks_close_when_the_last_one_ends() -> None:
    """An inner (or another task's) block leaving does not stop what an outer one uses."""
    server = demo_server()
    agent = Agent(TestModel(), registry=Registry(), mcp_servers=[server])
    inner_left = asyncio.Event()

    async def other_task() -> None:
        async with agent:
            assert server.running
        inner_left.set()

    async with agent:
        async with agent:
            assert server.running
        assert server.running
        await asyncio.gather(other_task())
        await inner_left.wait()
        assert server.running
        assert (await server.call("add", {"a": 1, "b": 2})).content == "3"
    assert not server.running


async def test_a_closed_agent_can_be_entered_again() -> None:
    """After the block, entering again starts the server again (a new process)."""
    server = demo_server()
    agent = Agent(TestModel(), registry=Registry(), mcp_servers=[server])
    async with agent:
        first = (await server.call("pid", {})).content
    async with agent:
        assert server.running
        assert (await server.call("pid", {})).content != first
    assert not server.running


async def test_a_server_that_cannot_start_fails_the_entry_and_stops_the_others() -> None:
    """Entering raises MCPServerError; a server that did start is stopped again."""
    good = demo_server()
    bad = MCPServer("missing", command=["fncore-no-such-mcp-server"])
    agent = Agent(TestModel(), registry=Registry(), mcp_servers=[good, bad])
    entered: list[Agent] = []

    async def block() -> None:
        async with agent as inside:
            entered.append(inside)

    with pytest.raises(MCPServerError, match="'missing'"):
        await block()
    assert entered == []
    assert not good.running


async def test_an_agent_without_servers_is_a_context_manager_too() -> None:
    """With no MCP server, entering and leaving only open and close what the agent owns."""
    async with Agent(TestModel(), registry=Registry()) as agent:
        assert (await agent.run("hi")).unwrap().output
