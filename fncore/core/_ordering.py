"""Resolve ordering hints into one order per position, once, at build time."""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from fncore.core._errors import RegistrationError
from fncore.core._registry import Registration

_GROUP = {"outermost": 0, None: 1, "innermost": 2}


def order_layers(layers: Sequence[Registration]) -> tuple[Registration, ...]:
    """Order one position's middleware: outermost first.

    Registration order is kept (first registered is outermost), except that ``outermost``
    and ``innermost`` pins move a middleware to an end and ``before``/``after`` hints move
    it around a named one. The sort is stable: among middleware free to go anywhere, the
    earlier registered goes first.

    Raises:
        RegistrationError: for a hint naming a middleware that is not registered at this
            position, or hints that form a cycle; the message names both sides.

    Example:
        >>> async def f(ctx, call_next): ...
        >>> a = Registration("run", f, "a")
        >>> b = Registration("run", f, "b", before=("a",))
        >>> [r.name for r in order_layers([a, b])]
        ['b', 'a']
    """
    index = {reg.name: i for i, reg in enumerate(layers)}
    rank = sorted(range(len(layers)), key=lambda i: (_GROUP[layers[i].order], i))
    priority = {i: p for p, i in enumerate(rank)}
    edges: dict[int, set[int]] = {i: set() for i in range(len(layers))}
    for i, reg in enumerate(layers):
        for hint, names in (("before", reg.before), ("after", reg.after)):
            for other in names:
                if other not in index:
                    known = ", ".join(sorted(index)) or "none"
                    msg = (
                        f"{reg.position} middleware {reg.name!r} asks to run {hint} {other!r}, "
                        f"which is not registered at {reg.position!r} (registered: {known}); "
                        "fix the name or register it"
                    )
                    raise RegistrationError(msg)
                j = index[other]
                if j == i:
                    msg = f"{reg.position} middleware {reg.name!r} asks to run {hint} itself"
                    raise RegistrationError(msg)
                if hint == "before":
                    edges[i].add(j)
                else:
                    edges[j].add(i)
    indegree = dict.fromkeys(edges, 0)
    for targets in edges.values():
        for j in targets:
            indegree[j] += 1
    ready = [(priority[i], i) for i, d in indegree.items() if d == 0]
    heapq.heapify(ready)
    out: list[int] = []
    while ready:
        _, i = heapq.heappop(ready)
        out.append(i)
        for j in edges[i]:
            indegree[j] -= 1
            if indegree[j] == 0:
                heapq.heappush(ready, (priority[j], j))
    if len(out) < len(layers):
        raise RegistrationError(_cycle_message(layers, edges, set(out)))
    return tuple(layers[i] for i in out)


def _cycle_message(
    layers: Sequence[Registration], edges: dict[int, set[int]], placed: set[int]
) -> str:
    start = min(i for i in edges if i not in placed)
    path = [start]
    seen = {start: 0}
    node = start
    while True:
        node = min(j for j in edges[node] if j not in placed)
        if node in seen:
            cycle = [*path[seen[node] :], node]
            break
        seen[node] = len(path)
        path.append(node)
    chain = " -> ".join(repr(layers[i].name) for i in cycle)
    first, second = layers[cycle[0]].name, layers[cycle[1]].name
    return (
        f"{layers[start].position} ordering hints form a cycle: {chain} "
        f"(each must run before the next); {first!r} and {second!r} cannot both hold, "
        "drop one of the before=/after= hints"
    )
