"""Tools from MCP servers: real server processes, over stdio and streamable HTTP."""

from __future__ import annotations

import asyncio
import gc
import json
import sys
from collections.abc import AsyncIterator

import pytest
from mcp_support import (
    EXITS,
    GARBAGE,
    TIME_SERVER,
    TOKEN,
    demo_command,
    free_port,
    html_server,
    http_demo,
)
from returns.result import Failure, Success

from fncore import (
    Agent,
    MCPServer,
    Outcome,
    RegistrationError,
    Registry,
    ToolCallContext,
    ToolCallNext,
    ToolResult,
    ToolsUnavailable,
)
from fncore.errors import MCPServerError
from fncore.events import RunCompleted, ToolResultReady
from fncore.testing import ScriptedModel, TestModel, tool_calls


@pytest.fixture
async def demo() -> AsyncIterator[MCPServer]:
    """The demo server over stdio, stopped after the test."""
    server = MCPServer("demo", command=demo_command())
    yield server
    await server.aclose()


def _agent(model: object, *servers: MCPServer, registry: Registry | None = None) -> Agent:
    return Agent(model, registry=registry or Registry(), mcp_servers=servers)  # type: ignore[arg-type]


def _results(outcome: object) -> list[tuple[str, str, bool]]:
    assert isinstance(outcome, Success), outcome
    return [
        (r.name, r.content, r.is_error) for m in outcome.unwrap().messages for r in m.tool_results
    ]


async def test_stdio_tools_keep_the_servers_name_description_and_schema(
    demo: MCPServer,
) -> None:
    """Each MCP tool becomes a Tool with the schema as the server gave it."""
    tools = {t.name: t for t in await demo.tools()}
    assert {"add", "shout", "crash", "slow", "fail", "picture", "grow", "pid"} <= set(tools)
    add = tools["add"]
    assert add.source == "mcp server demo"
    assert add.spec.description == "Add two integers."
    assert add.spec.parameters["required"] == ["a", "b"]
    assert add.spec.parameters["properties"]["a"]["type"] == "integer"
    assert add.spec.strict is False


