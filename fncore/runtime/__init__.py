"""The imperative shell: builds stacks, drives the loop, runs tools and hooks."""

from fncore.runtime._agent import Agent, Prompt
from fncore.runtime._di import Provide, Provider, list_provider
from fncore.runtime._mcp import MCPServer, MCPServerError
from fncore.runtime._scope import current_metadata, current_run
from fncore.runtime._stack import StackDescription
from fncore.runtime._steps import Steps
from fncore.runtime._stream import RunStream
from fncore.session_stores._memory import InMemorySessionStore
from fncore.session_stores._protocols import (
    CheckpointCatalog,
    CheckpointInfo,
    CheckpointStore,
    SessionCatalog,
    SessionInfo,
    SessionStore,
)
from fncore.session_stores._state_types import register_state_type

__all__ = [
    "Agent",
    "CheckpointCatalog",
    "CheckpointInfo",
    "CheckpointStore",
    "InMemorySessionStore",
    "MCPServer",
    "MCPServerError",
    "Prompt",
    "Provide",
    "Provider",
    "RunStream",
    "SessionCatalog",
    "SessionInfo",
    "SessionStore",
    "StackDescription",
    "Steps",
    "current_metadata",
    "current_run",
    "list_provider",
    "register_state_type",
]
