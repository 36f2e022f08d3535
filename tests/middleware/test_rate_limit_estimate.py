"""``rate_limit``'s token estimate: tool definitions measured once each, as if every time."""

from __future__ import annotations

from fncore import Message, ModelRequest, ToolSpec
from fncore.middleware.rate_limit import _TOOL_CHARS as kept
from fncore.middleware.rate_limit import TOOLS_KEPT, _tool_chars, estimate_tokens


def spec(name: str, properties: dict[str, object]) -> ToolSpec:
    """A tool definition with ``properties`` in its schema."""
    return ToolSpec(name, "Does it.", {"type": "object", "properties": properties})


def measured(tool: ToolSpec) -> int:
    """What a tool definition counts, measured afresh."""
    return len(tool.name) + len(tool.description) + len(str(tool.parameters))


def test_a_definition_counts_what_measuring_it_again_would() -> None:
    """The remembered size of a definition is its size, on every call."""
    tool = spec("add", {"a": {"type": "integer"}})
    request = ModelRequest((Message.user("x" * 40),), tools=(tool,))
    expected = -(-(16 + 40 + measured(tool)) // 4)
    assert [estimate_tokens(request) for _ in range(3)] == [expected] * 3


def test_another_definition_is_measured_again() -> None:
    """A new definition, even of the same tool, is measured: sizes follow the definition."""
    small = spec("add", {"a": {"type": "integer"}})
    big = spec("add", {"a": {"type": "integer"}, "b": {"type": "integer", "title": "B" * 50}})
    assert _tool_chars(small) == measured(small)
    assert _tool_chars(big) == measured(big)
    assert _tool_chars(small) == measured(small)


def test_what_is_remembered_is_bounded() -> None:
    """However many definitions pass, at most TOOLS_KEPT are held."""
    for n in range(TOOLS_KEPT + 10):
        tool = spec(f"tool_{n}", {})
        assert _tool_chars(tool) == measured(tool)
    assert len(kept) <= TOOLS_KEPT


def test_a_growing_and_edited_conversation_is_estimated_as_afresh() -> None:
    """Histories' totals are remembered, yet each estimate is what counting all gives."""
    history: list[Message] = [Message.user("Find a flight.")]
    for turn in range(120):
        history.append(Message.assistant(f"Looking, turn {turn}." + "." * (turn % 7)))
        history.append(Message.user("And now?" * (1 + turn % 3)))
        request = ModelRequest(tuple(history), "Be brief.")
        chars = 9 + sum(16 + len(m.text) for m in history)
        assert estimate_tokens(request) == -(-chars // 4)
    history[5] = Message.user("an edited message, longer than it was before")  # a new object
    edited = ModelRequest(tuple(history), "Be brief.")
    assert estimate_tokens(edited) == -(-(9 + sum(16 + len(m.text) for m in history)) // 4)
    assert estimate_tokens(ModelRequest(tuple(history[:3]))) == -(
        -sum(16 + len(m.text) for m in history[:3]) // 4
    )


async def test_each_rate_limit_remembers_its_own_histories() -> None:
    """A ``rate_limit`` counts in a memo of its own, not the one `estimate_tokens` shares.

    So the agents of a process do not push each other's histories out.
    """
    from fncore import Agent
    from fncore.middleware import rate_limit
    from fncore.middleware.rate_limit import _HISTORY
    from fncore.testing import FunctionModel

    before = _HISTORY.remembered
    agent = Agent(FunctionModel(lambda _: "ok"), registry=rate_limit(tokens_per_minute=10**9))
    for turn in range(3):
        assert (await agent.run(f"question {turn} " * 20)).unwrap().output == "ok"
    assert _HISTORY.remembered == before


def test_a_short_history_is_counted_afresh_a_long_one_remembered() -> None:
    """Up to SHORT messages are counted without the memo; past it, the history is kept."""
    from fncore.middleware.rate_limit import _HISTORY, SHORT

    def conversation(size: int) -> tuple[Message, ...]:
        return tuple(Message.user(f"message {n} of {size}") for n in range(size))

    before = _HISTORY.remembered
    short = conversation(SHORT)
    assert estimate_tokens(ModelRequest(short)) == -(-sum(16 + len(m.text) for m in short) // 4)
    assert _HISTORY.remembered == before
    long = conversation(SHORT + 1)
    assert estimate_tokens(ModelRequest(long)) == -(-sum(16 + len(m.text) for m in long) // 4)
    assert _HISTORY.remembered != before
