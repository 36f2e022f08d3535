"""The public surface is deliberate: these names, and no others, are exported."""

import importlib
import importlib.metadata
import inspect
import sys
import types
import warnings

import pytest

import fncore
import fncore.adapter
import fncore.core
import fncore.durable
import fncore.errors
import fncore.events
import fncore.middleware
import fncore.serve
import fncore.settings
import fncore.stores
import fncore.testing

FNCORE = {
    "Agent", "RunStream", "RunResult", "RunOutcome", "LoopSettings", "StackDescription",
    "Registry", "on", "hook", "tool", "tool_source", "default_registry", "Tool", "ToolResult",
    "Outcome", "Halt", "Terminate", "recover", "cases",
    "RunContext", "RunNext", "ReasoningContext", "ReasoningNext", "ModelCallContext",
    "ModelCallNext", "ToolCallContext", "ToolCallNext", "CompressContext", "CompressNext",
    "SystemPromptContext", "RunInfo", "State", "StateKey", "Position",
    "Model", "ModelRequest", "ModelResponse", "ModelSettings", "ToolSpec", "ToolChoice",
    "RequireTool", "Usage", "Message", "TextPart", "ReasoningPart", "ToolCallPart",
    "ToolResultPart", "DataPart",
    "Session", "SessionUpdate", "SessionStore", "InMemorySessionStore", "SessionCatalog",
    "SessionInfo", "SqliteSessionStore", "PostgresSessionStore", "open_session_store",
    "register_state_type", "current_run", "current_metadata",
    "Pause", "PendingRequest", "Paused", "DecisionKind", "Decision", "Approve", "Edit",
    "Reject", "Respond", "CheckpointStore", "Checkpoint", "CheckpointChange", "ChangeResult",
    "ResumePoint", "CheckpointCatalog", "CheckpointInfo",
    "OutputStrategy", "OutputSchema", "MCPServer",
    "Container", "load_container", "Provide", "Provider", "list_provider", "__version__",
    "AgentError", "MiddlewareError", "ModelError", "LoopError", "InvalidPrompt",
    "InvalidHistory", "SessionError", "CheckpointError", "ScopeRequired", "SubagentError",
    "ToolsUnavailable", "LimitExceeded", "RegistrationError", "ConfigError",
}  # fmt: skip

ERRORS = {
    "AgentError", "MiddlewareError", "ModelError", "AuthenticationFailed", "PermissionDenied",
    "BadRequest", "ModelNotFound", "RateLimited", "ProviderUnavailable", "ModelTimeout",
    "ConnectionFailed", "StreamInterrupted", "UnexpectedResponse", "LoopError",
    "MaxIterationsReached", "TooManyToolErrors", "UnknownToolCalled", "OutputValidationFailed",
    "OutputMissing", "InvalidPrompt", "InvalidHistory", "SessionError", "SessionConflict",
    "CheckpointError", "CheckpointNotFound", "CheckpointExpired", "CheckpointBusy",
    "CheckpointMismatch", "DecisionError", "UnknownRequest", "DecisionMissing",
    "DecisionNotAllowed", "DecisionConflict", "ScopeRequired", "SubagentError", "SubagentCycle",
    "SubagentDepthExceeded", "ToolsUnavailable", "LimitExceeded", "CallLimitExceeded",
    "BudgetExceeded", "RateLimitExceeded", "DeadlineExceeded", "RegistrationError",
    "MCPServerError", "ConfigError", "SessionStoreError", "SessionStoreUnavailable",
    "NotASessionStore", "SessionStoreCorrupt", "SessionSchemaTooNew", "NotSerializable",
}  # fmt: skip

EVENTS = {
    "StreamEvent", "TextDelta", "ReasoningDelta", "ToolCallStarted", "ToolCallArgsDelta",
    "UsageReported", "RoundStarted", "RoundFinished", "ToolResultReady", "GuardTripped",
    "RunPaused", "SubagentEvent", "RunCompleted", "HookEvent", "HookEventName", "RunStart",
    "RunEnd", "RoundStart", "ToolStart", "ToolEnd", "Compaction", "ErrorRaised",
    "SubagentStart", "SubagentEnd",
}  # fmt: skip

