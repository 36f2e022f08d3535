"""Faster construction of frozen, slotted dataclasses, and generated handler glue.

A frozen dataclass's generated ``__init__`` sets each field through ``object.__setattr__``,
since its own ``__setattr__`` raises. Going around it costs a C call per field either way
(through ``object.__setattr__`` or the slot's ``__set__``): about 700 machine instructions
a field, where a plain attribute store on a class without a ``__setattr__`` of its own is
specialised by CPython to about 80. Value objects are built on every step of the agent
loop (a bare run with one tool round builds about ten, a `RunInfo` of 11 fields and two
`ModelRequest` of 9 among them), so `value` builds each instance as one of a private
subclass that has the same slots and the plain ``object.__setattr__``, stores the fields
with plain assignments, then sets the instance's ``__class__`` to the value class. The
instance is the value class's from then on, exactly as immutable (its ``__setattr__``
raises); the subclass never escapes ``__new__``.

This module is the one place for that trick, and it pays (Python 3.11, instructions counted
by callgrind): a `ModelRequest` of 5 arguments takes 3,900 instructions to build against
8,600 with the field-by-field ``__set__`` (and more with the dataclass's own
``__init__``), a `Message` 3,000 against 3,900, and ``base_us`` of
``bench/overhead.py`` drops by about 14%. Instances copy, deep-copy and pickle as before
(through ``__reduce__``: ``__new__`` needs the fields).

`spread` generates code the same way, for a position's handler: the functions that pack a
position's context from its fields and unpack it again for the innermost end, with the
fields spelled out. Against a generic ``*args`` / ``attrgetter`` pair they save about 80 ns
per handler call (a 4-field context: 530 against 613 ns to pack, 70 against 137 ns to
unpack), and a run with one middleware at every position makes about ten such calls:
``mw1_us`` in ``bench/overhead.py`` measured 17.5-17.7 µs before the table of positions,
19.0 µs with the generic pair and 18.0-18.3 µs with these (same session, alternated).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

_T = TypeVar("_T")
_MISSING = dataclasses.MISSING


_REBUILD: dict[type, Callable[[tuple[object, ...]], Any]] = {}
"""How each value class builds an instance from its fields' values, in order."""


def _rebuild(cls: type[_T], values: tuple[object, ...]) -> _T:
    """The instance of value class ``cls`` holding ``values`` (what ``__reduce__`` names)."""
    return _REBUILD[cls](values)  # type: ignore[no-any-return]


def value(cls: type[_T]) -> type[_T]:
    """Build the frozen slotted dataclass ``cls`` faster, with the same signature.

    Its ``__init__`` becomes ``__new__`` (``object.__init__`` is left to accept the
    arguments), and ``__reduce__`` rebuilds an instance from its fields.
    """
    params = dataclasses.fields(cls)  # type: ignore[arg-type]
    builder = type(
        f"_{cls.__name__}Builder",
        (cls,),
        {
            "__slots__": (),
            "__new__": object.__new__,
            "__init__": object.__init__,
            "__setattr__": object.__setattr__,
            "__delattr__": object.__delattr__,
            "__module__": cls.__module__,
        },
    )
    namespace: dict[str, Any] = {"_MISSING": _MISSING, "_builder": builder, "_cls": cls}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    for f in params:
        if f.default is not _MISSING:
            namespace[f"_default_{f.name}"] = f.default
        elif f.default_factory is not _MISSING:
            namespace[f"_factory_{f.name}"] = f.default_factory
        if not f.init:  # not a parameter: set to its default
            made = f"_default_{f.name}" if f.default is not _MISSING else f"_factory_{f.name}()"
            body.append(f"    self.{f.name} = {made}")
            continue
        if f.default is not _MISSING:
            text = f"{f.name}=_default_{f.name}"
        elif f.default_factory is not _MISSING:
            text = f"{f.name}=_MISSING"
            body.append(f"    if {f.name} is _MISSING: {f.name} = _factory_{f.name}()")
        else:
            text = f.name
        (keyword if f.kw_only else positional).append(text)
        body.append(f"    self.{f.name} = {f.name}")
    names = [f.name for f in params]
    post_init = "    self.__post_init__()\n" if hasattr(cls, "__post_init__") else ""
    signature = ", ".join(["cls", *positional, *(["*", *keyword] if keyword else [])])
    stores = "".join(f"    self.{name} = values[{i}]\n" for i, name in enumerate(names))
    fields = "".join(f"self.{name}, " for name in names)
    source = (
        f"def __new__({signature}):\n"
        "    self = _builder()\n" + "\n".join(body) + "\n"
        "    self.__class__ = cls\n" + post_init + "    return self\n"
        "def _rebuild_fields(values):\n"
        "    self = _builder()\n" + stores + "    self.__class__ = _cls\n    return self\n"
        f"def __reduce__(self):\n    return _rebuild_value, (_cls, ({fields}))\n"
    )
    namespace["_rebuild_value"] = _rebuild
    exec(source, namespace)
    _REBUILD[cls] = namespace["_rebuild_fields"]
    new = namespace["__new__"]
    new.__qualname__ = f"{cls.__qualname__}.__new__"
    new.__doc__ = cls.__init__.__doc__
    reduce = namespace["__reduce__"]
    reduce.__qualname__ = f"{cls.__qualname__}.__reduce__"
    # mypy forbids assigning a method, hence setattr
    setattr(cls, "__new__", staticmethod(new))  # noqa: B010
    setattr(cls, "__init__", object.__init__)  # noqa: B010
    setattr(cls, "__reduce__", reduce)  # noqa: B010
    return cls


_Call = Callable[..., Awaitable[Any]]


def spread(context: type) -> tuple[Callable[[_Call], _Call], Callable[[_Call], _Call]]:
    """Two factories for the dataclass ``context``: of an unpacking and of a packing call.

    The first takes an ``end`` called with the context's fields, in order, and returns the
    function of a context that calls it; the second takes an ``onion`` called with a context
    and returns the function of the fields, in order, that builds the context and calls it.
    """
    names = [f.name for f in dataclasses.fields(context)]
    params = ", ".join(names)
    fields = ", ".join(f"ctx.{name}" for name in names)
    source = (
        f"def unpacking(end):\n    def innermost(ctx):\n        return end({fields})\n"
        "    return innermost\n"
        f"def packing(onion):\n    def enter({params}):\n"
        f"        return onion(_context({params}))\n    return enter\n"
    )
    namespace: dict[str, Any] = {"_context": context}
    exec(source, namespace)
    return namespace["unpacking"], namespace["packing"]
