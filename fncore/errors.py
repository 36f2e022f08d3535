"""Every error type of fncore: the values a run ends with, and the exceptions it raises.

Inside a run, errors are values carried in ``Failure(...)``: a run never raises for an
expected outcome. Each says what failed, where, and what to do about it:

    AgentError                      base: message, position, middleware
    ├── MiddlewareError             a middleware, tool source or transformer raised or misbehaved
    ├── ModelError                  the model call failed (retryable, provider, status)
    │   ├── AuthenticationFailed    401: the API key is missing, wrong or revoked
    │   ├── PermissionDenied        403: the key may not use this model or feature
    │   ├── BadRequest              every 4xx not listed here: the provider rejected the
    │   │                           request itself
    │   ├── ModelNotFound           404: no such model (or endpoint: check the base URL)
    │   ├── RateLimited             429: too many requests; carries retry_after
    │   ├── ProviderUnavailable     408, 5xx, 529: overloaded or failing; worth retrying
    │   ├── ModelTimeout            no answer in time
    │   ├── ConnectionFailed        the server could not be reached
    │   ├── StreamInterrupted       the answer was cut off, or a stream could not be decoded
    │   └── UnexpectedResponse      a 2xx answer whose body is not the API's (an HTML page,
    │                               {}, an error object): check the base URL
    ├── LoopError                   the agent loop stopped; carries the transcript so far
    │   ├── MaxIterationsReached    every allowed round ended in tool calls
    │   ├── TooManyToolErrors       too many rounds in a row had a failing tool call
    │   ├── UnknownToolCalled       the model called a tool that does not exist
    │   │                           (only with terminate_on_unknown_calls=True)
    │   ├── OutputValidationFailed  the answer did not fit output_type, retries included
    │   └── OutputMissing           the run stopped without an answer to give as output_type
    ├── InvalidPrompt               the prompt is not text, a message or a sequence of messages
    ├── InvalidHistory              the messages break the tool-call/result pairing
    ├── SessionError                the session store failed; the session is unchanged
    │   └── SessionConflict         another run committed to the session first
    ├── CheckpointError             a paused run cannot be resumed; the checkpoint is unchanged
    │   ├── CheckpointNotFound      no such checkpoint in the agent's store
    │   ├── CheckpointExpired       it is past checkpoint_ttl
    │   ├── CheckpointBusy          another resume holds it right now
    │   ├── CheckpointMismatch      the agent is not built like the one that paused
    │   └── DecisionError           the decisions do not fit the pending requests
    │       ├── UnknownRequest      a decision for a call that does not wait
    │       ├── DecisionMissing     a waiting call has no decision
    │       ├── DecisionNotAllowed  a decision the request does not allow (or bad edits)
    │       └── DecisionConflict    it was already resumed with other decisions
    ├── ScopeRequired               a limit counted per session or per tenant, and the run
    │                               has no session (or no tenant): nothing ran
    ├── SubagentError               a sub-agent (Agent.as_tool) could not be called
    │   ├── SubagentCycle           it is already running further up the chain (A → B → A)
    │   └── SubagentDepthExceeded   the chain of agents calling agents is too deep
    ├── ToolsUnavailable            the agent's tools could not be gathered (an MCP server
    │                               that cannot start, a name clash): nothing ran
    └── LimitExceeded               a configured limit stopped the run (built-in middleware)
        ├── CallLimitExceeded       too many model or tool calls (limit_calls)
        ├── BudgetExceeded          the token or cost budget is spent (budget)
        ├── RateLimitExceeded       no capacity within the longest wait (rate_limit)
        └── DeadlineExceeded        the reply's deadline passed (timeout)

Mistakes found before anything runs are exceptions, to fix in code or configuration:

    RegistrationError               a stack cannot be built: bad signature, unknown position,
    │                               duplicate name, ordering cycle
    └── MCPServerError              an MCP server cannot be started, reached or listed
    ConfigError                     the configuration is invalid: names the key and its source

A session store raises these when it cannot do its job (a run turns each into a
`SessionError` value; nothing stored is changed):

    SessionStoreError               the message says what is wrong and what to do
    ├── SessionStoreUnavailable     cannot open or reach it: a path, a permission, a server,
    │                               a login
    ├── NotASessionStore            not fncore's: not a SQLite file, or another application's
    ├── SessionStoreCorrupt         holds data fncore cannot read back (or a record naming a
    │                               class that is not registered): restore it from a backup
    ├── SessionSchemaTooNew         a newer fncore wrote it: upgrade fncore
    └── NotSerializable             a session-state value cannot be stored: the commit wrote
                                    nothing

`fncore` itself exports `AgentError`, the first level of its tree (which part failed), and
`RegistrationError` and `ConfigError`: what an application matches most. The deeper kinds
(which status, which limit, why a checkpoint cannot be resumed) and the exceptions of session
stores and MCP servers are imported from here.
"""