MOVED = {
    "AuthenticationFailed": "fncore.errors", "BadRequest": "fncore.errors",
    "BudgetExceeded": "fncore.errors", "CallLimitExceeded": "fncore.errors",
    "CheckpointBusy": "fncore.errors", "CheckpointExpired": "fncore.errors",
    "CheckpointMismatch": "fncore.errors", "CheckpointNotFound": "fncore.errors",
    "ConnectionFailed": "fncore.errors", "DeadlineExceeded": "fncore.errors",
    "DecisionConflict": "fncore.errors", "DecisionError": "fncore.errors",
    "DecisionMissing": "fncore.errors", "DecisionNotAllowed": "fncore.errors",
    "MCPServerError": "fncore.errors", "MaxIterationsReached": "fncore.errors",
    "ModelNotFound": "fncore.errors", "ModelTimeout": "fncore.errors",
    "NotASessionStore": "fncore.errors", "NotSerializable": "fncore.errors",
    "OutputMissing": "fncore.errors", "OutputValidationFailed": "fncore.errors",
    "PermissionDenied": "fncore.errors", "ProviderUnavailable": "fncore.errors",
    "RateLimitExceeded": "fncore.errors", "RateLimited": "fncore.errors",
    "SessionConflict": "fncore.errors", "SessionSchemaTooNew": "fncore.errors",
    "SessionStoreCorrupt": "fncore.errors", "SessionStoreError": "fncore.errors",
    "SessionStoreUnavailable": "fncore.errors", "StreamInterrupted": "fncore.errors",
    "SubagentCycle": "fncore.errors", "SubagentDepthExceeded": "fncore.errors",
    "TooManyToolErrors": "fncore.errors", "UnexpectedResponse": "fncore.errors",
    "UnknownRequest": "fncore.errors", "UnknownToolCalled": "fncore.errors",
    "Compaction": "fncore.events", "ErrorRaised": "fncore.events",
    "GuardTripped": "fncore.events", "ReasoningDelta": "fncore.events",
    "RoundFinished": "fncore.events", "RoundStart": "fncore.events",
    "RoundStarted": "fncore.events", "RunCompleted": "fncore.events",
    "RunEnd": "fncore.events", "RunPaused": "fncore.events", "RunStart": "fncore.events",
    "StreamEvent": "fncore.events", "SubagentEnd": "fncore.events",
    "SubagentEvent": "fncore.events", "SubagentStart": "fncore.events",
    "TextDelta": "fncore.events", "ToolCallArgsDelta": "fncore.events",
    "ToolCallStarted": "fncore.events", "ToolEnd": "fncore.events",
    "ToolResultReady": "fncore.events", "ToolStart": "fncore.events",
    "UsageReported": "fncore.events",
}  # fmt: skip
"""The names that left the top level in this release, and where they are now."""

