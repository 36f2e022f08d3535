"""An agent's built stack, and its rebuild when the agent's MCP servers offer other tools."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, final

from fncore.core import RegistrationError, Tool, ToolFunction, ToolsUnavailable
from fncore.core._checkpoint import config_hash
from fncore.core._output import OutputSpec
from fncore.runtime._engine import Engine
from fncore.runtime._mcp import MCPServerError, MCPTools
from fncore.runtime._stack import StackDescription

Build = Callable[..., tuple[Engine, StackDescription]]
"""`build_engine` with everything but ``tools`` (and ``lenient_filters``) given."""


@final
class AgentStack:
    """The engine an agent runs, its description and `config_hash` (internal).

    Built once from the given tools; built again, with the MCP servers' tools, whenever a
    listing of the servers differs from the one it was built with.
    """

    __slots__ = (
        "_build",
        "_given",
        "_instructions",
        "_offered",
        "config",
        "description",
        "engine",
        "mcp",
        "output",
    )

    def __init__(
        self,
        build: Build,
        given: tuple[Tool | ToolFunction, ...],
        instructions: str,
        mcp: MCPTools | None,
        output: Callable[[], OutputSpec[Any] | None],
    ) -> None:
        """Build the stack; ``output`` then gives the structured-output spec, if any.

        Raises:
            RegistrationError: if the registry holds a mistake, or ``output`` raises it.
        """
        self._build = build
        self._given = given
        self._instructions = instructions
        self.mcp = mcp
        """The agent's MCP servers (``None``: it has none)."""
        self._offered: tuple[Tool, ...] = ()
        """The MCP tools the engine was built with."""
        engine, description = build(tools=given, lenient_filters=mcp is not None)
        self.output = output()
        """How structured output is asked for and checked (``None``: text)."""
        self._adopt(engine, description)

    def _adopt(self, engine: Engine, description: StackDescription) -> None:
        output = self.output
        if output is not None:
            engine.output = output
        self.engine = engine
        """The folded engine."""
        self.description = description
        """What `Agent.describe` shows."""
        self.config = config_hash(str(description), self._instructions, engine.settings, output)
        """What a checkpoint must match to be resumed with this stack."""

    async def connect(self) -> None:
        """List the MCP servers' tools, and build the stack again if they changed.

        Raises:
            MCPServerError: if a server cannot start, be reached or be listed.
            RegistrationError: if a tool's name clashes with another's.
        """
        mcp = self.mcp
        if mcp is not None:
            await mcp.refresh()
            if mcp.tools is not self._offered:
                engine, description = self._build(tools=(*self._given, *mcp.tools))
                self._adopt(engine, description)
                self._offered = mcp.tools

    async def gather_tools(self) -> ToolsUnavailable | None:
        """`connect`, with what stops it as an error value."""
        try:
            await self.connect()
        except MCPServerError as exc:
            return ToolsUnavailable(message=str(exc), source=f"mcp server {exc.server}")
        except RegistrationError as exc:
            return ToolsUnavailable(message=str(exc))
        return None