async def test_an_agent_calls_mcp_tools_through_tool_call_middleware(demo: MCPServer) -> None:
    """tool_call middleware wrap MCP tools like any other; arguments read with ctx.arg."""
    registry = Registry()
    seen: list[tuple[str, int, str]] = []

    @registry.on("tool_call")
    async def record(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
        seen.append((ctx.tool.name, ctx.arg("a", int), ctx.tool.source))
        changed = ctx.with_args(b=10)
        return await call_next(changed)

    model = ScriptedModel([tool_calls(("add", {"a": 2, "b": 3})), "done"])
    agent = _agent(model, demo, registry=registry)
    outcome = await agent.run("add")
    assert _results(outcome) == [("add", "12", False)]
    assert seen == [("add", 2, "mcp server demo")]
    assert "add" in {s.name for s in model.requests[0].tools}
    await agent.aclose()


async def test_streaming_shows_the_mcp_tool_result(demo: MCPServer) -> None:
    """A streamed run emits the MCP tool's result like any tool result."""
    agent = _agent(ScriptedModel([tool_calls(("shout", {"text": "hi", "times": 2})), "ok"]), demo)
    events = [e async for e in agent.stream("shout")]
    ready = [e.result for e in events if isinstance(e, ToolResultReady)]
    assert [(r.name, r.content) for r in ready] == [("shout", "HI HI")]
    assert isinstance(events[-1], RunCompleted)
    assert isinstance(events[-1].outcome, Success)


async def test_the_official_time_server_from_pypi_over_stdio() -> None:
    """mcp-server-time's tools are offered (with a prefix) and called by the test model."""
    time_server = MCPServer("time", command=[TIME_SERVER], prefix="time_")
    agent = _agent(TestModel(), time_server)
    outcome = await agent.run("UTC")
    results = {name: (content, error) for name, content, error in _results(outcome)}
    content, error = results["time_get_current_time"]
    assert not error
    assert json.loads(content)["timezone"] == "UTC"
    assert results["time_convert_time"][1] is True  # "UTC" is no HH:MM time: the server says so
    assert agent.tools["time_convert_time"].source == "mcp server time"
    await agent.aclose()
    assert not time_server.running


async def test_results_errors_images_and_structured_content(demo: MCPServer) -> None:
    """An isError result is an error; images become data URLs; one line per text block."""
    assert await demo.call("fail", {"reason": "no way"}) == ToolResult(
        "Error executing tool fail: no way", True
    )
    picture = await demo.call("picture", {})
    assert picture == ToolResult("a dot\n[image image/png] data:image/png;base64,iVBORw0=")
    assert (await demo.call("add", {"a": 1, "b": 2})).content == "3"


async def test_missing_required_arguments_are_checked_before_the_call(demo: MCPServer) -> None:
    """Arguments without a required key go back to the model without reaching the server."""
    agent = _agent(ScriptedModel([tool_calls(("add", {"a": 1})), "ok"]), demo)
    [(_, content, error)] = _results(await agent.run("add"))
    assert error
    assert "missing required argument(s): b" in content


async def test_wrongly_typed_arguments_come_back_from_the_server(demo: MCPServer) -> None:
    """The server checks types against its own schema; its refusal is an error result."""
    result = await demo.call("add", {"a": "x", "b": 1})
    assert result.is_error
    assert "a" in result.content


async def test_a_crash_mid_call_is_an_error_result_and_the_server_restarts(
    demo: MCPServer,
) -> None:
    """The server exits during a call: error result; the next use starts it again."""
    first = int((await demo.call("pid", {})).content)
    crashed = await demo.call("crash", {})
    assert crashed.is_error
    assert "stopped during the call to 'crash'" in crashed.content
    assert not demo.running
    second = int((await demo.call("pid", {})).content)
    assert second != first
    assert demo.running


async def test_a_crash_in_a_run_then_the_next_run_restarts_it(demo: MCPServer) -> None:
    """In an agent: the crashing call's result is an error; the next run works."""
    model = ScriptedModel(
        [tool_calls(("crash", {})), "a", tool_calls(("add", {"a": 1, "b": 1})), "b"]
    )
    agent = _agent(model, demo)
    [(_, content, error)] = _results(await agent.run("crash"))
    assert error
    assert "restarts on next use" in content
    assert _results(await agent.run("add")) == [("add", "2", False)]


async def test_a_call_that_takes_too_long_times_out_and_the_server_stays_usable() -> None:
    """Calls have the server's timeout; a late call is an error result.

    The call waits an hour, so the timeout always fires; starting the server has its own,
    generous, limit, and listing the tools (one quick request) has seconds to spare.
    """
    server = MCPServer("demo", command=demo_command(), timeout=5.0)
    agent = _agent(ScriptedModel([tool_calls(("slow", {"seconds": 3600})), "ok"]), server)
    [(_, content, error)] = _results(await agent.run("slow"))
    assert error
    assert content == "Tool 'slow' timed out after 5.0s."
    assert (await server.call("slow", {"seconds": 0})).content == "done"
    await server.aclose()


async def test_the_call_timeout_does_not_bound_starting_the_server() -> None:
    """A call timeout far shorter than any start: the server still starts, within its own."""
    server = MCPServer("demo", command=demo_command(), timeout=0.001)
    assert (server.timeout, server.startup_timeout) == (0.001, 30.0)
    assert (await server.call("add", {"a": 1, "b": 2})).content == "3"
    await server.aclose()


async def test_a_server_that_does_not_start_in_time_is_one_error_and_nothing_else() -> None:
    """A program that never answers: the startup timeout fires; no future is left unread.

    asyncio reports a failed future nobody read ("Future exception was never retrieved")
    to the loop's exception handler when it is collected: nothing may reach it.
    """
    never_answers = [sys.executable, "-c", "import sys; sys.stdin.read()"]
    server = MCPServer("mute", command=never_answers, startup_timeout=0.5, timeout=60)
    loop = asyncio.get_running_loop()
    reported: list[dict[str, object]] = []
    loop.set_exception_handler(lambda _, context: reported.append(context))
    try:
        with pytest.raises(MCPServerError) as raised:
            await server.tools()
        assert str(raised.value) == "MCP server 'mute': did not finish starting within 0.5s"
        assert not server.running
        del raised
        for _ in range(20):  # let the stopped owner task's callbacks run: they hold the future
            await asyncio.sleep(0)
        gc.collect()
        await asyncio.sleep(0)  # a collected future reports through call_soon
    finally:
        loop.set_exception_handler(None)
    assert reported == []


async def test_tool_list_changes_are_offered_from_the_next_run(demo: MCPServer) -> None:
    """A tool the server adds during one run is offered in the next one."""
    model = ScriptedModel([tool_calls(("grow", {})), "grown", tool_calls(("extra", {})), "x"])
    agent = _agent(model, demo)
    assert _results(await agent.run("grow")) == [("grow", "grown", False)]
    assert "extra" not in {s.name for s in model.requests[0].tools}
    assert _results(await agent.run("extra")) == [("extra", "extra!", False)]
    assert "extra" in {s.name for s in model.requests[2].tools}
    assert "extra" in agent.describe().tools


async def test_a_name_clash_names_both_sources_and_a_prefix_avoids_it() -> None:
    """An MCP tool named like a function tool: a build error naming both; prefix fixes it."""

    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    server = MCPServer("demo", command=demo_command())
    agent = Agent(TestModel(), registry=Registry(), tools=[add], mcp_servers=[server])
    with pytest.raises(RegistrationError) as raised:
        await agent.connect()
    message = str(raised.value)
    assert "two tools are named 'add'" in message
    assert "function" in message
    assert "mcp server demo" in message
    outcome = await agent.run("hi")
    assert isinstance(outcome, Failure)
    assert isinstance(outcome.failure(), ToolsUnavailable)
    await agent.aclose()

    prefixed = MCPServer("demo", command=demo_command(), prefix="demo_")
    agent = Agent(TestModel(), registry=Registry(), tools=[add], mcp_servers=[prefixed])
    await agent.connect()
    assert {"add", "demo_add"} <= set(agent.tools)
    assert (await agent.tools["demo_add"].function(a=1, b=2)).content == "3"
    await agent.aclose()


async def test_tool_call_filters_may_name_mcp_tools() -> None:
    """A tool_call middleware for an MCP tool by name is checked once the tools are listed."""
    registry = Registry()
    seen: list[str] = []

    @registry.on("tool_call", tools=["add"])
    async def only_add(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
        seen.append(ctx.tool.name)
        return await call_next(ctx)

    server = MCPServer("demo", command=demo_command())
    model = ScriptedModel([tool_calls(("add", {"a": 1, "b": 2}), ("pid", {})), "ok"])
    agent = _agent(model, server, registry=registry)
    await agent.run("go")
    assert seen == ["add"]
    await agent.aclose()

    registry = Registry()
    registry.on("tool_call", tools=["nope"])(only_add)
    agent = _agent(TestModel(), MCPServer("demo", command=demo_command()), registry=registry)
    outcome = await agent.run("go")
    assert isinstance(outcome, Failure)
    assert "unknown tool(s) 'nope'" in str(outcome.failure())
    await agent.aclose()


async def test_http_transport_with_a_secret_header() -> None:
    """Over streamable HTTP with an Authorization header, whose value shows nowhere."""
    with http_demo() as url:
        server = MCPServer("web", url=url, headers={"Authorization": f"Bearer {TOKEN}"})
        assert TOKEN not in repr(server)
        assert repr(server) == f"MCPServer('web', url={url!r}, headers=['Authorization'])"
        agent = _agent(ScriptedModel([tool_calls(("add", {"a": 4, "b": 5})), "ok"]), server)
        assert _results(await agent.run("add")) == [("add", "9", False)]
        await agent.aclose()

        wrong = MCPServer("web", url=url, headers={"Authorization": "Bearer wrong-secret"})
        with pytest.raises(MCPServerError) as raised:
            await wrong.tools()
        assert str(raised.value).startswith("MCP server 'web'")
        assert "wrong-secret" not in str(raised.value)
        assert "\n" not in str(raised.value)


async def test_http_server_crash_is_an_error_result_then_it_reconnects() -> None:
    """An HTTP server that goes away mid-call gives an error result; a new one is used next."""
    with http_demo(token=None) as url:
        server = MCPServer("web", url=url, timeout=10)
        assert (await server.call("add", {"a": 1, "b": 1})).content == "2"
        crashed = await server.call("crash", {})
        assert crashed.is_error
        assert "'crash'" in crashed.content
        assert not server.running
    gone = await server.call("add", {"a": 1, "b": 1})
    assert gone.is_error
    assert gone.content.startswith(f"MCP server 'web': cannot reach {url}")
    await server.aclose()


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (["mcp-server-that-does-not-exist"], "command 'mcp-server-that-does-not-exist' not found"),
        ([sys.executable, EXITS], "exited while starting; its last words: demo server: TOKEN"),
        ([sys.executable, GARBAGE], "does not speak MCP"),
    ],
)
async def test_a_stdio_server_that_cannot_start_is_one_line_naming_it(
    command: list[str], expected: str
) -> None:
    """Command not found, exit at start, not MCP: MCPServerError, one line with the name."""
    server = MCPServer("broken", command=command)
    with pytest.raises(MCPServerError) as raised:
        await server.tools()
    message = str(raised.value)
    assert message.startswith("MCP server 'broken': ")
    assert expected in message
    assert "\n" not in message
    assert raised.value.server == "broken"
    result = await server.call("anything", {})
    assert result.is_error
    assert expected in result.content


