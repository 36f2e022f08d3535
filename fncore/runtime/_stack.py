"""Build a stack: order, validate, inject, fold, freeze. Done once per agent."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from dependency_injector import containers

from fncore.core import Model, Position, Registration, RegistrationError, Registry, Tool
from fncore.core._loop import LoopSettings
from fncore.core._ordering import order_layers
from fncore.core._positions import POSITIONS
from fncore.core._registry import tool_functions
from fncore.core._tools import ToolFunction
from fncore.runtime._engine import Engine
from fncore.runtime._handlers import NamedLayer
from fncore.runtime._hooks import HookEntry, Hooks
from fncore.runtime._inject import bind


@dataclass(frozen=True, slots=True)
class StackDescription:
    """The built stack, for humans: each position's middleware, outermost first.

    As text, one line per position: what is not a middleware is in parentheses (the
    onion's end, ``(model)``; the agent's own instructions the ``system_prompt``
    transformers start from, ``(agent instructions)``, so it never reads as the
    ``instructions`` built-in).
    """

    positions: Mapping[Position, tuple[str, ...]]
    """Middleware names per position, outermost (or first) first."""
    tool_filters: Mapping[str, tuple[str, ...]]
    """``tool_call`` middleware that apply to only some tools: name to tool names."""
    hooks: Mapping[str, tuple[str, ...]]
    """Hook names per event."""
    tools: tuple[str, ...]
    """The tools offered to the model."""

    def __str__(self) -> str:
        lines: list[str] = []
        for position, info in POSITIONS.items():
            names = [
                f"{n}[{', '.join(self.tool_filters[n])}]" if n in self.tool_filters else n
                for n in self.positions.get(position, ())
            ]
            end = f"({info.end})"
            chain = " -> ".join([end, *names] if info.kind == "chain" else [*names, end])
            lines.append(f"{position:<17}{chain}")
        for event, hook_names in self.hooks.items():
            lines.append(f"hook {event:<12}{', '.join(hook_names)}")
        lines.append(f"{'tools':<17}{', '.join(self.tools) or '(none)'}")
        return "\n".join(lines)


def _what(reg: Registration) -> str:
    return f"{reg.position} middleware {reg.name!r}"


def build_engine(
    registry: Registry,
    *,
    model: Model,
    container: containers.Container | None,
    tools: Iterable[Tool | ToolFunction],
    additional_tools: Iterable[Tool | ToolFunction],
    instructions: str,
    settings: LoopSettings,
    lenient_filters: bool = False,
) -> tuple[Engine, StackDescription]:
    """Build the folded engine for ``registry`` and describe it.

    With ``lenient_filters``, a ``tool_call`` filter may name a tool not known yet (an MCP
    server's, listed at the first run, when the engine is built again without it).

    Raises:
        RegistrationError: for any mistake in registration (duplicate name or tool, a bad
            ordering hint, a tool filter naming an unknown tool, a dependency the container
            cannot provide).
    """
    offered = _collect_tools(registry, container, tools)
    extra = tool_functions(additional_tools)
    by_name: dict[str, Tool] = {}
    for t in (*offered, *extra):
        if t.name in by_name:
            msg = (
                f"two tools are named {t.name!r} ({by_name[t.name].source} and {t.source}); "
                "rename one (Tool.from_function(fn, name=...)) or give an MCP server a prefix"
            )
            raise RegistrationError(msg)
        by_name[t.name] = t

    ordered: dict[Position, tuple[Registration, ...]] = {}
    for position in POSITIONS:
        ordered[position] = order_layers([r for r in registry.middleware if r.position == position])

    def bound(position: Position) -> list[NamedLayer]:
        return [(r.name, bind(r.function, container, _what(r))) for r in ordered[position]]

    filters: dict[str, tuple[str, ...]] = {}
    tool_layers: dict[str, list[NamedLayer]] = {name: [] for name in by_name}
    per_tool = [r for p, info in POSITIONS.items() if info.per_tool for r in ordered[p]]
    for reg in per_tool:
        fn = bind(reg.function, container, _what(reg))
        if reg.tools is not None:
            unknown = [n for n in reg.tools if n not in by_name]
            if unknown and not lenient_filters:
                msg = (
                    f"{_what(reg)} filters on unknown tool(s) {', '.join(map(repr, unknown))}; "
                    f"known tools: {', '.join(sorted(by_name)) or 'none'}"
                )
                raise RegistrationError(msg)
            filters[reg.name] = reg.tools
        for name in by_name:
            if reg.tools is None or name in reg.tools:
                tool_layers[name].append((reg.name, fn))

    hooks: dict[str, list[HookEntry]] = {}
    for h in registry.hooks:
        fn = bind(h.function, container, f"{h.event} hook {h.name!r}")
        timeout = h.timeout if h.timeout is not None else settings.hook_timeout
        step = f"{h.event}:{h.name}" if h.step else None
        hooks.setdefault(h.event, []).append((h.name, fn, timeout, step))

    engine = Engine(
        model=model,
        tools=MappingProxyType(by_name),
        offered=offered,
        instructions=instructions,
        settings=settings,
        layers={p: bound(p) for p, info in POSITIONS.items() if info.kind == "onion"},
        steps={p: bound(p) for p, info in POSITIONS.items() if info.kind == "chain"},
        tool_layers=tool_layers,
        hooks=Hooks(**{event: tuple(entries) for event, entries in hooks.items()}),
    )
    description = StackDescription(
        positions=MappingProxyType({p: tuple(r.name for r in ordered[p]) for p in POSITIONS}),
        tool_filters=MappingProxyType(filters),
        hooks=MappingProxyType({e: tuple(n for n, _, _, _ in v) for e, v in hooks.items()}),
        tools=tuple(t.name for t in offered),
    )
    return engine, description


def _collect_tools(
    registry: Registry,
    container: containers.Container | None,
    tools: Iterable[Tool | ToolFunction],
) -> tuple[Tool, ...]:
    collected = [*tool_functions(tools), *registry.tools]
    for source in registry.tool_sources:
        fn: Any = bind(source.function, container, f"tool source {source.name!r}")
        try:
            provided = tool_functions(fn())
        except RegistrationError:
            raise
        except Exception as exc:
            msg = f"tool source {source.name!r} raised {type(exc).__name__}: {exc}"
            raise RegistrationError(msg) from exc
        for t in provided:
            if t.source == "function":
                t.source = f"tool source {source.name}"
        collected.extend(provided)
    return tuple(collected)
