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
by callgrind, so not subject to a shared machine's noise): a `ModelRequest` of 5 arguments
takes 4,200 instructions to build against 8,900 with the field-by-field ``__set__``, a
`RunInfo` 5,300 against 11,000, a `Message` 3,200 against 3,900; a bare run of
``bench/overhead.py`` 129,000 against 147,000. Instances copy, deep-copy and pickle as
before (``cls.__new__(cls)`` alone still gives a bare instance). `success` builds returns'
``Success`` the same way.

`maker` gives the same constructor with the class bound, for the hot sites of the agent
loop: calling it skips ``type.__call__`` (the lookup of ``__new__``, a new argument tuple
with the class in front, ``object.__init__``), a ``ModelRequest`` 2,700 instructions
against 3,650.

`spread` generates code the same way, for a position's handler: the functions that pack a
position's context from its fields (with the context's `maker` function) and unpack it again
for the innermost end, with the fields spelled out. Against a generic ``*args`` /
``attrgetter`` pair they save about 80 ns per handler call (a 4-field context: 530 against
613 ns to pack, 70 against 137 ns to unpack), and a run with one middleware at every
position makes about ten such calls: ``mw1_us`` in ``bench/overhead.py`` measured 17.5-17.7
µs before the table of positions, 19.0 µs with the generic pair and 18.0-18.3 µs with these
(same session, alternated).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from returns.result import Success

_T = TypeVar("_T")
_MISSING = dataclasses.MISSING