async def test_an_http_server_that_cannot_be_reached_or_is_not_mcp() -> None:
    """A refused URL and an HTML page: one line naming the server and the URL, no secret."""
    url = f"http://user:pw@127.0.0.1:{free_port()}/mcp?key=k3y"
    with pytest.raises(MCPServerError) as raised:
        await MCPServer("gone", url=url, headers={"X-Key": "hidden"}).tools()
    message = str(raised.value)
    assert message.startswith("MCP server 'gone': cannot reach http://127.0.0.1:")
    assert "pw" not in message
    assert "k3y" not in message
    assert "hidden" not in message
    with html_server() as page, pytest.raises(MCPServerError) as raised:
        await MCPServer("page", url=page).tools()
    assert f"MCP server 'page': at {page} does not answer as an MCP server" in str(raised.value)


async def test_a_run_whose_server_cannot_start_fails_with_a_value() -> None:
    """Run and stream return ToolsUnavailable naming the server; nothing runs."""
    model = ScriptedModel([])
    agent = _agent(model, MCPServer("gone", command=["no-such-mcp-program"]))
    outcome = await agent.run("hi")
    assert isinstance(outcome, Failure)
    error = outcome.failure()
    assert isinstance(error, ToolsUnavailable)
    assert error.source == "mcp server gone"
    events = [e async for e in agent.stream("hi")]
    assert isinstance(events[-1], RunCompleted)
    assert isinstance(events[-1].outcome, Failure)
    assert model.requests == []


