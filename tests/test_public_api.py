"""The public surface is deliberate: these names, and no others, are exported."""

import importlib.metadata

import fncore
import fncore.testing

FNCORE = {
    "Agent", "AgentError", "AuthenticationFailed", "BadRequest", "ConnectionFailed",
    "ModelNotFound", "ModelTimeout", "PermissionDenied", "ProviderUnavailable", "RateLimited",
    "StreamInterrupted", "Compaction", "CompressContext", "CompressNext", "ConfigError",
    "Container", "DataPart", "ErrorRaised", "Halt", "InMemorySessionStore", "InvalidHistory",
    "LoopError", "LoopSettings", "MaxIterationsReached", "Message", "MiddlewareError", "Model",
    "ModelCallContext", "ModelCallNext", "ModelError", "ModelRequest", "ModelResponse",
    "ModelSettings", "Outcome", "Position", "ReasoningContext", "ReasoningDelta",
    "ReasoningNext", "ReasoningPart", "RegistrationError", "Registry", "RequireTool",
    "RoundFinished", "RoundStart", "RoundStarted", "RunCompleted", "RunContext", "RunEnd",
    "RunInfo", "RunNext", "RunOutcome", "RunResult", "RunStart", "State", "RunStream",
    "Session", "SessionConflict", "SessionError", "SessionStore", "SessionUpdate",
    "StackDescription", "StateKey", "StreamEvent", "SystemPromptContext",
    "Terminate", "TextDelta", "TextPart", "TooManyToolErrors", "Tool", "ToolCallArgsDelta",
    "ToolCallContext", "ToolCallNext", "ToolCallPart", "ToolCallStarted", "ToolChoice",
    "ToolEnd", "ToolResult", "ToolResultPart", "ToolResultReady", "ToolSpec", "ToolStart",
    "UnknownToolCalled", "Usage", "UsageReported", "current_metadata", "current_run",
    "default_registry", "hook", "load_container", "on", "recover", "tool", "tool_source",
    "Provide", "Provider", "list_provider", "__version__",
}  # fmt: skip

TESTING = {
    "FunctionModel", "ModelFunction", "Reply", "ScriptedModel", "TestModel", "deltas",
    "tool_calls",
}  # fmt: skip


def test_fncore_exports_exactly_the_public_names() -> None:
    """`fncore.__all__` neither leaks nor loses a name, and every name resolves."""
    assert set(fncore.__all__) == FNCORE
    assert all(hasattr(fncore, name) for name in fncore.__all__)


def test_all_is_sorted() -> None:
    """`__all__` lists are sorted, so additions are easy to review."""
    assert list(fncore.__all__) == sorted(fncore.__all__)
    assert list(fncore.testing.__all__) == sorted(fncore.testing.__all__)


def test_testing_exports_exactly_the_offline_models() -> None:
    """`fncore.testing.__all__` is pinned too."""
    assert set(fncore.testing.__all__) == TESTING
    assert all(hasattr(fncore.testing, name) for name in fncore.testing.__all__)


def test_version_is_the_installed_distribution_version() -> None:
    """`fncore.__version__` is read from the package metadata, not written by hand."""
    assert fncore.__version__ == importlib.metadata.version("fncore")
