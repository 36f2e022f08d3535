"""fncore: typed, functional middleware for LLM agents.

Middleware are plain async functions registered with decorators; a pure core folds them
into handlers that return ``Result`` values; provider adapters plug in at the edges.

The names most applications use are here. Every error type is also in `fncore.errors` (this
module keeps `AgentError`, the first level of its tree, `RegistrationError` and `ConfigError`),
and every stream and hook event is in `fncore.events`.
"""

import typing

from fncore import _public
from fncore._distribution import installed_version
from fncore.container import Container as Container
from fncore.container import load_container as load_container
from fncore.core import Approve as Approve
from fncore.core import ChangeResult as ChangeResult
from fncore.core import Checkpoint as Checkpoint
from fncore.core import CheckpointChange as CheckpointChange
from fncore.core import CompressContext as CompressContext
from fncore.core import CompressNext as CompressNext
from fncore.core import DataPart as DataPart
from fncore.core import Decision as Decision
from fncore.core import DecisionKind as DecisionKind
from fncore.core import Edit as Edit
from fncore.core import Halt as Halt
from fncore.core import Message as Message
from fncore.core import Model as Model
from fncore.core import ModelCallContext as ModelCallContext
from fncore.core import ModelCallNext as ModelCallNext
from fncore.core import ModelRequest as ModelRequest
from fncore.core import ModelResponse as ModelResponse
from fncore.core import ModelSettings as ModelSettings
from fncore.core import Outcome as Outcome
from fncore.core import OutputSchema as OutputSchema
from fncore.core import OutputStrategy as OutputStrategy
from fncore.core import Pause as Pause
from fncore.core import Paused as Paused
from fncore.core import PendingRequest as PendingRequest
from fncore.core import Position as Position
from fncore.core import ReasoningContext as ReasoningContext
from fncore.core import ReasoningNext as ReasoningNext
from fncore.core import ReasoningPart as ReasoningPart
from fncore.core import Registry as Registry
from fncore.core import Reject as Reject
from fncore.core import RequireTool as RequireTool
from fncore.core import Respond as Respond
from fncore.core import ResumePoint as ResumePoint
from fncore.core import RunContext as RunContext
from fncore.core import RunInfo as RunInfo
from fncore.core import RunNext as RunNext
from fncore.core import RunOutcome as RunOutcome
from fncore.core import RunResult as RunResult
from fncore.core import Session as Session
from fncore.core import SessionUpdate as SessionUpdate
from fncore.core import State as State
from fncore.core import StateKey as StateKey
from fncore.core import SystemPromptContext as SystemPromptContext
from fncore.core import Terminate as Terminate
from fncore.core import TextPart as TextPart
from fncore.core import Tool as Tool
from fncore.core import ToolCallContext as ToolCallContext
from fncore.core import ToolCallNext as ToolCallNext
from fncore.core import ToolCallPart as ToolCallPart
from fncore.core import ToolChoice as ToolChoice
from fncore.core import ToolResult as ToolResult
from fncore.core import ToolResultPart as ToolResultPart
from fncore.core import ToolSpec as ToolSpec
from fncore.core import Usage as Usage
from fncore.core import cases as cases
from fncore.core import default_registry as default_registry
from fncore.core import hook as hook
from fncore.core import on as on
from fncore.core import recover as recover
from fncore.core import tool as tool
from fncore.core import tool_source as tool_source
from fncore.core._loop import LoopSettings as LoopSettings
from fncore.errors import AgentError as AgentError
from fncore.errors import CheckpointError as CheckpointError
from fncore.errors import ConfigError as ConfigError
from fncore.errors import InvalidHistory as InvalidHistory
from fncore.errors import InvalidPrompt as InvalidPrompt
from fncore.errors import LimitExceeded as LimitExceeded
from fncore.errors import LoopError as LoopError
from fncore.errors import MiddlewareError as MiddlewareError
from fncore.errors import ModelError as ModelError
from fncore.errors import RegistrationError as RegistrationError
from fncore.errors import ScopeRequired as ScopeRequired
from fncore.errors import SessionError as SessionError
from fncore.errors import SubagentError as SubagentError
from fncore.errors import ToolsUnavailable as ToolsUnavailable
from fncore.runtime import Agent as Agent
from fncore.runtime import CheckpointCatalog as CheckpointCatalog
from fncore.runtime import CheckpointInfo as CheckpointInfo
from fncore.runtime import CheckpointStore as CheckpointStore
from fncore.runtime import InMemorySessionStore as InMemorySessionStore
from fncore.runtime import MCPServer as MCPServer
from fncore.runtime import Provide as Provide
from fncore.runtime import Provider as Provider
from fncore.runtime import RunStream as RunStream
from fncore.runtime import SessionCatalog as SessionCatalog
from fncore.runtime import SessionInfo as SessionInfo
from fncore.runtime import SessionStore as SessionStore
from fncore.runtime import StackDescription as StackDescription
from fncore.runtime import current_metadata as current_metadata
from fncore.runtime import current_run as current_run
from fncore.runtime import list_provider as list_provider
from fncore.runtime import register_state_type as register_state_type
from fncore.session_stores import PostgresSessionStore as PostgresSessionStore
from fncore.session_stores import SqliteSessionStore as SqliteSessionStore
from fncore.session_stores import open_session_store as open_session_store

if typing.TYPE_CHECKING:  # the paths deprecated below still type-check until they go
    from fncore.errors import *
    from fncore.events import *

__version__ = installed_version()
del installed_version

_public.export(__name__, extra=["__version__"])

if not typing.TYPE_CHECKING:  # hidden from type checkers, which then still catch typos
    # The names that moved to fncore.errors or fncore.events resolve here for one release,
    # with a DeprecationWarning.
    __getattr__ = _public.moved_to(__name__, "fncore.errors", "fncore.events")
