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

from fncore import _public
from fncore.adapter._endpoint import *
from fncore.adapter._http import *
from fncore.adapter._model import *
from fncore.adapter._sdk_errors import *
from fncore.adapter._secrets import *
from fncore.adapter._text import *
from fncore.core import AuthenticationFailed as AuthenticationFailed
from fncore.core import BadRequest as BadRequest
from fncore.core import ConnectionFailed as ConnectionFailed
from fncore.core import DataPart as DataPart
from fncore.core import FinishReason as FinishReason
from fncore.core import Message as Message
from fncore.core import Model as Model
from fncore.core import ModelError as ModelError
from fncore.core import ModelNotFound as ModelNotFound
from fncore.core import ModelRequest as ModelRequest
from fncore.core import ModelResponse as ModelResponse
from fncore.core import ModelSettings as ModelSettings
from fncore.core import ModelStreamItem as ModelStreamItem
from fncore.core import ModelTimeout as ModelTimeout
from fncore.core import OutputSchema as OutputSchema
from fncore.core import Part as Part
from fncore.core import PermissionDenied as PermissionDenied
from fncore.core import ProviderUnavailable as ProviderUnavailable
from fncore.core import RateLimited as RateLimited
from fncore.core import ReasoningDelta as ReasoningDelta
from fncore.core import ReasoningPart as ReasoningPart
from fncore.core import RequireTool as RequireTool
from fncore.core import ResponseAssembler as ResponseAssembler
from fncore.core import Role as Role
from fncore.core import StreamDelta as StreamDelta
from fncore.core import StreamInterrupted as StreamInterrupted
from fncore.core import TextDelta as TextDelta
from fncore.core import TextPart as TextPart
from fncore.core import ToolCallArgsDelta as ToolCallArgsDelta
from fncore.core import ToolCallPart as ToolCallPart
from fncore.core import ToolCallStarted as ToolCallStarted
from fncore.core import ToolChoice as ToolChoice
from fncore.core import ToolResultPart as ToolResultPart
from fncore.core import ToolSpec as ToolSpec
from fncore.core import UnexpectedResponse as UnexpectedResponse
from fncore.core import Usage as Usage
from fncore.core import UsageReported as UsageReported
from fncore.core import fallback_call_id as fallback_call_id
from fncore.core import usable_call_id as usable_call_id

# Objects defined in this package show as ``fncore.adapter.X`` (reprs, tracebacks, docs),
# not under the private module that holds them; re-exports of the core keep their module.
_public.export(__name__, rename=__name__)
