"""The public surface is deliberate: these names, and no others, are exported."""

import importlib.metadata
import inspect

import fncore
import fncore.adapter
import fncore.testing

FNCORE = {
    "Agent", "AgentError", "AuthenticationFailed", "BadRequest", "ConnectionFailed",
    "BudgetExceeded", "CallLimitExceeded", "DeadlineExceeded", "LimitExceeded",
    "RateLimitExceeded",
    "ModelNotFound", "ModelTimeout", "PermissionDenied", "ProviderUnavailable", "RateLimited",
    "StreamInterrupted", "Compaction", "CompressContext", "CompressNext", "ConfigError",
    "Container", "DataPart", "ErrorRaised", "GuardTripped", "Halt", "InMemorySessionStore",
    "InvalidHistory", "InvalidPrompt",
    "LoopError", "LoopSettings", "MaxIterationsReached", "Message", "MiddlewareError", "Model",
    "ModelCallContext", "ModelCallNext", "ModelError", "ModelRequest", "ModelResponse",
    "ModelSettings", "Outcome", "Position", "ReasoningContext", "ReasoningDelta",
    "ReasoningNext", "ReasoningPart", "RegistrationError", "Registry", "RequireTool",
    "RoundFinished", "RoundStart", "RoundStarted", "RunCompleted", "RunContext", "RunEnd",
    "RunInfo", "RunNext", "RunOutcome", "RunResult", "RunStart", "State", "RunStream",
    "ScopeRequired",
    "Session", "SessionCatalog", "SessionConflict", "SessionError", "SessionInfo",
    "SessionStore", "SessionUpdate",
    "StackDescription", "StateKey", "StreamEvent", "SystemPromptContext",
    "Terminate", "TextDelta", "TextPart", "TooManyToolErrors", "Tool", "ToolCallArgsDelta",
    "ToolCallContext", "ToolCallNext", "ToolCallPart", "ToolCallStarted", "ToolChoice",
    "ToolEnd", "ToolResult", "ToolResultPart", "ToolResultReady", "ToolSpec", "ToolStart",
    "UnexpectedResponse", "UnknownToolCalled", "Usage", "UsageReported", "current_metadata",
    "current_run", "default_registry", "hook", "load_container", "on", "recover", "cases", "tool",
    "tool_source", "Provide", "Provider", "list_provider", "__version__",
    "NotASessionStore", "NotSerializable", "PostgresSessionStore", "SessionSchemaTooNew",
    "SessionStoreCorrupt", "SessionStoreError", "SessionStoreUnavailable",
    "SqliteSessionStore", "open_session_store",
    "register_state_type",
    "Approve", "Edit", "Reject", "Respond", "Decision", "DecisionKind", "Pause", "Paused",
    "PendingRequest", "RunPaused", "Checkpoint", "CheckpointChange", "ChangeResult",
    "CheckpointStore",
    "ResumePoint", "CheckpointError", "CheckpointNotFound", "CheckpointExpired",
    "CheckpointBusy", "CheckpointMismatch", "DecisionError", "UnknownRequest",
    "DecisionMissing", "DecisionNotAllowed", "DecisionConflict",
    "SubagentEvent", "SubagentStart", "SubagentEnd", "SubagentError", "SubagentCycle",
    "SubagentDepthExceeded",
    "OutputStrategy", "OutputSchema", "OutputValidationFailed", "OutputMissing",
    "MCPServer", "MCPServerError", "ToolsUnavailable",
}  # fmt: skip

TESTING = {
    "FunctionModel", "ModelFunction", "Reply", "ScriptedModel", "TestModel", "deltas",
    "tool_calls",
}  # fmt: skip

ADAPTER = {
    "ApiKey", "AuthenticationFailed", "BadRequest", "Client", "ConnectionFailed", "DataPart",
    "Endpoint", "EventStream", "ExceptionMapper", "FinishReason", "Message", "Model",
    "ModelError", "ModelNotFound", "ModelRequest", "ModelResponse", "ModelSettings",
    "ModelStreamItem", "ModelTimeout", "NotExpressible", "OutputSchema", "Part",
    "PermissionDenied",
    "ProviderModel", "ProviderUnavailable", "RateLimited", "ReasoningDelta", "ReasoningPart",
    "RequireTool", "ResponseAssembler", "Role", "StreamDecoder", "StreamDelta",
    "StreamInterrupted", "TextDelta", "TextPart", "ToolCallArgsDelta", "ToolCallPart",
    "ToolCallStarted", "ToolChoice", "ToolResultPart", "ToolSpec", "UnexpectedResponse",
    "Usage", "UsageReported", "describe", "error_for_status", "excerpt", "fallback_call_id",
    "one_line", "redact", "redact_url", "resolve_api_key", "retry_after_seconds",
    "secret_value", "url_secrets", "usable_call_id",
}  # fmt: skip


def test_fncore_exports_exactly_the_public_names() -> None:
    """`fncore.__all__` neither leaks nor loses a name, and every name resolves."""
    assert set(fncore.__all__) == FNCORE
    assert all(hasattr(fncore, name) for name in fncore.__all__)


def test_all_is_sorted() -> None:
    """`__all__` lists are sorted, so additions are easy to review."""
    assert list(fncore.__all__) == sorted(fncore.__all__)
    assert list(fncore.testing.__all__) == sorted(fncore.testing.__all__)
    assert list(fncore.adapter.__all__) == sorted(fncore.adapter.__all__)


def test_testing_exports_exactly_the_offline_models() -> None:
    """`fncore.testing.__all__` is pinned too."""
    assert set(fncore.testing.__all__) == TESTING
    assert all(hasattr(fncore.testing, name) for name in fncore.testing.__all__)


def test_adapter_exports_exactly_what_adapters_need() -> None:
    """`fncore.adapter.__all__` is pinned: the contract, the errors, the shared helpers."""
    assert set(fncore.adapter.__all__) == ADAPTER
    assert all(hasattr(fncore.adapter, name) for name in fncore.adapter.__all__)


def test_adapter_objects_show_the_public_module() -> None:
    """Classes and functions defined in `fncore.adapter` carry it as their ``__module__``.

    Re-exports of the core keep theirs; nothing shows a private ``fncore.adapter._x`` path.
    """
    for name in fncore.adapter.__all__:
        obj = getattr(fncore.adapter, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert not obj.__module__.startswith("fncore.adapter._"), name
    assert fncore.adapter.Endpoint.__module__ == "fncore.adapter"
    assert fncore.adapter.ProviderModel.__module__ == "fncore.adapter"
    assert fncore.adapter.redact_url.__module__ == "fncore.adapter"


def test_version_is_the_installed_distribution_version() -> None:
    """`fncore.__version__` is read from the package metadata, not written by hand."""
    assert fncore.__version__ == importlib.metadata.version("fncore-agents")
