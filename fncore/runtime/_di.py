"""Typed spellings of dependency-injector's ``Provide[...]``, ``Provider[...]`` and ``List``.

dependency-injector types its markers as ``Any`` and ``providers.List`` as a list of
``Any``, so mypy checks nothing about what gets injected. These produce the very same
runtime objects (genuine markers, a genuine ``providers.List``) with types that say what
the container will hand over. ``typings/README.md`` has the details.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Protocol, TypeVar, cast, final, overload

from dependency_injector import containers, providers, wiring

_T = TypeVar("_T")
_T_co = TypeVar("_T_co", covariant=True)
_P = TypeVar("_P", bound="providers.Provider[Any]")
_C = TypeVar("_C", bound=containers.Container)

_Modified = tuple["str | providers.Provider[Any]", wiring.Modifier]
"""A marker item with a modifier, ``Provide["config.x", as_int()]``: its type is unknown."""


@final
class _ProvideMarker:
    """Subscript it like dependency-injector's ``Provide``; the result is typed.

    ``Provide[AppContainer.greeter]`` is a ``Greeter`` to mypy (the provider's type), and
    ``Provide[SomeContainer]`` the container (``Any`` for subclasses of fncore's ``Container``,
    whose metaclass mypy sees as ``Any``). A name (``Provide["greeter"]``) or a marker with a
    modifier stays ``Any``, as nothing in it says what it provides.

    Example:
        >>> from dependency_injector import providers, wiring
        >>> from fncore import Container, Provide, Provider
        >>> class AppContainer(Container):
        ...     greeting = providers.Object("hello")
        >>> type(Provide[AppContainer.greeting]) is wiring.Provide
        True
        >>> type(Provider[AppContainer.greeting]) is wiring.Provider
        True
    """

    __slots__ = ()

    @overload
    def __getitem__(self, item: str) -> Any: ...
    @overload
    def __getitem__(self, item: providers.Provider[_T]) -> _T: ...
    @overload
    def __getitem__(self, item: type[_C]) -> _C: ...
    @overload
    def __getitem__(self, item: _Modified) -> Any: ...
    def __getitem__(self, item: Any) -> Any:
        return wiring.Provide[item]

    def __repr__(self) -> str:
        return "fncore.Provide"


@final
class _ProviderMarker:
    """Subscript it like dependency-injector's ``Provider``; the result is typed.

    ``Provider[AppContainer.greeter]`` is the provider itself to mypy
    (``providers.Factory[Greeter]``), which is what gets injected: the provider, to call per
    use. A name or a marker with a modifier stays ``Any``.
    """

    __slots__ = ()

    @overload
    def __getitem__(self, item: str) -> Any: ...
    @overload
    def __getitem__(self, item: _P) -> _P: ...
    @overload
    def __getitem__(self, item: _Modified) -> Any: ...
    def __getitem__(self, item: Any) -> Any:
        return wiring.Provider[item]

    def __repr__(self) -> str:
        return "fncore.Provider"


Provide = _ProvideMarker()
"""``Provide[AppContainer.greeter]``: inject the provider's value, typed as that value.

The same marker as ``dependency_injector.wiring.Provide``, so the parameter
``greeter: Greeter = Provide[AppContainer.greeter]`` is resolved exactly as before, and mypy
reports a default that does not fit the annotation. ``Provide["name"]`` works too and stays
``Any``: a name is only checked when the agent is built.
"""

Provider = _ProviderMarker()
"""``Provider[AppContainer.greeter]``: inject the provider itself, typed as that provider.

The same marker as ``dependency_injector.wiring.Provider``.
"""


class _Provides(Protocol[_T_co]):
    """A dependency-injector provider of ``_T_co`` (``async_`` keeps plain callables out)."""

    def __call__(self, *args: Any, **kwargs: Any) -> _T_co: ...
    def async_(self, *args: Any, **kwargs: Any) -> Awaitable[_T_co]: ...


def list_provider(first: _Provides[_T], /, *rest: _Provides[_T]) -> providers.Provider[list[_T]]:
    """A ``providers.List`` of the given providers, typed as a provider of ``list[T]``.

    ``T`` is the common type of the items (a union or base class when they differ). At
    least one item is required: an empty ``providers.List`` returns ``()``, not a list. Wrap a
    plain value in ``providers.Object`` to include it.

    Args:
        first: The first item's provider.
        rest: The other items' providers, in order.

    Returns:
        The ``providers.List``; calling it builds a fresh list of the items' values.

    Example:
        >>> from dependency_injector import providers
        >>> numbers = list_provider(providers.Object(1), providers.Factory(int, "2"))
        >>> numbers()
        [1, 2]
    """
    return cast("providers.Provider[list[_T]]", providers.List(first, *rest))
