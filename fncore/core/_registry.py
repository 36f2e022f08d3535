"""Registration: decorators that record middleware, hooks and tools in a `Registry`.

Decorators return the function unchanged, so a middleware stays a plain async function a
unit test can call directly. Nothing runs at registration; the stack is built later.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any, Literal, ParamSpec, TypeAlias, TypeVar, final, get_args, overload

from fncore.core._checks import timeout_problem
from fncore.core._errors import RegistrationError
from fncore.core._hook_events import HookEventName
from fncore.core._owned import Owned
from fncore.core._position_names import TOOL_CALL, Position
from fncore.core._positions import (
    POSITIONS,
    CompactionHook,
    CompressMiddleware,
    ErrorHook,
    ModelCallMiddleware,
    ReasoningMiddleware,
    RoundStartHook,
    RunEndHook,
    RunMiddleware,
    RunStartHook,
    SubagentEndHook,
    SubagentStartHook,
    SystemPromptTransformer,
    ToolCallMiddleware,
    ToolEndHook,
    ToolStartHook,
)
from fncore.core._registration_checks import _name_of, check_signature, not_a_step
from fncore.core._tools import Tool, ToolFunction

__all__ = [
    "HookRegistration",
    "Names",
    "Order",
    "Registration",
    "Registry",
    "ToolSourceRegistration",
    "default_registry",
    "hook",
    "on",
    "tool",
    "tool_source",
]

Order: TypeAlias = Literal["outermost", "innermost"]
"""Pin a middleware to the outside or the inside of its position's onion."""

Names: TypeAlias = list[str] | tuple[str, ...]
"""A list of names (a bare string is a type error: write ``["name"]``)."""

HOOK_EVENTS: tuple[HookEventName, ...] = get_args(HookEventName)

_Run = TypeVar("_Run", bound=RunMiddleware)
_Reasoning = TypeVar("_Reasoning", bound=ReasoningMiddleware)
_ModelCall = TypeVar("_ModelCall", bound=ModelCallMiddleware)
_ToolCall = TypeVar("_ToolCall", bound=ToolCallMiddleware)
_Compress = TypeVar("_Compress", bound=CompressMiddleware)
_SystemPrompt = TypeVar("_SystemPrompt", bound=SystemPromptTransformer)
_RunStartH = TypeVar("_RunStartH", bound=RunStartHook)
_RunEndH = TypeVar("_RunEndH", bound=RunEndHook)
_RoundStartH = TypeVar("_RoundStartH", bound=RoundStartHook)
_ToolStartH = TypeVar("_ToolStartH", bound=ToolStartHook)
_ToolEndH = TypeVar("_ToolEndH", bound=ToolEndHook)
_CompactionH = TypeVar("_CompactionH", bound=CompactionHook)
_ErrorH = TypeVar("_ErrorH", bound=ErrorHook)
_SubagentStartH = TypeVar("_SubagentStartH", bound=SubagentStartHook)
_SubagentEndH = TypeVar("_SubagentEndH", bound=SubagentEndHook)
_Fn = TypeVar("_Fn", bound=Callable[..., object])
_R = TypeVar("_R")
_P = ParamSpec("_P")
_Source = TypeVar("_Source", bound=Callable[[], Iterable[Tool | ToolFunction]])

AnyFunction: TypeAlias = Callable[..., Any]


@final
@dataclass(frozen=True, slots=True)
class Registration:
    """A middleware as registered: the function and its options."""

    position: Position
    """Where it stands."""
    function: AnyFunction
    """The async function."""
    name: str
    """Its unique name within the position (defaults to the function's name)."""
    order: Order | None = None
    """Pinned outermost or innermost, if asked."""
    before: tuple[str, ...] = ()
    """Names of middleware it must be outside of (run before)."""
    after: tuple[str, ...] = ()
    """Names of middleware it must be inside of (run after)."""
    tools: tuple[str, ...] | None = None
    """For ``tool_call``: only these tools pass through it (``None``: all)."""
    soft: bool = False
    """Whether ``before``/``after`` may name middleware that are not registered (such hints
    are dropped)."""
    builtin: str | None = None
    """Which of fncore's built-ins this layer is (``None`` for your own middleware). A
    built-in's ``before``/``after`` name other built-ins and apply to the layers that are
    those built-ins, whatever their names, and to whichever of them are there: a middleware
    of yours named ``cache`` is never placed as if it were the ``cache`` built-in."""


@final
@dataclass(frozen=True, slots=True)
class HookRegistration:
    """A hook as registered."""

    event: HookEventName
    """The event it observes."""
    function: AnyFunction
    """The async function."""
    name: str
    """Its name, for warnings."""
    timeout: float | None
    """Seconds before it is skipped (``None``: the agent's ``hook_timeout``)."""
    step: bool = False
    """Whether its call is one step of a durable run (it does not run again on replay)."""


