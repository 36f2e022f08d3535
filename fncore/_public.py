"""How fncore's public modules are assembled: ``__all__``, ``__module__`` and moved names.

A public module (``fncore``, ``fncore.errors``, ``fncore.core``, ``fncore.adapter``, ...)
only imports names: ``from fncore.core._messages import *`` takes what that private module
lists in its own ``__all__``, and ``from fncore.core import Message as Message`` takes one
name (the redundant alias tells type checkers it is re-exported). `export` then derives the
module's ``__all__`` from what it imported, so no list of names is written twice.
"""

from __future__ import annotations

import importlib
import inspect
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping


def export(module: str, *, rename: str | None = "fncore", extra: Iterable[str] = ()) -> None:
    """Set ``module.__all__`` to the names it imported, sorted, and show them under ``module``.

    Args:
        module: The public module, ``__name__`` of the ``__init__`` calling this.
        rename: The package whose private modules' objects take ``module`` as their
            ``__module__``: by default every private module of fncore's; with
            ``"fncore.adapter"`` only ``fncore.adapter._x``'s; ``None`` renames nothing.
        extra: Names starting with ``_`` to export too (``__version__``).
    """
    namespace = vars(sys.modules[module])
    names = sorted(
        [
            name
            for name, obj in namespace.items()
            if not name.startswith("_") and not inspect.ismodule(obj)
        ]
        + list(extra)
    )
    namespace["__all__"] = names
    if rename is not None:
        publish(module, namespace, names, within=rename)


def publish(
    module: str, namespace: Mapping[str, object], names: Iterable[str], within: str = "fncore"
) -> None:
    """Give each class and function in ``names`` the ``__module__`` ``module``.

    Only objects defined in a private module under ``within`` (``fncore.core._messages``)
    are renamed, so reprs and the reference show ``fncore.Message``, the name users import.
    An object keeps the first public name it is given: ``fncore.errors`` renames the error
    types before ``fncore`` re-exports a few of them.
    """
    for name in names:
        obj = namespace[name]
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        home = getattr(obj, "__module__", "") or ""
        if home.startswith(within) and "._" in home:
            obj.__module__ = module
            if inspect.isclass(obj):
                _methods_follow(obj, home, module)


def _methods_follow(cls: type, home: str, module: str) -> None:
    """Move the class's own functions along (doctest looks for examples by module)."""
    for member in vars(cls).values():
        function = getattr(member, "__func__", None) or getattr(member, "fget", None) or member
        if inspect.isfunction(function) and function.__module__ == home:
            function.__module__ = module


def moved_to(module: str, *homes: str) -> Callable[[str], object]:
    """A module ``__getattr__`` that still serves the names that moved to ``homes``.

    Each use warns with a `DeprecationWarning` naming the new import path, and returns the
    very object the new path gives. A name none of ``homes`` exports is an `AttributeError`,
    as for any module.

    Args:
        module: The module the names moved from (its ``__name__``).
        homes: The public modules they moved to, by name, looked in in this order.
    """

    def __getattr__(name: str) -> object:
        for home in homes:
            target = importlib.import_module(home)
            if name in getattr(target, "__all__", ()):
                # ``from fncore import X`` looks X up twice: first from importlib (whose
                # warning would name no line of the user's), then from the importing line.
                if not sys._getframe(1).f_code.co_filename.startswith("<frozen importlib"):
                    msg = (
                        f"{module}.{name} moved to {home}.{name}: import it from there "
                        f"(from {home} import {name}); the old path goes in the next release"
                    )
                    warnings.warn(msg, DeprecationWarning, stacklevel=2)
                return getattr(target, name)
        msg = f"module {module!r} has no attribute {name!r}"
        raise AttributeError(msg)

    return __getattr__
