"""Middleware from configuration: ``[[middleware]]`` entries turned into registries.

Each entry names a built-in (``use = "retry"``) or a factory of your own
(``use = "package.module:factory"``); its other keys are the factory's keyword arguments,
validated against the factory's signature as it is called. The entries are included in
order, so the first is the outermost, and each built-in's declared place (its ordering
hints, which find the other built-ins by what they are) still applies.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from fncore.core import Model, RegistrationError, Registry
from fncore.middleware._checked import checked
from fncore.middleware._imports import import_function
from fncore.settings import ConfigError

__all__ = ["BUILTINS", "build_middleware", "load_factory"]

BUILTINS: dict[str, str] = {
    "trace": "fncore.middleware.trace:trace",
    "approve": "fncore.middleware.approve:approve",
    "retry": "fncore.middleware.retry:retry",
    "retry_tools": "fncore.middleware.retry:retry_tools",
    "fallback": "fncore.middleware.fallback:fallback",
    "limit_calls": "fncore.middleware.limit_calls:limit_calls",
    "budget": "fncore.middleware.budget:budget",
    "rate_limit": "fncore.middleware.rate_limit:rate_limit",
    "cache": "fncore.middleware.cache:cache",
    "timeout": "fncore.middleware.timeout:timeout",
    "compact": "fncore.middleware.compact:compact",
    "repair_history": "fncore.middleware.repair_history:repair_history",
    "redact_pii": "fncore.middleware.redact_pii:redact_pii",
    "guard": "fncore.middleware.guard:guard",
    "patch_tool_calls": "fncore.middleware.patch_tool_calls:patch_tool_calls",
    "emulate_tools": "fncore.middleware.emulate_tools:emulate_tools",
    "select_tools": "fncore.middleware.select_tools:select_tools",
    "cache_prompt": "fncore.middleware.cache_prompt:cache_prompt",
    "instructions": "fncore.middleware.instructions:instructions",
}
"""The built-ins by configuration name: where each factory lives (imported when used)."""

MiddlewareFactory = Callable[..., Registry]
"""A middleware factory: keyword arguments in, a `Registry` out."""

ModelResolver = Callable[[str], Model]
"""Builds the model a configuration string names (a preset under ``[models.<name>]``)."""


def load_factory(use: str) -> MiddlewareFactory:
    """The factory ``use`` names: a built-in's name or ``package.module:factory``.

    Raises:
        ConfigError: for an unknown built-in, a module that cannot be imported, or a name
            that is not a callable.
    """
    target = BUILTINS.get(use)
    if target is None:
        if ":" not in use:
            known = ", ".join(sorted(BUILTINS))
            msg = (
                f"unknown built-in {use!r} (built-ins: {known}); for your own, "
                "write use = 'package.module:factory'"
            )
            raise ConfigError(msg)
        target = use
    try:
        factory = import_function(target, "middleware")
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return factory  # type: ignore[return-value]


def _mentions_model(hint: Any) -> bool:
    if hint is Model:
        return True
    return any(_mentions_model(arg) for arg in typing.get_args(hint))


def _with_models(
    factory: MiddlewareFactory,
    hints: Mapping[str, Any],
    params: dict[str, Any],
    resolve_model: ModelResolver,
) -> dict[str, Any]:
    """``params`` with preset names turned into models where the factory takes models."""
    out = dict(params)
    for name, value in params.items():
        if not _mentions_model(hints.get(name)):
            continue
        if isinstance(value, str):
            out[name] = resolve_model(value)
        elif isinstance(value, list):
            out[name] = [resolve_model(v) if isinstance(v, str) else v for v in value]
    return out


def _input_path(params: Mapping[str, Any], loc: tuple[int | str, ...]) -> list[str]:
    """The parts of a validation error's location that name places in the input.

    Pydantic puts the name of each union member it tried into the location (``on.str``);
    those are not keys of the input, so they are left out.
    """
    path: list[str] = []
    current: Any = params
    for part in loc:
        in_mapping = isinstance(current, Mapping) and part in current
        in_list = isinstance(current, list) and isinstance(part, int) and part < len(current)
        if in_mapping or in_list:
            current = current[part]
        elif path:
            continue
        path.append(str(part))
    return path


_PROBLEMS = {
    "unexpected_keyword_argument": "unknown parameter",
    "missing_argument": "Field required",
    "missing_keyword_only_argument": "Field required",
}
"""What configuration calls some of `validate_call`'s errors (``parameter 'x': ...``)."""


def _called(factory: MiddlewareFactory, params: dict[str, Any]) -> object:
    """What ``factory`` returns for ``params``, which it validates (once) and coerces.

    A built-in validates its own arguments (`checked`); a factory of your own is made to.

    Raises:
        ConfigError: for an unknown or a wrong parameter (naming it), or a factory that
            refuses its arguments (a ``ValueError`` or ``TypeError`` of its own).
    """
    try:
        call = checked(factory)
    except (ValueError, TypeError) as exc:  # not a function pydantic can validate
        raise ConfigError(str(exc)) from None
    try:
        return call(**params)
    except ValidationError as exc:
        if exc.title != getattr(call, "__qualname__", None):  # raised inside the factory
            raise ConfigError(str(exc)) from None
        error = exc.errors(include_url=False)[0]
        key = ".".join(_input_path(params, error["loc"]))
        problem = _PROBLEMS.get(
            error["type"],
            error["msg"].removeprefix("Value error, ").replace("an instance of Sequence", "a list"),
        )
        names = ", ".join(
            p.name
            for p in inspect.signature(factory).parameters.values()
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        )
        msg = f"parameter {key!r}: {problem} (parameters: {names or 'none'})"
        raise ConfigError(msg) from None
    except (ValueError, TypeError) as exc:
        raise ConfigError(str(exc)) from None


def build_middleware(
    entries: Sequence[Mapping[str, Any]], resolve_model: ModelResolver
) -> Registry:
    """One registry holding every configured middleware, the first entry outermost.

    Raises:
        ConfigError: one line naming the entry (``middleware[2] (use = 'retry')``) for an
            unknown name, an unknown or wrong parameter, or a factory that fails.
    """
    combined = Registry()
    for index, entry in enumerate(entries):
        params = dict(entry)
        use = params.pop("use", None)
        step = params.pop("step", False)
        where = f"config key 'middleware[{index}]' (use = {use!r})"
        try:
            if not isinstance(use, str) or not use:
                msg = "needs use = 'a built-in's name' or 'package.module:factory'"
                raise ConfigError(msg)
            factory = load_factory(use)
            hints = typing.get_type_hints(factory, include_extras=True)
            params = _with_models(factory, hints, params, resolve_model)
            registry = _called(factory, params)
            if not isinstance(registry, Registry):
                msg = f"the factory returned {type(registry).__name__}, not a Registry"
                raise ConfigError(msg)
            if not isinstance(step, bool):
                msg = f"step must be true or false, not {step!r}"
                raise ConfigError(msg)
            combined.include(registry.hooks_as_steps() if step else registry)
        except (ConfigError, RegistrationError) as exc:
            msg = f"{where}: {exc}"
            raise ConfigError(msg) from None
    return combined
