"""The built-ins' arguments: validated against their annotations, from code and configuration.

Every built-in's factory is `checked`; configuration validates a factory of your own the same
way (``[[middleware]]`` entries), once. `Seconds` and `SomeSeconds` are the annotations the
built-ins' times take.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import ConfigDict, validate_call

from fncore.core._checks import Seconds as Seconds  # the one definition, for the built-ins
from fncore.core._checks import SomeSeconds as SomeSeconds

_F = TypeVar("_F", bound=Callable[..., Any])


def checked(factory: _F) -> _F:
    """``factory`` with its arguments validated against its annotations on every call.

    A factory that is already `checked` is returned as it is, so its arguments are never
    validated twice.
    """
    if is_checked(factory):
        return factory
    return validate_call(config=ConfigDict(arbitrary_types_allowed=True))(factory)


def is_checked(factory: Callable[..., object]) -> bool:
    """Whether ``factory`` validates its own arguments (it is `checked`, or `validate_call`'s).

    ``raw_function`` is the attribute `pydantic.validate_call` gives the function it returns.
    """
    return callable(getattr(factory, "raw_function", None))