def _builder_of(cls: type) -> type:
    """A private subclass of ``cls`` with its slots, built and filled as a plain class is."""
    return type(
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


def _incomplete(cls: type, given: dict[str, object], defaults: dict[str, object]) -> Any:
    """The error of building ``cls`` from ``given`` (its arguments) with a required one missing.

    ``defaults`` holds the optional arguments' defaults.

    Raises:
        TypeError: always, naming the missing arguments.
    """
    missing = ", ".join(repr(n) for n, v in given.items() if v is _MISSING and n not in defaults)
    msg = f"{cls.__qualname__}() missing required argument(s): {missing}"
    raise TypeError(msg)


_MAKERS: dict[type, Callable[..., Any]] = {}
"""Each value class's constructor function, for `maker`."""

_RESTORERS: dict[type, tuple[type, tuple[str, ...]]] = {}
"""Each value class's builder subclass and field names, for `_restore`."""


def _restore(cls: type, values: tuple[object, ...]) -> Any:
    """An instance of the value class ``cls`` with its fields set to ``values``, in order.

    What ``copy``, ``deepcopy`` and ``pickle`` rebuild an instance with (through the
    ``__reduce__`` that `value` gives the class): the fields as they were, without
    defaults or ``__post_init__``, as the dataclass's own state restoring does.
    """
    builder, names = _RESTORERS[cls]
    out = builder()
    for name, field_value in zip(names, values, strict=True):
        setattr(out, name, field_value)
    out.__class__ = cls
    return out


def _reducer(names: tuple[str, ...]) -> Callable[[Any], tuple[object, ...]]:
    """A ``__reduce__`` that rebuilds an instance through `_restore` from fields ``names``."""

    def __reduce__(self: Any) -> tuple[object, ...]:
        return (_restore, (type(self), tuple(getattr(self, n) for n in names)))

    return __reduce__


def value(cls: type[_T]) -> type[_T]:
    """Build the frozen slotted dataclass ``cls`` faster, with the same signature.

    The dataclass's ``__init__`` becomes a ``__new__`` (``object.__init__`` is left to
    accept the arguments), and ``inspect.signature(cls)`` is the ``__init__``'s. Instances
    copy and pickle through a ``__reduce__`` of their fields, so ``cls.__new__`` needs no
    bare form: a missing argument is a ``TypeError`` as with the dataclass.
    """
    params = dataclasses.fields(cls)  # type: ignore[arg-type]
    builder = _builder_of(cls)
    namespace: dict[str, Any] = {
        "_MISSING": _MISSING,
        "_builder": builder,
        "_incomplete": _incomplete,
    }
    positional: list[str] = []
    keyword: list[str] = []
    names: list[str] = []
    required: list[str] = []
    optional: dict[str, object] = {}
    defaults: list[str] = []
    stores: list[str] = []
    for f in params:
        if f.default is not _MISSING:
            namespace[f"_default_{f.name}"] = f.default
            made = f"_default_{f.name}"
        elif f.default_factory is not _MISSING:
            namespace[f"_factory_{f.name}"] = f.default_factory
            made = f"_factory_{f.name}()"
        else:
            made = ""
        if not f.init:  # not a parameter: set to its default
            stores.append(f"    self.{f.name} = {made}")
            continue
        names.append(f.name)
        if f.default is not _MISSING:
            parameter = f"{f.name}=_default_{f.name}"
            optional[f.name] = f.default
        elif f.default_factory is not _MISSING:
            parameter = f"{f.name}=_MISSING"
            optional[f.name] = _MISSING
            defaults.append(f"    if {f.name} is _MISSING: {f.name} = {made}")
        else:
            parameter = f"{f.name}=_MISSING"
            required.append(f.name)
        (keyword if f.kw_only else positional).append(parameter)
        stores.append(f"    self.{f.name} = {f.name}")
    namespace["_optional"] = optional
    signature = ", ".join(["cls", *positional, *(["*", *keyword] if keyword else [])])
    lines = [f"def __new__({signature}):"]
    if required:
        test = " or ".join(f"{n} is _MISSING" for n in required)
        given = ", ".join(f"{n!r}: {n}" for n in names)
        lines.append(f"    if {test}: return _incomplete(cls, {{{given}}}, _optional)")
    lines += [*defaults, "    self = _builder()", *stores, "    self.__class__ = cls"]
    if hasattr(cls, "__post_init__"):
        lines.append("    self.__post_init__()")
    lines.append("    return self")
    source = "\n".join(lines) + "\n"
    # The same function with ``cls`` bound, for `maker`: called without type.__call__.
    make = source.replace(f"def __new__({signature}):", f"def make({signature[5:]}):", 1)
    namespace["cls"] = cls
    exec(source + make, namespace)
    new = namespace["__new__"]
    namespace["make"].__qualname__ = f"{cls.__qualname__}.make"
    _MAKERS[cls] = namespace["make"]
    new.__qualname__ = f"{cls.__qualname__}.__new__"
    new.__doc__ = cls.__init__.__doc__
    init = inspect.signature(cls.__init__)
    # mypy forbids assigning a method or a signature, hence setattr
    parameters = list(init.parameters.values())[1:]
    signature_ = init.replace(parameters=parameters, return_annotation=inspect.Signature.empty)
    setattr(cls, "__signature__", signature_)  # noqa: B010
    setattr(cls, "__new__", staticmethod(new))  # noqa: B010
    setattr(cls, "__init__", object.__init__)  # noqa: B010
    fields = tuple(f.name for f in params)
    _RESTORERS[cls] = (builder, fields)
    setattr(cls, "__reduce__", _reducer(fields))  # noqa: B010
    return cls


def maker(cls: type[_T]) -> type[_T]:
    """The function `value` made to build ``cls``, to call where ``cls(...)`` is hot.

    It takes the same arguments and returns the same instance as ``cls(...)``, without
    ``type.__call__`` looking up ``__new__``, prepending the class to the arguments and
    calling ``object.__init__``: about 1,000 instructions less per instance. It is typed as
    the class, so mypy checks its calls as it checks the class's; it is only ever called.
    """
    return _MAKERS[cls]  # type: ignore[return-value]


_SuccessBuilder = _builder_of(Success)


def success(inner: _T) -> Success[_T]:
    """``Success(inner)``, built the way `value` builds: 2,200 instructions against 5,200.

    ``Success.__init__`` stores its value through ``object.__setattr__`` after a
    ``super().__init__`` call; the agent loop ends each run with one.
    """
    out: Any = _SuccessBuilder()
    out._inner_value = inner
    out.__class__ = Success
    return out  # type: ignore[no-any-return]


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
    namespace: dict[str, Any] = {"_context": _MAKERS.get(context, context)}
    exec(source, namespace)
    return namespace["unpacking"], namespace["packing"]
