"""Resolve a middleware's extra parameters from the container, once, at build time."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from dependency_injector import containers
from dependency_injector.wiring import Provide, Provider, ProvidersMap

from fncore.core import RegistrationError

_PROVIDER_MARKER: type = type(Provider["x"])
_MARKERS: tuple[type, ...] = (type(Provide["x"]), _PROVIDER_MARKER)


def bind(
    fn: Callable[..., Any], container: containers.Container | None, what: str
) -> Callable[..., Any]:
    """Return ``fn`` with every ``Provide[...]``-defaulted parameter bound to its value.

    Parameters with ordinary defaults keep them. Nothing is looked up when the middleware
    is later called: the values are fixed here. As in dependency-injector, ``Provider[...]``
    binds the provider itself (to call per use) rather than its value.

    Raises:
        RegistrationError: if a marker names nothing in the container, or a provider fails
            or needs awaiting.
    """
    values: dict[str, object] = {}
    providers_map: ProvidersMap | None = None
    for param in inspect.signature(fn).parameters.values():
        if type(param.default) not in _MARKERS:
            continue
        marker: Any = param.default
        if container is None:
            msg = f"{what} asks for {param.name!r} from the container, but the agent has none"
            raise RegistrationError(msg)
        if providers_map is None:
            providers_map = ProvidersMap(container)
        provider = providers_map.resolve_provider(marker.provider, marker.modifier)
        if provider is None:
            msg = (
                f"{what} asks for {param.name!r} = {marker!r}, which the container does not "
                "provide; add that provider to your container or fix the name"
            )
            raise RegistrationError(msg)
        if type(marker) is _PROVIDER_MARKER:
            values[param.name] = provider
            continue
        try:
            value = provider()
        except Exception as exc:
            msg = f"{what}: providing {param.name!r} failed: {type(exc).__name__}: {exc}"
            raise RegistrationError(msg) from exc
        if inspect.isawaitable(value):
            close = getattr(value, "close", None)
            if close is not None:
                close()
            msg = (
                f"{what}: {param.name!r} comes from an async provider; run "
                "`await container.init_resources()` before building the agent"
            )
            raise RegistrationError(msg)
        values[param.name] = value
    return functools.partial(fn, **values) if values else fn
