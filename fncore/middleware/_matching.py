"""What `retry`, `retry_tools` and `fallback` share: which outcomes they act on (``on=``).

In configuration, ``on = [...]`` names the errors a built-in acts on: error types by their
class name (``"RateLimited"``; a name covers its subclasses, so ``"ModelError"`` covers
every model error) and one keyword per built-in (``"retryable"``: a `ModelError` whose
``retryable`` is set; ``"error_result"``: a tool's error result). In code, ``on=`` may also
be a function of the error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from fncore.core import AgentError, ModelError

_S = TypeVar("_S")


def _error_types(root: type[AgentError]) -> dict[str, type[AgentError]]:
    found = {root.__name__: root}
    for sub in root.__subclasses__():
        found.update(_error_types(sub))
    return found


def error_types() -> dict[str, type[AgentError]]:
    """Every error type known now, by class name (the core's and any defined since)."""
    return _error_types(AgentError)


def retryable(error: object) -> bool:
    """Whether ``error`` is a `ModelError` that says the same request may succeed again."""
    return isinstance(error, ModelError) and error.retryable


def named(
    names: Sequence[str], keyword: str, keyword_test: Callable[[_S], bool]
) -> Callable[[_S], bool]:
    """A test of what ``names`` lists: ``keyword`` (tested by ``keyword_test``) or error types.

    Raises:
        ValueError: for a name that is neither ``keyword`` nor an error type.
    """
    known = error_types()
    kinds: list[type[AgentError]] = []
    with_keyword = False
    for name in names:
        if name == keyword:
            with_keyword = True
        elif name in known:
            kinds.append(known[name])
        else:
            msg = (
                f"on: {name!r} is not an error type; name {keyword!r} or error types such "
                f"as {', '.join(sorted(known))}"
            )
            raise ValueError(msg)
    types = tuple(kinds)

    def test(subject: _S) -> bool:
        return (with_keyword and keyword_test(subject)) or isinstance(subject, types)

    return test


def when(
    on: Sequence[str] | Callable[[_S], bool] | None,
    default: Sequence[str],
    keyword: str,
    keyword_test: Callable[[_S], bool],
) -> Callable[[_S], bool]:
    """The test ``on`` stands for: a function as it is, names by `named`, ``None``: ``default``.

    Raises:
        ValueError: for a name that is neither ``keyword`` nor an error type.
    """
    if callable(on):
        return on
    return named(default if on is None else on, keyword, keyword_test)
