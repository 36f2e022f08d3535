"""MCP servers from configuration: the settings file, the container, the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp_support import TIME_SERVER, TOKEN, http_demo
from returns.result import Success

from fncore import ConfigError, MCPServer, Registry, load_container
from fncore.settings import MCPServerConfig, load_settings


def _toml(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def _fncore(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FNCORE_")}
    return subprocess.run(
        [sys.executable, "-m", "fncore.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_server_tables_are_typed_and_secrets_stay_hidden() -> None:
    """The values of headers and env are secrets in a repr; a bad table is one ConfigError line."""
    settings = load_settings(
        overrides={
            "mcp": {
                "servers": {
                    "web": {"url": "http://u:pw@h/mcp", "headers": {"Authorization": TOKEN}},
                    "time": {"command": ["mcp-server-time"], "env": {"TZ_KEY": "k3y"}},
                }
            }
        },
        environ={},
    )
    shown = repr(settings.mcp)
    assert TOKEN not in shown
    assert "k3y" not in shown
    assert "pw" not in shown
    assert settings.mcp.servers["time"].timeout == 60.0
    assert settings.mcp.servers["time"].startup_timeout == 30.0
    for table, expected in [
        ({"command": ["x"], "url": "http://h/mcp"}, "give either command"),
        ({}, "give either command"),
        ({"command": []}, "command must name the program"),
        ({"url": "h/mcp"}, "url must start with http"),
        ({"command": ["x"], "timeout": -1}, "positive, finite number of seconds"),
        ({"command": ["x"], "startup_timeout": 0}, "positive, finite number of seconds"),
        ({"command": ["x"], "startup_timeout": "inf"}, "positive, finite number of seconds"),
        ({"command": ["x"], "prefix": "a b"}, "should match pattern"),
        ({"command": ["x"], "port": 1}, "Extra inputs"),
    ]:
        with pytest.raises(ConfigError) as raised:
            load_settings(overrides={"mcp": {"servers": {"x": table}}}, environ={})
        assert "'mcp.servers.x" in str(raised.value)
        assert expected in str(raised.value)


def test_the_settings_defaults_are_the_servers() -> None:
    """A table without timeouts gives a server the same limits as MCPServer's defaults."""
    table = MCPServerConfig(command=["x"])
    server = MCPServer("x", command=["x"])
    assert (table.timeout, table.startup_timeout) == (server.timeout, server.startup_timeout)


def test_tools_ttl_is_configured_per_server() -> None:
    """``tools_ttl``: unset as MCPServer's default, zero or more seconds, passed to the server."""
    assert MCPServerConfig(command=["x"]).tools_ttl is MCPServer("x", command=["x"]).tools_ttl
    for value, expected in [(-1, "greater than or equal to 0"), ("inf", "finite number")]:
        with pytest.raises(ConfigError) as raised:
            load_settings(
                overrides={"mcp": {"servers": {"x": {"command": ["x"], "tools_ttl": value}}}},
                environ={},
            )
        assert "'mcp.servers.x.tools_ttl'" in str(raised.value)
        assert expected in str(raised.value)
    container = load_container(
        environ={
            "FNCORE_MCP__SERVERS__TIME__COMMAND": json.dumps([TIME_SERVER]),
            "FNCORE_MCP__SERVERS__TIME__TOOLS_TTL": "0",
        }
    )
    [server] = container.mcp_servers()
    assert server.tools_ttl == 0.0


def test_the_environment_configures_a_server() -> None:
    """FNCORE_MCP__SERVERS__... variables work like any setting."""
    settings = load_settings(
        environ={
            "FNCORE_MCP__SERVERS__TIME__COMMAND": '["mcp-server-time"]',
            "FNCORE_MCP__SERVERS__TIME__PREFIX": "time_",
        }
    )
    assert settings.mcp.servers["time"].command == ["mcp-server-time"]
    assert settings.mcp.servers["time"].prefix == "time_"