from fncore import _public
from fncore.core import AgentError as AgentError
from fncore.core import AuthenticationFailed as AuthenticationFailed
from fncore.core import BadRequest as BadRequest
from fncore.core import BudgetExceeded as BudgetExceeded
from fncore.core import CallLimitExceeded as CallLimitExceeded
from fncore.core import CheckpointBusy as CheckpointBusy
from fncore.core import CheckpointError as CheckpointError
from fncore.core import CheckpointExpired as CheckpointExpired
from fncore.core import CheckpointMismatch as CheckpointMismatch
from fncore.core import CheckpointNotFound as CheckpointNotFound
from fncore.core import ConnectionFailed as ConnectionFailed
from fncore.core import DeadlineExceeded as DeadlineExceeded
from fncore.core import DecisionConflict as DecisionConflict
from fncore.core import DecisionError as DecisionError
from fncore.core import DecisionMissing as DecisionMissing
from fncore.core import DecisionNotAllowed as DecisionNotAllowed
from fncore.core import InvalidHistory as InvalidHistory
from fncore.core import InvalidPrompt as InvalidPrompt
from fncore.core import LimitExceeded as LimitExceeded
from fncore.core import LoopError as LoopError
from fncore.core import MaxIterationsReached as MaxIterationsReached
from fncore.core import MiddlewareError as MiddlewareError
from fncore.core import ModelError as ModelError
from fncore.core import ModelNotFound as ModelNotFound
from fncore.core import ModelTimeout as ModelTimeout
from fncore.core import OutputMissing as OutputMissing
from fncore.core import OutputValidationFailed as OutputValidationFailed
from fncore.core import PermissionDenied as PermissionDenied
from fncore.core import ProviderUnavailable as ProviderUnavailable
from fncore.core import RateLimited as RateLimited
from fncore.core import RateLimitExceeded as RateLimitExceeded
from fncore.core import RegistrationError as RegistrationError
from fncore.core import ScopeRequired as ScopeRequired
from fncore.core import SessionConflict as SessionConflict
from fncore.core import SessionError as SessionError
from fncore.core import StreamInterrupted as StreamInterrupted
from fncore.core import SubagentCycle as SubagentCycle
from fncore.core import SubagentDepthExceeded as SubagentDepthExceeded
from fncore.core import SubagentError as SubagentError
from fncore.core import ToolsUnavailable as ToolsUnavailable
from fncore.core import TooManyToolErrors as TooManyToolErrors
from fncore.core import UnexpectedResponse as UnexpectedResponse
from fncore.core import UnknownRequest as UnknownRequest
from fncore.core import UnknownToolCalled as UnknownToolCalled
from fncore.runtime import MCPServerError as MCPServerError
from fncore.session_stores import NotASessionStore as NotASessionStore
from fncore.session_stores import NotSerializable as NotSerializable
from fncore.session_stores import SessionSchemaTooNew as SessionSchemaTooNew
from fncore.session_stores import SessionStoreCorrupt as SessionStoreCorrupt
from fncore.session_stores import SessionStoreError as SessionStoreError
from fncore.session_stores import SessionStoreUnavailable as SessionStoreUnavailable
from fncore.settings import ConfigError as ConfigError

_public.export(__name__)
