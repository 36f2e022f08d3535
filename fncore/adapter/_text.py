"""Text for error messages: one line, a short excerpt of a body, an exception in a few words."""

from __future__ import annotations

__all__ = ["describe", "excerpt", "one_line"]

MAX_DETAIL = 300
"""The longest provider detail (an error message) an error value quotes, in characters."""

MAX_EXCERPT = 160
"""The longest excerpt of an unexpected body an error value quotes, in characters."""


def one_line(text: str, limit: int | None = MAX_DETAIL) -> str:
    r"""``text`` on one line, whitespace collapsed, shortened to ``limit`` characters.

    Shorten only text already free of secrets: a cut could keep part of one.

    Example:
        >>> one_line("a\n  b "), one_line("abcdef", limit=4)
        ('a b', 'abc…')
    """
    flat = " ".join(text.split())
    return flat if limit is None or len(flat) <= limit else flat[: limit - 1] + "…"


def as_text(body: bytes | str) -> str:
    r"""An HTTP body as text: bytes decoded as UTF-8, undecodable bytes replaced.

    Example:
        >>> as_text(b"caf\xc3\xa9 \xff")
        'café �'
    """
    return body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body


def excerpt(body: bytes | str, limit: int = MAX_EXCERPT) -> str:
    r"""The start of an HTTP body, quoted on one line, for an error message.

    Remove secrets before (`Endpoint.unexpected` does): a cut could keep part of one.

    Example:
        >>> excerpt(b"<html>\n  <title>Sign in</title>"), excerpt(b"")
        ("'<html> <title>Sign in</title>'", 'an empty body')
    """
    flat = one_line(as_text(body), limit)
    return repr(flat) if flat else "an empty body"


def describe(exc: BaseException) -> str:
    """An exception as ``Type: message`` (``Type`` alone when it has no message).

    Example:
        >>> describe(ValueError("no choices")), describe(TimeoutError())
        ('ValueError: no choices', 'TimeoutError')
    """
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
