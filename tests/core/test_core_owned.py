"""Ownership: what an agent, a registry or a container made is closed once, last first."""

from __future__ import annotations

from fncore.core import Registry
from fncore.core._owned import Owned, SupportsAclose


class Pool:
    """Stands for something holding connections; records when it is closed."""

    def __init__(self, name: str, closed: list[str]) -> None:
        self.name = name
        self.closed = closed

    async def aclose(self) -> None:
        """Record the close."""
        self.closed.append(self.name)


async def test_owned_things_close_once_the_last_first_and_are_forgotten() -> None:
    """Closing closes each thing once, in reverse order; a second close closes nothing."""
    closed: list[str] = []
    owned = Owned()
    first, second = Pool("first", closed), Pool("second", closed)
    assert owned.keep(first) is first
    owned.add(second)
    owned.add(first)  # already owned
    owned.add("no aclose")  # nothing to close
    assert owned.items == (first, second)
    await owned.close()
    await owned.close()
    assert closed == ["second", "first"]
    assert not owned.items


async def test_a_resource_shared_by_two_registries_is_closed_once_by_their_owner() -> None:
    """A container adopting two registries that own one store closes it once."""
    closed: list[str] = []
    shared = Pool("store", closed)
    one, two = Registry(), Registry()
    one.own(shared)
    two.own(shared)
    two.include(one)
    assert two.resources == (shared,)
    container = Owned()
    container.adopt(one)
    container.adopt(two)
    await container.close()
    assert closed == ["store"]


def test_anything_with_aclose_supports_it() -> None:
    """The protocol is structural: an object with ``aclose`` is one."""
    assert isinstance(Pool("p", []), SupportsAclose)
    assert not isinstance(object(), SupportsAclose)