async def test_container_agents_offer_configured_servers_and_shutdown_stops_them(
    tmp_path: Path,
) -> None:
    """[mcp.servers.*] in the file: the container's agents offer the tools; shutdown stops."""
    config = _toml(
        tmp_path / "fncore.toml",
        f"[mcp.servers.time]\ncommand = [{json.dumps(TIME_SERVER)}]\n"
        'prefix = "time_"\ntimeout = 30\nstartup_timeout = 45\n',
    )
    container = load_container(config, environ={})
    [server] = container.mcp_servers()
    assert (server.name, server.prefix) == ("time", "time_")
    assert (server.timeout, server.startup_timeout) == (30.0, 45.0)
    agent = container.agent(registry=Registry())
    outcome = await agent.run("UTC")
    assert isinstance(outcome, Success)
    assert 'time_get_current_time: {\n  "timezone": "UTC"' in outcome.unwrap().output
    assert server.running
    await container.shutdown()
    assert not server.running


async def test_a_configured_http_server_sends_its_secret_header(tmp_path: Path) -> None:
    """An HTTP server table with an Authorization header, read from the file."""
    with http_demo() as url:
        config = _toml(
            tmp_path / "fncore.toml",
            f'[mcp.servers.web]\nurl = "{url}"\nheaders = {{ Authorization = "Bearer {TOKEN}" }}\n',
        )
        container = load_container(config, environ={})
        [server] = container.mcp_servers()
        assert TOKEN not in repr(server)
        assert (await server.call("add", {"a": 20, "b": 22})).content == "42"
        await container.shutdown()


def test_cli_tools_lists_every_tool_and_where_it_comes_from(tmp_path: Path) -> None:
    """`fncore tools --config FILE`: the example's functions and the MCP server's tools."""
    config = _toml(
        tmp_path / "fncore.toml",
        f'[mcp.servers.time]\ncommand = [{json.dumps(TIME_SERVER)}]\nprefix = "time_"\n',
    )
    done = _fncore("tools", "--config", config)
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()]
    assert sorted(rows) == sorted(
        [
            ["add", "function"],
            ["multiply", "function"],
            ["word_count", "function"],
            ["time_get_current_time", "mcp", "server", "time"],
            ["time_convert_time", "mcp", "server", "time"],
        ]
    )
    assert _fncore("tools").stdout.split() == [
        "add",
        "function",
        "multiply",
        "function",
        "word_count",
        "function",
    ]


def test_cli_run_offers_the_configured_servers_tools(tmp_path: Path) -> None:
    """`fncore run --config FILE` calls the MCP server's tools too (the test model calls all)."""
    config = _toml(
        tmp_path / "fncore.toml", f"[mcp.servers.time]\ncommand = [{json.dumps(TIME_SERVER)}]\n"
    )
    done = _fncore("run", "--config", config, "UTC")
    assert done.returncode == 0, done.stderr
    assert '"timezone": "UTC"' in done.stdout
    assert "[tool_call] get_current_time(" in done.stderr
    streamed = _fncore("run", "--stream", "--config", config, "UTC")
    assert streamed.returncode == 0, streamed.stderr
    assert '"timezone": "UTC"' in streamed.stdout


@pytest.mark.parametrize("command", ["tools", "run"])
def test_cli_a_server_that_cannot_start_is_one_line(tmp_path: Path, command: str) -> None:
    """A misspelt command: exit 1, one line on stderr naming the server, no traceback."""
    config = _toml(tmp_path / "fncore.toml", '[mcp.servers.time]\ncommand = ["mcp-server-tim"]\n')
    done = _fncore(command, "--config", config, *(["hi"] if command == "run" else []))
    assert done.returncode == 1
    assert done.stderr == (
        "fncore: error: MCP server 'time': command 'mcp-server-tim' not found; "
        "install it or fix the command\n"
    )


def test_cli_a_server_that_does_not_start_in_time_is_one_line(tmp_path: Path) -> None:
    """A program that never answers the handshake: exit 1 and one line, nothing after it."""
    never_answers = json.dumps([sys.executable, "-c", "import sys; sys.stdin.read()"])
    config = _toml(
        tmp_path / "fncore.toml",
        f"[mcp.servers.slow]\ncommand = {never_answers}\nstartup_timeout = 1\n",
    )
    done = _fncore("tools", "--config", config)
    assert done.returncode == 1
    assert done.stderr == "fncore: error: MCP server 'slow': did not finish starting within 1.0s\n"