def test_bad_server_definitions_are_registration_errors() -> None:
    """Neither or both transports, an empty command, a bad URL, prefix or either timeout."""
    cases = [
        ({}, "give either command"),
        ({"command": ["x"], "url": "http://h/mcp"}, "not both"),
        ({"command": []}, "command must be the program"),
        ({"command": [""]}, "command names no program"),
        ({"url": "ftp://h/x"}, "url must start with http:// or https://"),
        ({"command": ["x"], "prefix": "a.b"}, "prefix 'a.b'"),
        ({"command": ["x"], "timeout": 0}, "timeout must be a positive"),
        ({"command": ["x"], "timeout": float("nan")}, "timeout must be a positive"),
        ({"command": ["x"], "startup_timeout": -1}, "startup_timeout must be a positive"),
        ({"command": ["x"], "startup_timeout": float("inf")}, "startup_timeout must be a pos"),
    ]
    for kwargs, expected in cases:
        with pytest.raises(RegistrationError, match=r"MCP server .x.|an MCP server") as raised:
            MCPServer("x", **kwargs)  # type: ignore[arg-type]
        assert expected in str(raised.value)
    with pytest.raises(RegistrationError, match="needs a name"):
        MCPServer("", command=["x"])
    with pytest.raises(RegistrationError, match="two MCP servers are named 'a'"):
        _agent(TestModel(), MCPServer("a", command=["x"]), MCPServer("a", command=["y"]))


async def test_close_then_use_starts_it_again(demo: MCPServer) -> None:
    """Closing stops the process; a later call starts a new one."""
    first = (await demo.call("pid", {})).content
    await demo.aclose()
    assert not demo.running
    assert (await demo.call("pid", {})).content != first


def test_every_kind_of_content_block_becomes_text() -> None:
    """Embedded resources (text or bytes), resource links, unknown blocks, empty results."""
    from mcp_types import (
        BlobResourceContents,
        EmbeddedResource,
        ResourceLink,
        TextResourceContents,
    )

    from fncore.runtime._mcp_tools import result_of

    blocks = [
        EmbeddedResource(
            type="resource", resource=TextResourceContents(uri="file:///a.txt", text="hello")
        ),
        EmbeddedResource(
            type="resource",
            resource=BlobResourceContents(uri="file:///b.bin", blob="AAE=", mime_type="x/y"),
        ),
        ResourceLink(type="resource_link", name="doc", uri="file:///d", description="a doc"),
        ResourceLink(type="resource_link", name="bare", uri="file:///e"),
    ]
    assert result_of(blocks, None, False).content.splitlines() == [
        "hello",
        "[resource file:///b.bin] data:x/y;base64,AAE=",
        "[resource link doc file:///d]: a doc",
        "[resource link bare file:///e]",
    ]
    assert result_of([], None, True) == ToolResult("", True)
