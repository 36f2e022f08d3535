"""Resolve ordering hints into one order per position, once, at build time."""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import replace

from fncore.core._errors import RegistrationError
from fncore.core._registry import Registration

_GROUP = {"outermost": 0, None: 1, "innermost": 2}


def order_layers(layers: Sequence[Registration]) -> tuple[Registration, ...]:
    """Order one position's middleware: outermost first.

    Registration order is kept (first registered is outermost), except that ``outermost``
    and ``innermost`` pins move a middleware to an end and ``before``/``after`` hints move
    it around a named one. Only the middleware carrying a hint moves, and only if it is not
    already on the asked side: it goes just outside (``before``) or just inside (``after``)
    the one it names, and every other middleware keeps its registration order.

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
    layers = [_known_hints(reg, index) if reg.soft else reg for reg in layers]
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
    place = _wanted_places(layers, index, priority)
    ready = [(place[i], priority[i], i) for i, d in indegree.items() if d == 0]
    heapq.heapify(ready)
    out: list[int] = []
    while ready:
        _, _, i = heapq.heappop(ready)
        out.append(i)
        for j in edges[i]:
            indegree[j] -= 1
            if indegree[j] == 0:
                heapq.heappush(ready, (place[j], priority[j], j))
    if len(out) < len(layers):
        raise RegistrationError(_cycle_message(layers, edges, set(out)))
    return tuple(layers[i] for i in out)


def _known_hints(reg: Registration, index: Mapping[str, int]) -> Registration:
    """``reg`` without the hints that name middleware not registered at its position."""
    return replace(
        reg,
        before=tuple(n for n in reg.before if n in index),
        after=tuple(n for n in reg.after if n in index),
    )


def _wanted_places(
    layers: Sequence[Registration], index: dict[str, int], priority: dict[int, int]
) -> dict[int, float]:
    """Where each middleware would go: its own place, unless its own hints move it.

    A hinted middleware goes just outside (``before``) or just inside (``after``) the one it
    names when it is not already there; the named one does not move. The topological sort
    then enforces every hint, so these places only break ties.
    """
    step = 1 / (len(layers) + 1)
    place: dict[int, float] = {}

    def wanted(i: int, visiting: frozenset[int]) -> float:
        if i in place:
            return place[i]
        reg, inside = layers[i], visiting | {i}
        spot = float(priority[i])
        outer = [wanted(index[n], inside) for n in reg.before if index[n] not in inside]
        inner = [wanted(index[n], inside) for n in reg.after if index[n] not in inside]
        if outer:
            spot = min(spot, min(outer) - step)
        if inner:
            spot = max(spot, max(inner) + step)
        place[i] = spot
        return spot

    for i in range(len(layers)):
        wanted(i, frozenset())
    return place


def _cycle_message(
    layers: Sequence[Registration], edges: dict[int, set[int]], placed: set[int]
) -> str:
    # Walk predecessors: every unplaced node has an unplaced one (its indegree stayed above
    # zero), whereas walking successors can dead-end at a node merely stuck behind a cycle.
    preds: dict[int, list[int]] = {i: [] for i in edges if i not in placed}
    for i in preds:
        for j in edges[i]:
            if j not in placed:
                preds[j].append(i)
    start = min(preds)
    path = [start]
    seen = {start: 0}
    node = start
    while True:
        node = min(preds[node])
        if node in seen:
            cycle = [*path[seen[node] :], node][::-1]
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