@final
@dataclass(frozen=True, slots=True)
class ToolSourceRegistration:
    """A tool source: a function returning tools, called once at build time."""

    function: AnyFunction
    """The function."""
    name: str
    """Its name, for errors."""


@final
class Registry:
    """Where middleware, hooks and tools are recorded before a stack is built.

    Application code uses the default registry through the module-level `on`, `hook`, `tool`
    and `tool_source`; libraries and plugins make their own and ``include`` it.

    Example:
        >>> registry = Registry()
        >>> @registry.on("model_call", name="log")
        ... async def log(ctx, call_next):
        ...     return await call_next(ctx)
        >>> [r.name for r in registry.middleware]
        ['log']
    """

    __slots__ = ("_hooks", "_middleware", "_resources", "_sources", "_tools")

    def __init__(self) -> None:
        self._middleware: list[Registration] = []
        self._hooks: list[HookRegistration] = []
        self._tools: list[Tool] = []
        self._sources: list[ToolSourceRegistration] = []
        self._resources = Owned()

    @property
    def middleware(self) -> tuple[Registration, ...]:
        """Every middleware, in registration order."""
        return tuple(self._middleware)

    @property
    def hooks(self) -> tuple[HookRegistration, ...]:
        """Every hook, in registration order."""
        return tuple(self._hooks)

    @property
    def tools(self) -> tuple[Tool, ...]:
        """Every tool registered directly."""
        return tuple(self._tools)

    @property
    def tool_sources(self) -> tuple[ToolSourceRegistration, ...]:
        """Every tool source."""
        return tuple(self._sources)

    @property
    def resources(self) -> tuple[Any, ...]:
        """What the registry owns and closes in `aclose`."""
        return self._resources.items

    def own(self, resource: _R) -> _R:
        """Record ``resource`` (anything with ``aclose()``) as the registry's to close.

        Middleware that hold connections (a store on Redis, say) register them here;
        ``await registry.aclose()`` closes them, and a container closes the registries it
        built when it shuts down.
        """
        return self._resources.keep(resource)

    async def aclose(self) -> None:
        """Close the resources the registry owns (and those of registries it included)."""
        await self._resources.close()

    @overload
    def on(
        self,
        position: Literal["run"],
        *,
        name: str | None = None,
        order: Order | None = None,
        before: Names = (),
        after: Names = (),
        soft: bool = False,
        builtin: str | None = None,
        step: bool = False,
    ) -> Callable[[_Run], _Run]: ...
    @overload
    def on(
        self,
        position: Literal["reasoning"],
        *,
        name: str | None = None,
        order: Order | None = None,
        before: Names = (),
        after: Names = (),
        soft: bool = False,
        builtin: str | None = None,
        step: bool = False,
    ) -> Callable[[_Reasoning], _Reasoning]: ...
    @overload
    def on(
        self,
        position: Literal["model_call"],
        *,
        name: str | None = None,
        order: Order | None = None,
        before: Names = (),
        after: Names = (),
        soft: bool = False,
        builtin: str | None = None,
        step: bool = False,
    ) -> Callable[[_ModelCall], _ModelCall]: ...
    @overload
    def on(
        self,
        position: Literal["tool_call"],
        *,
        name: str | None = None,
        order: Order | None = None,
        before: Names = (),
        after: Names = (),
        tools: Names | None = None,
        soft: bool = False,
        builtin: str | None = None,
        step: bool = False,
    ) -> Callable[[_ToolCall], _ToolCall]: ...
    @overload
    def on(
        self,
        position: Literal["compress_context"],
        *,
        name: str | None = None,
        order: Order | None = None,
        before: Names = (),
        after: Names = (),
        soft: bool = False,
        builtin: str | None = None,
        step: bool = False,
    ) -> Callable[[_Compress], _Compress]: ...
    @overload
    def on(
        self,
        position: Literal["system_prompt"],
        *,
        name: str | None = None,
        order: Order | None = None,
        before: Names = (),
        after: Names = (),
        soft: bool = False,
        builtin: str | None = None,
        step: bool = False,
    ) -> Callable[[_SystemPrompt], _SystemPrompt]: ...
    def on(
        self,
        position: Position,
        *,
        name: str | None = None,
        order: Order | None = None,
        before: Names = (),
        after: Names = (),
        tools: Names | None = None,
        soft: bool = False,
        builtin: str | None = None,
        step: bool = False,
    ) -> Callable[[_Fn], _Fn]:
        """Register the decorated async function as middleware at ``position``.

        Args:
            position: ``run``, ``reasoning``, ``model_call``, ``tool_call``,
                ``compress_context`` or ``system_prompt``.
            name: Unique name within the position; defaults to the function's name.
            order: ``"outermost"`` or ``"innermost"`` to pin it to an end of the onion.
            before: Names it must run before (sit outside of).
            after: Names it must run after (sit inside of).
            tools: For ``tool_call`` only: the tool names it applies to.
            soft: ``before``/``after`` may name middleware that are not registered; those
                hints are dropped instead of failing the build.
            builtin: Set by fncore's built-ins only: which built-in this is. Their
                ``before``/``after`` then name built-ins, matched by this, not by name (see
                `Registration.builtin`).
            step: Refused: only a hook's call can be made one step of a durable run
                (``@hook(event, step=True)``); a middleware's pass either is a step already
                (``model_call``, ``tool_call``) or runs again on replay.

        Raises:
            RegistrationError: for an unknown position, a wrong signature, a duplicate name,
                a tool filter outside ``tool_call``, or ``step=True``.
        """

        def decorate(fn: _Fn) -> _Fn:
            where = f"middleware {_name_of(fn)!r}"
            info = POSITIONS.get(position)
            if info is None:
                msg = f"{where}: unknown position {position!r}; use one of: {', '.join(POSITIONS)}"
                raise RegistrationError(msg)
            if step:
                raise RegistrationError(f"{where}: {not_a_step(position)}")
            if order is not None and order not in ("outermost", "innermost"):
                msg = f"{where}: order must be 'outermost' or 'innermost', not {order!r}"
                raise RegistrationError(msg)
            if tools is not None and not info.per_tool:
                msg = (
                    f"{where}: tools=... filters tool calls; it only applies at {TOOL_CALL!r}, "
                    f"not {position!r}: drop tools= or register it at {TOOL_CALL!r}"
                )
                raise RegistrationError(msg)
            hinted: tuple[tuple[str, object], ...] = (
                ("before", before),
                ("after", after),
                ("tools", tools),
            )
            for hint, value in hinted:
                if isinstance(value, str):
                    msg = f"{where}: {hint}= takes a list of names: write {hint}=[{value!r}]"
                    raise RegistrationError(msg)
            check_signature(fn, 2, f"{position} middleware", info.signature)
            reg = Registration(
                position,
                fn,
                name or _name_of(fn),
                order,
                tuple(before),
                tuple(after),
                None if tools is None else tuple(tools),
                soft,
                builtin,
            )
            self.add(reg)
            return fn

        return decorate

    def add(self, registration: Registration) -> None:
        """Record a middleware registration (what ``on`` does after its checks).

        Raises:
            RegistrationError: if the name is already taken at that position.
        """
        for other in self._middleware:
            if other.position == registration.position and other.name == registration.name:
                msg = (
                    f"{registration.position} middleware name {registration.name!r} is "
                    f"registered twice ({_name_of(other.function)} and "
                    f"{_name_of(registration.function)}); pass name='...' to tell them apart"
                )
                raise RegistrationError(msg)
        self._middleware.append(registration)

    @overload
    def hook(
        self,
        event: Literal["run_start"],
        *,
        timeout: float | None = None,
        name: str | None = None,
        step: bool = False,
    ) -> Callable[[_RunStartH], _RunStartH]: ...
    @overload
    def hook(
        self,
        event: Literal["run_end"],
        *,
        timeout: float | None = None,
        name: str | None = None,
        step: bool = False,
    ) -> Callable[[_RunEndH], _RunEndH]: ...
    @overload
    def hook(
        self,
        event: Literal["round_start"],
        *,
        timeout: float | None = None,
        name: str | None = None,
        step: bool = False,
    ) -> Callable[[_RoundStartH], _RoundStartH]: ...
    @overload
    def hook(
        self,
        event: Literal["tool_start"],
        *,
        timeout: float | None = None,
        name: str | None = None,
        step: bool = False,
    ) -> Callable[[_ToolStartH], _ToolStartH]: ...
    @overload
    def hook(
        self,
        event: Literal["tool_end"],
        *,
        timeout: float | None = None,
        name: str | None = None,
        step: bool = False,
    ) -> Callable[[_ToolEndH], _ToolEndH]: ...
    @overload
    def hook(
        self,
        event: Literal["compaction"],
        *,
        timeout: float | None = None,
        name: str | None = None,
        step: bool = False,
    ) -> Callable[[_CompactionH], _CompactionH]: ...
    @overload
    def hook(
        self,
        event: Literal["error"],
        *,
        timeout: float | None = None,
        name: str | None = None,
        step: bool = False,
    ) -> Callable[[_ErrorH], _ErrorH]: ...
    @overload
    def hook(
        self,
        event: Literal["subagent_start"],
        *,
        timeout: float | None = None,
        name: str | None = None,
        step: bool = False,
    ) -> Callable[[_SubagentStartH], _SubagentStartH]: ...
    @overload
    def hook(
        self,
        event: Literal["subagent_end"],
        *,
        timeout: float | None = None,
        name: str | None = None,
        step: bool = False,
    ) -> Callable[[_SubagentEndH], _SubagentEndH]: ...
    def hook(
        self,
        event: HookEventName,
        *,
        timeout: float | None = None,
        name: str | None = None,
        step: bool = False,
    ) -> Callable[[_Fn], _Fn]:
        """Register the decorated async function as an observer of ``event``.

        Hooks see events but change nothing. One that takes longer than ``timeout`` seconds
        (default: the agent's ``hook_timeout``) or raises is skipped with a warning. With
        ``step=True`` its call is one step of a durable run, named ``<event>:<name>``: it
        runs once, and not again when the run is replayed after a crash (outside a durable
        run the flag changes nothing).

        Raises:
            RegistrationError: for an unknown event or a wrong signature.
        """

        def decorate(fn: _Fn) -> _Fn:
            where = f"hook {_name_of(fn)!r}"
            if event not in HOOK_EVENTS:
                msg = f"{where}: unknown hook event {event!r}; use one of: {', '.join(HOOK_EVENTS)}"
                raise RegistrationError(msg)
            problem = None if timeout is None else timeout_problem(timeout, f"{where}: timeout")
            if problem is not None:
                msg = f"{problem} (or None for the agent's hook_timeout)"
                raise RegistrationError(msg)
            check_signature(fn, 1, f"{event} hook", "(event)")
            self._hooks.append(HookRegistration(event, fn, name or _name_of(fn), timeout, step))
            return fn

        return decorate

    @overload
    def tool(self, function: Callable[_P, _R], /) -> Callable[_P, _R]: ...
    @overload
    def tool(
        self,
        function: None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        inline: bool = False,
    ) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]: ...
    def tool(
        self,
        function: Callable[..., object] | None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        inline: bool = False,
    ) -> Any:
        """Register a typed function as a tool offered to the model (bare or with options).

        Raises:
            RegistrationError: if a parameter is not annotated.
        """

        def decorate(fn: _Fn) -> _Fn:
            self._tools.append(
                Tool.from_function(
                    fn, name=name, description=description, timeout=timeout, inline=inline
                )
            )
            return fn

        return decorate(function) if function is not None else decorate

    def tool_source(self, function: _Source, /) -> _Source:
        """Register a function that returns tools (or typed functions); it runs once, at build.

        Like middleware, its parameters are resolved from the container, so a source can
        build tools from configuration (a directory, an API client).

        Raises:
            RegistrationError: if it is async or has parameters without defaults.
        """
        check_signature(function, 0, "tool source", "()", is_async=False)
        self._sources.append(ToolSourceRegistration(function, _name_of(function)))
        return function

    def hooks_as_steps(self) -> Registry:
        """A copy whose hooks are registered with ``step=True`` (``[[middleware]] step = true``).

        Raises:
            RegistrationError: if it holds middleware (only a hook's call can be a step), or
                no hook.
        """
        for reg in self._middleware:
            msg = f"step = true: middleware {reg.name!r}: {not_a_step(reg.position)}"
            raise RegistrationError(msg)
        if not self._hooks:
            msg = "step = true makes hooks steps of a durable run, and this registers no hook"
            raise RegistrationError(msg)
        copy = Registry()
        copy.include(self)
        copy._hooks = [replace(h, step=True) for h in self._hooks]
        return copy

    def include(self, other: Registry) -> None:
        """Add everything ``other`` registered (a library's or plugin's registry).

        Raises:
            RegistrationError: if a middleware name clashes at the same position.
        """
        staged = Registry()
        staged._middleware = list(self._middleware)
        for reg in other._middleware:
            staged.add(reg)
        self._middleware = staged._middleware
        self._hooks.extend(other._hooks)
        self._tools.extend(other._tools)
        self._sources.extend(other._sources)
        self._resources.adopt(other)


def tool_functions(tools: Iterable[Tool | ToolFunction]) -> tuple[Tool, ...]:
    """Turn a mix of `Tool` objects and plain typed functions into tools."""
    return tuple(t if isinstance(t, Tool) else Tool.from_function(t) for t in tools)


default_registry = Registry()
"""The registry that the module-level decorators write to."""

on = default_registry.on
hook = default_registry.hook
tool = default_registry.tool
tool_source = default_registry.tool_source
