"""`Endpoint`: where an adapter sends requests, and the error values for what goes wrong there."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import final

from fncore.adapter._http import error_for_status, retry_after_seconds
from fncore.adapter._secrets import redact, redact_url, url_secrets
from fncore.adapter._text import MAX_DETAIL, as_text, describe, excerpt, one_line
from fncore.core import (
    BadRequest,
    ConnectionFailed,
    ModelError,
    ModelTimeout,
    StreamInterrupted,
    UnexpectedResponse,
)

__all__ = ["Endpoint"]

DECODING_ERRORS = (ValueError, TypeError, AttributeError, KeyError)
"""What decoding raises on data that is not what the API sends."""

_HINTS: dict[int, str] = {
    400: "fix the request (the message names the field)",
    402: "check the account's billing",
    403: "check the key's project or workspace and its access to this model",
    409: "retry the request",
    413: "send fewer or smaller messages",
    422: "fix the request (the message names the field)",
    429: "wait and retry, or lower the request rate",
}
"""What to do about an HTTP error status; `error_for_status` itself says it for 401 and 404."""


def _hint(status: int, provider: str) -> str:
    if status in _HINTS:
        return _HINTS[status]
    if status == 529:
        return f"{provider} is overloaded: retry later"
    if status == 408 or status >= 500:
        return f"{provider} failed to answer: retry later"
    return ""


@final
@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where an adapter sends requests, and the error values for what goes wrong there.

    Every error it builds carries ``provider``, has a one-line message that says what to do,
    shows the URL with its credentials redacted, and has every secret (the API key, the
    URL's credentials) replaced by ``[redacted]``. Build one per model with `create`; its
    ``repr`` shows no secret.

    Example:
        >>> ep = Endpoint.create("acme", "https://u:pw-1@api.acme.test/v1", secrets=["sk-1234"])
        >>> ep.url
        'https://[redacted]@api.acme.test/v1'
        >>> ep.interrupted("the connection broke after sk-1234").message
        'the acme answer was cut off: the connection broke after [redacted]; retry the request'
        >>> "sk-1234" in repr(ep)
        False
    """

    provider: str
    """The provider's name, carried by every error (``openai``, ``anthropic``, ...)."""
    url: str
    """The base URL, credentials redacted: the only form of it ever shown."""
    timeout: float | None = None
    """The client's timeout in seconds, named in timeout errors."""
    secrets: tuple[str, ...] = field(default=(), repr=False)
    """Text never to show: the API key, the credentials of the URL."""

    @classmethod
    def create(
        cls,
        provider: str,
        base_url: str,
        *,
        secrets: Iterable[str | None] = (),
        timeout: object = None,
    ) -> Endpoint:
        """The endpoint of a client that sends to ``base_url``.

        Args:
            provider: The provider's name for error values.
            base_url: The client's base URL, as configured (credentials included).
            secrets: The API key and any other credential the client holds (``None``s are
                skipped); the URL's own credentials are added.
            timeout: The client's timeout; anything but a number (an SDK timeout object)
                leaves the timeout out of messages.
        """
        keys = tuple(s for s in secrets if s)
        seconds = float(timeout) if isinstance(timeout, int | float) else None
        return cls(provider, redact_url(base_url), seconds, keys + url_secrets(base_url))

    def redact(self, text: str, limit: int | None = None) -> str:
        """``text`` with every secret replaced by ``[redacted]``, then put on one line.

        Args:
            text: Any text bound for a message.
            limit: Shorten the result to this many characters (after redacting, so no
                part of a secret is kept).
        """
        return one_line(redact(text, *self.secrets), limit)

    def detail(self, text: str) -> str:
        """A provider's own message, fit to quote: redacted, one line, 300 characters at most."""
        return self.redact(text, MAX_DETAIL)

    def redacted(self, error: ModelError) -> ModelError:
        """``error`` with its message on one line and free of secrets (itself if it was)."""
        message = self.redact(error.message)
        return error if message == error.message else replace(error, message=message)

    def status_error(
        self, status: int, detail: str, headers: Mapping[str, str] | None = None
    ) -> ModelError:
        """The error for an HTTP error ``status`` (`error_for_status`), saying what to do.

        Args:
            status: The HTTP status.
            detail: The provider's own message (shortened to one line here).
            headers: The answer's headers: ``retry-after`` (seconds or an HTTP date) and
                ``retry-after-ms`` give a `RateLimited` its ``retry_after``.
        """
        retry_after = None
        if headers is not None:
            retry_after = retry_after_seconds(
                headers.get("retry-after"), headers.get("retry-after-ms"), now=datetime.now(UTC)
            )
        text = self.detail(detail)
        hint = _hint(status, self.provider)
        if hint:
            text = f"{text}; {hint}"
        return error_for_status(status, text, provider=self.provider, retry_after=retry_after)

    def bad_request(self, reason: str) -> BadRequest:
        """A `BadRequest` for a request the adapter cannot express, returned unsent."""
        message = self.redact(f"cannot send this request to {self.provider}: {reason}")
        return BadRequest(message=message, provider=self.provider)

    def timed_out(self) -> ModelTimeout:
        """A `ModelTimeout`: no answer within the client's timeout."""
        within = f" within {self.timeout:g}s" if self.timeout else ""
        return ModelTimeout(
            message=self.redact(
                f"{self.provider} did not answer{within} at {self.url}; "
                "raise model.timeout or retry"
            ),
            provider=self.provider,
        )

    def unreachable(self, cause: BaseException) -> ConnectionFailed:
        """A `ConnectionFailed`: no connection to the server (refused, DNS, TLS, proxy)."""
        return ConnectionFailed(
            message=self.redact(
                f"could not reach {self.provider} at {self.url} ({describe(cause)}); "
                "check model.base_url, the network and any proxy"
            ),
            provider=self.provider,
        )

    def interrupted(self, reason: str) -> StreamInterrupted:
        """A `StreamInterrupted`: the answer, streamed or not, was cut off (``reason`` says how)."""
        return StreamInterrupted(
            message=self.redact(
                f"the {self.provider} answer was cut off: {reason}; retry the request"
            ),
            provider=self.provider,
        )

    def connection_lost(self, exc: BaseException, *, answering: bool) -> ModelError:
        """The error for a broken connection: `interrupted` once the server was answering.

        Args:
            exc: What the SDK raised; the HTTP client's error it wraps (its ``__cause__``)
                is the one described.
            answering: Whether the server had taken the request (it had started an answer,
                or closed the connection before its end); otherwise it was never reached.
        """
        cause = exc.__cause__ if isinstance(exc.__cause__, Exception) else exc
        if answering:
            return self.interrupted(f"the connection closed mid-answer ({describe(cause)})")
        return self.unreachable(cause)

    def unexpected(
        self, status: int, body: bytes | str, reason: BaseException | str
    ) -> UnexpectedResponse:
        """An `UnexpectedResponse`: a 2xx answer whose body is not the API's.

        Args:
            status: The HTTP status of the answer.
            body: The body, of which the start is quoted.
            reason: Why it was rejected: the decoding error, or a sentence.
        """
        why = describe(reason) if isinstance(reason, BaseException) else reason
        quoted = excerpt(self.redact(as_text(body)))
        return UnexpectedResponse(
            message=self.redact(
                f"{self.provider} answered {status} with a body that is not its API's answer "
                f"({self.detail(why)}): {quoted}; check that model.base_url points at the "
                f"{self.provider} API and not at a proxy or login page"
            ),
            provider=self.provider,
            status=status,
        )

    def failed(self, exc: BaseException, *, in_stream: bool = False) -> ModelError:
        """The error for anything else an adapter caught.

        In a stream, data that could not be decoded (`DECODING_ERRORS`) means the stream
        broke: `interrupted`. Anything else is a plain `ModelError` quoting the exception.
        """
        if in_stream and isinstance(exc, DECODING_ERRORS):
            return self.interrupted(f"an event could not be decoded ({describe(exc)})")
        return ModelError(
            message=self.redact(
                f"{self.provider} call failed: {describe(exc)}; retry, or report it if it persists"
            ),
            provider=self.provider,
        )
