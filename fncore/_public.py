"""Present public names as members of the module users import them from."""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping


def publish(module: str, namespace: Mapping[str, object], names: Iterable[str]) -> None:
    """Give each class and function in ``names`` the ``__module__`` ``module``.

    Only objects defined in a private module of fncore (``fncore.core._messages``) are
    renamed, so reprs and the reference show ``fncore.Message``, the name users import.
    """
    for name in names:
        obj = namespace[name]
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        home = getattr(obj, "__module__", "") or ""
        if home.startswith("fncore") and "._" in home:
            obj.__module__ = module
            if inspect.isclass(obj):
                _methods_follow(obj, home, module)


def _methods_follow(cls: type, home: str, module: str) -> None:
    """Move the class's own functions along (doctest looks for examples by module)."""
    for member in vars(cls).values():
        function = getattr(member, "__func__", None) or getattr(member, "fget", None) or member
        if inspect.isfunction(function) and function.__module__ == home:
            function.__module__ = module
