"""The production stack that ``builtins.py`` and ``growth.py`` measure, built-in by built-in.

``trace`` on the SDK's providers (`_measure.Sdk`); ``retry``, ``limit_calls`` and
``budget`` with their defaults; ``rate_limit`` on ``memory://`` with limits no benchmark
comes near; ``cache`` on ``memory://`` (each benchmark makes it miss by sending a new
prompt each run).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from fncore import Registry
from fncore.middleware import budget, cache, limit_calls, rate_limit, retry, trace

if TYPE_CHECKING:  # mypy reads bench/ as a package (see bench/__init__.py)
    from bench import _measure
else:  # run as a script, whose folder is on sys.path
    import _measure


def registry_of(*parts: Registry) -> Registry:
    """One registry including each of ``parts``."""
    registry = Registry()
    for part in parts:
        registry.include(part)
    return registry


def sdk_trace(sdk: _measure.Sdk) -> Registry:
    """``trace`` on ``sdk``'s providers."""
    return trace(tracer_provider=sdk.tracer_provider, meter_provider=sdk.meter_provider)


def generous_rate_limit() -> Registry:
    """``rate_limit`` on ``memory://``, far above anything a benchmark sends: no call waits."""
    return rate_limit(requests_per_minute=10**9, tokens_per_minute=10**12)


def production_parts(sdk: _measure.Sdk) -> dict[str, Callable[[], Registry]]:
    """The production stack's built-ins by name, outermost first, each a fresh instance."""
    return {
        "trace": lambda: sdk_trace(sdk),
        "retry": retry,
        "limit_calls": limit_calls,
        "budget": budget,
        "rate_limit": generous_rate_limit,
        "cache": cache,
    }


def production_stack(sdk: _measure.Sdk, *, untraced: bool = False) -> Registry:
    """The production stack, its ``trace`` on ``sdk``'s providers (or, ``untraced``, none)."""
    parts = production_parts(sdk)
    return registry_of(*(make() for name, make in parts.items() if not untraced or name != "trace"))


async def empty_windows(registries: Iterable[Registry]) -> None:
    """Empty the windows of every ``rate_limit`` in ``registries`` (memory stays flat)."""
    for registry in registries:
        for resource in registry.resources:
            storage = getattr(resource, "storage", None)  # rate_limit's `limits` storage
            if storage is not None:
                await storage.reset()
