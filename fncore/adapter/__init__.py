"""What a model adapter is written against: import from here, never from ``fncore.core``.

An adapter connects fncore's `Model` protocol to one provider's API. This module holds what
that takes, and nothing else:

- the contract: `Model`, `ModelRequest` (`ModelSettings`, `ToolSpec`, `ToolChoice`,
  `RequireTool`, `OutputSchema`), `ModelResponse` (`FinishReason`, `Usage`), the stream deltas and
  `ModelStreamItem`, `ResponseAssembler`;
- the conversation: `Message` and its parts;
- the error values, `ModelError` and its subclasses, with `error_for_status` and
  `retry_after_seconds` (HTTP answers to error values);
- tool-call ids: `usable_call_id`, `fallback_call_id`;
- the shared body of an adapter: `ProviderModel` (`request` and `stream` written once),
  `StreamDecoder`, `EventStream`, `NotExpressible`, and the `ExceptionMapper` signature
  every adapter's ``map_exception`` has (`SdkExceptionMapper` is one for SDKs built like
  OpenAI's and Anthropic's);
- `Endpoint`, whose helpers build every error value: one line, what to do, no secrets;
- text and secrets: `one_line`, `excerpt`, `describe`, `redact`, `redact_url`,
  `url_secrets`, `ApiKey`, `secret_value`, `resolve_api_key`.

The guide "Write your own model adapter" walks through a complete one.
"""

from fncore.adapter._endpoint import Endpoint
from fncore.adapter._http import error_for_status, retry_after_seconds
from fncore.adapter._model import (
    Client,
    EventStream,
    ExceptionMapper,
    NotExpressible,
    ProviderModel,
    StreamDecoder,
)
from fncore.adapter._sdk_errors import SdkExceptionMapper
from fncore.adapter._secrets import (
    ApiKey,
    redact,
    redact_url,
    resolve_api_key,
    secret_value,
    url_secrets,
)
from fncore.adapter._text import describe, excerpt, one_line
from fncore.core import (
    AuthenticationFailed,
    BadRequest,
    ConnectionFailed,
    DataPart,
    FinishReason,
    Message,
    Model,
    ModelError,
    ModelNotFound,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    ModelStreamItem,
    ModelTimeout,
    OutputSchema,
    Part,
    PermissionDenied,
    ProviderUnavailable,
    RateLimited,
    ReasoningDelta,
    ReasoningPart,
    RequireTool,
    ResponseAssembler,
    Role,
    StreamDelta,
    StreamInterrupted,
    TextDelta,
    TextPart,
    ToolCallArgsDelta,
    ToolCallPart,
    ToolCallStarted,
    ToolChoice,
    ToolResultPart,
    ToolSpec,
    UnexpectedResponse,
    Usage,
    UsageReported,
    fallback_call_id,
    usable_call_id,
)

__all__ = [
    "ApiKey",
    "AuthenticationFailed",
    "BadRequest",
    "Client",
    "ConnectionFailed",
    "DataPart",
    "Endpoint",
    "EventStream",
    "ExceptionMapper",
    "FinishReason",
    "Message",
    "Model",
    "ModelError",
    "ModelNotFound",
    "ModelRequest",
    "ModelResponse",
    "ModelSettings",
    "ModelStreamItem",
    "ModelTimeout",
    "NotExpressible",
    "OutputSchema",
    "Part",
    "PermissionDenied",
    "ProviderModel",
    "ProviderUnavailable",
    "RateLimited",
    "ReasoningDelta",
    "ReasoningPart",
    "RequireTool",
    "ResponseAssembler",
    "Role",
    "SdkExceptionMapper",
    "StreamDecoder",
    "StreamDelta",
    "StreamInterrupted",
    "TextDelta",
    "TextPart",
    "ToolCallArgsDelta",
    "ToolCallPart",
    "ToolCallStarted",
    "ToolChoice",
    "ToolResultPart",
    "ToolSpec",
    "UnexpectedResponse",
    "Usage",
    "UsageReported",
    "describe",
    "error_for_status",
    "excerpt",
    "fallback_call_id",
    "one_line",
    "redact",
    "redact_url",
    "resolve_api_key",
    "retry_after_seconds",
    "secret_value",
    "url_secrets",
    "usable_call_id",
]

# Objects defined in this package show as ``fncore.adapter.X`` (reprs, tracebacks, docs),
# not under the private module that holds them; re-exports of the core keep their module.
for _obj in (
    Client,
    Endpoint,
    EventStream,
    ExceptionMapper,
    NotExpressible,
    ProviderModel,
    SdkExceptionMapper,
    StreamDecoder,
    describe,
    error_for_status,
    excerpt,
    one_line,
    redact,
    redact_url,
    resolve_api_key,
    retry_after_seconds,
    secret_value,
    url_secrets,
):
    _obj.__module__ = __name__
del _obj