DURABLE = {
    "DurableClient", "DurableError", "DurableRun", "DurableRunInfo", "DurableRuntime",
    "DurableSettings", "DurableUnavailable", "DurableUnavailableError", "StackChanged",
    "StepRecord", "UnknownAgent", "UnknownRun",
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
    "RequireTool", "ResponseAssembler", "Role", "SdkExceptionMapper", "StreamDecoder",
    "StreamDelta",
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


PACKAGES = [
    fncore,
    fncore.errors,
    fncore.events,
    fncore.core,
    fncore.adapter,
    fncore.middleware,
    fncore.durable,
]
"""The modules whose ``__all__`` is derived from what they import."""


def test_all_is_sorted() -> None:
    """`__all__` lists are sorted, so additions are easy to review."""
    for module in [*PACKAGES, fncore.testing]:
        assert list(module.__all__) == sorted(module.__all__), module.__name__


def test_errors_and_events_export_exactly_their_names() -> None:
    """`fncore.errors` has every error type, `fncore.events` every stream and hook event."""
    assert set(fncore.errors.__all__) == ERRORS
    assert set(fncore.events.__all__) == EVENTS
    for name in ERRORS:
        obj = getattr(fncore.errors, name)
        assert issubclass(obj, (fncore.errors.AgentError, Exception)), name


@pytest.mark.parametrize("module", PACKAGES, ids=lambda m: m.__name__)
def test_all_is_what_the_module_imports(module: types.ModuleType) -> None:
    """A derived ``__all__`` lists every public name the module binds, and nothing else."""
    bound = {
        name
        for name, obj in vars(module).items()
        if not name.startswith("_") and not inspect.ismodule(obj)
    }
    assert set(module.__all__) - {"__version__"} == bound


def test_durable_exports_exactly_its_names() -> None:
    """`fncore.durable` has the runtime, the client, what they show, and their errors."""
    assert set(fncore.durable.__all__) == DURABLE
    assert fncore.durable.DurableRuntime.__module__ == "fncore.durable"
    for name in ("DurableError", "DurableUnavailable", "StackChanged", "UnknownAgent"):
        assert issubclass(getattr(fncore.durable, name), fncore.errors.AgentError), name


def declared(prefix: str) -> set[str]:
    """The union of the ``__all__`` lists of the loaded modules named ``prefix...``."""
    return {
        name
        for module_name, module in list(sys.modules.items())
        if module_name.startswith(prefix)
        for name in getattr(module, "__all__", ())
    }


def test_core_exports_the_union_of_its_modules() -> None:
    """`fncore.core` exports exactly what its private modules list in ``__all__``."""
    assert set(fncore.core.__all__) == declared("fncore.core._")


def test_adapter_exports_its_private_modules_and_a_selection_of_the_core() -> None:
    """`fncore.adapter` exports what its private modules list, plus core names it picks."""
    own = declared("fncore.adapter._")
    assert own <= set(fncore.adapter.__all__)
    assert all(getattr(fncore.adapter, n) is getattr(fncore.core, n) for n in ADAPTER - own)


@pytest.mark.parametrize("name", sorted(MOVED))
def test_a_moved_name_still_resolves_from_fncore_with_a_warning(name: str) -> None:
    """The old path gives the same object for one release, and warns naming the new path."""
    home = importlib.import_module(MOVED[name])
    assert name not in fncore.__all__
    with pytest.warns(DeprecationWarning, match=rf"import it from there \(from {MOVED[name]}"):
        old = getattr(fncore, name)
    assert old is getattr(home, name)


def test_a_moved_name_imported_with_from_warns_once_at_the_import() -> None:
    """``from fncore import X`` warns once, naming the importing line, not importlib's."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from fncore import RateLimited
    assert RateLimited is fncore.errors.RateLimited
    assert [w.filename for w in caught] == [__file__]
    assert all(w.category is DeprecationWarning for w in caught)


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    """Only moved names resolve: a typo is an AttributeError, with no warning."""
    with pytest.raises(AttributeError, match="has no attribute 'Agnet'"):
        fncore.Agnet  # noqa: B018


def test_settings_and_stores_declare_their_public_names() -> None:
    """`fncore.settings` and `fncore.stores` have an ``__all__`` whose every name resolves."""
    for module in (fncore.settings, fncore.stores):
        assert module.__all__
        assert all(hasattr(module, name) for name in module.__all__)
    assert {"Settings", "load_settings", "ConfigError"} <= set(fncore.settings.__all__)
    assert {"SharedStore", "open_store", "MemoryStore", "RedisStore"} <= set(fncore.stores.__all__)


def test_objects_show_the_most_public_module_that_exports_them() -> None:
    """Errors show as ``fncore.errors.X``, events as ``fncore.events.X``, the rest ``fncore.X``.

    Renaming depends on no import order: the error types kept at the top level are imported
    there from `fncore.errors`, and stored records keep their names (``fncore:Message``).
    """
    assert repr(fncore.errors.RateLimited) == "<class 'fncore.errors.RateLimited'>"
    assert fncore.AgentError.__module__ == "fncore.errors"
    assert fncore.events.TextDelta.__module__ == "fncore.events"
    assert fncore.Message.__module__ == "fncore"
    assert fncore.Approve.__module__ == "fncore"
    assert fncore.middleware.retry.__module__ == "fncore.middleware.retry"
    for module in (fncore.errors, fncore.events):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                assert "._" not in obj.__module__, f"{module.__name__}.{name}"


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
    assert fncore.adapter.error_for_status.__module__ == "fncore.adapter"


def test_serve_exports_the_app_factory_and_its_settings() -> None:
    assert fncore.serve.__all__ == ["RunsLog", "ServeSettings", "create_app"]
    assert fncore.serve.create_app.__module__ == "fncore.serve"
    assert fncore.serve.RunsLog.__module__ == "fncore.serve"
    assert fncore.serve.ServeSettings.__module__ == "fncore.serve"


def test_version_is_the_installed_distribution_version() -> None:
    """`fncore.__version__` is read from the package metadata, not written by hand."""
    assert fncore.__version__ == importlib.metadata.version("fncore-agents")
