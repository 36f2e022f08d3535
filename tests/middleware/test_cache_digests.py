"""The cache's keys from remembered digests: the same keys as cold, new ones for what changed."""

from __future__ import annotations

import dataclasses

import pytest

from fncore import (
    DataPart,
    Message,
    ModelRequest,
    ModelSettings,
    OutputSchema,
    ReasoningPart,
    RequireTool,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)
from fncore.middleware._cache_key import SHORT, Digests, request_key

ADD = ToolSpec("add", "Add two integers.", {"type": "object", "properties": {"a": {}}})
SHOUT = ToolSpec("shout", "Upper-case a text.", {"type": "object", "properties": {"t": {}}})


def conversation(turns: int) -> tuple[Message, ...]:
    """A conversation of ``turns`` rounds: a question, a tool call, its result, an answer."""
    messages: list[Message] = []
    for i in range(turns):
        call = ToolCallPart(f"c{i}", "add", f'{{"a": {i}}}')
        messages += [
            Message.user(f"question {i}"),
            Message("assistant", (ReasoningPart(f"thinking {i}", signature="s"), call)),
            Message("tool", (ToolResultPart(f"c{i}", "add", str(i)),)),
            Message.assistant(f"answer {i}"),
        ]
    return tuple(messages)


def cold(request: ModelRequest, model: str = "m") -> str:
    """The key computed with nothing remembered."""
    return request_key(request, model)


def test_remembered_keys_equal_cold_ones_as_a_conversation_grows() -> None:
    """Round by round, short and long, a long-lived memo gives the key computed cold."""
    digests = Digests()
    history = conversation(12)
    settings = ModelSettings(temperature=0.0, stop=("END",))
    output = OutputSchema("Answer", {"type": "object", "properties": {}})
    for end in range(1, len(history) + 1):
        request = ModelRequest(
            history[:end], "Be brief.", (ADD, SHOUT), settings=settings, output_schema=output
        )
        assert request_key(request, "m", digests) == cold(request)
    assert len(history) > SHORT  # the running digest of a long conversation was used too


def test_each_part_of_a_request_is_in_its_key() -> None:
    """Another message, tool, tool choice, setting, schema, model or count: another key."""
    digests = Digests()
    history = conversation(6)
    base = ModelRequest(history, "Be brief.", (ADD,))
    others = [
        dataclasses.replace(base, messages=(*history[:5], Message.user("changed"), *history[6:])),
        dataclasses.replace(base, messages=history[:-1]),
        dataclasses.replace(base, messages=(*history, history[-1])),
        dataclasses.replace(base, instructions="Be long."),
        dataclasses.replace(base, tools=(dataclasses.replace(ADD, description="Sum."),)),
        dataclasses.replace(base, tools=(ADD, SHOUT)),
        dataclasses.replace(base, tools=()),
        dataclasses.replace(base, tool_choice="required"),
        dataclasses.replace(base, tool_choice=RequireTool("add")),
        dataclasses.replace(base, settings=ModelSettings(max_tokens=5)),
        dataclasses.replace(base, output_schema=OutputSchema("A", {"type": "object"})),
    ]
    keys = [request_key(r, "m", digests) for r in (base, *others)]
    keys.append(request_key(base, "n", digests))
    assert len(set(keys)) == len(keys)
    assert keys[: len(others) + 1] == [cold(r) for r in (base, *others)]


def test_a_changed_message_in_a_continued_conversation_is_digested_anew() -> None:
    """A request that continues a remembered conversation but changes one message misses."""
    digests = Digests()
    history = conversation(8)
    first = ModelRequest(history)
    assert request_key(first, "m", digests) == cold(first)
    changed = list(history)
    changed[10] = dataclasses.replace(history[10], parts=(ToolResultPart("c2", "add", "99"),))
    for messages in (tuple(changed), (*changed, Message.user("more"))):
        request = ModelRequest(messages)
        assert request_key(request, "m", digests) == cold(request) != cold(first)


def test_equal_requests_of_other_objects_have_equal_keys() -> None:
    """Keys follow values, not objects; the prompt-cache flag stays out of them."""
    one = ModelRequest(conversation(5), "Be brief.", (ADD,))
    rebuilt = tuple(Message(m.role, tuple(m.parts)) for m in conversation(5))
    flagged = (*rebuilt[:-1], dataclasses.replace(rebuilt[-1], cache=True))
    digests = Digests()
    assert request_key(one, "m", digests) == request_key(
        ModelRequest(rebuilt, "Be brief.", (ADD,)), "m", digests
    )
    assert cold(one) == cold(ModelRequest(flagged, "Be brief.", (ADD,)))


def test_settings_changed_in_place_change_the_key() -> None:
    """``extra`` is a mapping that can change in place: its settings are never remembered."""
    extra: dict[str, object] = {}
    request = ModelRequest((Message.user("hi"),), settings=ModelSettings(extra=extra))
    digests = Digests()
    before = request_key(request, "m", digests)
    extra["seed"] = 7
    after = request_key(request, "m", digests)
    assert before != after == cold(request)
    assert digests.of(request.settings) == Digests().of(request.settings)
    extra.clear()
    assert request_key(request, "m", digests) == before


def test_data_that_can_change_in_place_is_never_remembered() -> None:
    """A message holding a bytearray is digested each time: a change shows in its key."""
    data = bytearray(b"\x89PNG")
    request = ModelRequest((Message("user", (DataPart(data, "image/png"),)),))  # type: ignore[arg-type]
    digests = Digests()
    before = request_key(request, "m", digests)
    data[1:] = b"GIF"
    assert request_key(request, "m", digests) == cold(request) != before


def test_the_memo_is_bounded() -> None:
    """Past its bound, a memo forgets its older half; what it forgot is digested again."""
    digests = Digests(max_entries=32)
    history = conversation(100)
    for end in range(1, len(history) + 1, 7):
        request = ModelRequest(history[:end], tools=(ADD,))
        assert request_key(request, "m", digests) == cold(request)
        assert len(digests) <= 32 + 2 + 2  # messages and tools; heads and conversations
    for message in history:
        assert digests.of(message) == Digests().of(message)


def test_a_remembered_message_keeps_its_identity_from_other_messages() -> None:
    """An entry holds its message, so no new message can take its id while it is kept."""
    digests = Digests()
    message = Message.user("kept")
    kept = id(message)
    digests.of(message)
    del message
    others = [Message.user(f"other {i}") for i in range(2000)]
    assert kept not in {id(m) for m in others}


def test_ids_reused_after_eviction_never_give_a_stale_digest() -> None:
    """With a tiny memo, forgotten messages are freed and their ids reused: digests stay right."""
    digests = Digests(max_entries=2)
    seen: set[int] = set()
    reused = 0
    for i in range(500):
        message = Message.user(f"message {i}")
        reused += id(message) in seen
        seen.add(id(message))
        assert digests.of(message) == Digests().of(message)
        assert request_key(ModelRequest((message,)), "m", digests) == cold(ModelRequest((message,)))
    assert reused > 0  # the situation this test is about did happen


@pytest.mark.parametrize("part", [object(), "text"])
def test_a_part_that_is_not_fncores_is_a_type_error(part: object) -> None:
    """A message part of another type fails loudly, as storing it would."""
    with pytest.raises(TypeError, match="is not one of fncore's part types"):
        cold(ModelRequest((Message("user", (part,)),)))  # type: ignore[arg-type]


def test_branches_of_a_long_conversation_key_as_cold() -> None:
    """A conversation that branches (an answer regenerated, a turn replaced) keys as cold."""
    digests = Digests()
    history = conversation(80)
    requests = [
        history[:300],
        (*history[:200], Message.user("another turn")),
        (*history[:128], Message.user("at a checkpoint")),
        history[:129],
        history[:320],
        (*history[:300], Message.user("again"), *history[300:310]),
        history[:40],
        history,
    ]
    for messages in requests:
        request = ModelRequest(messages, tools=(ADD,))
        assert request_key(request, "m", digests) == cold(request)


def test_data_changed_in_place_in_a_long_conversation_changes_its_key() -> None:
    """A conversation's running hash never resumes past a message that may change in place."""
    data = bytearray(b"\x89PNG")
    picture = Message("user", (DataPart(data, "image/png"),))  # type: ignore[arg-type]
    history = (*conversation(20)[:70], picture, *conversation(20)[70:])
    digests = Digests()
    shorter, longer = ModelRequest(history[:75]), ModelRequest(history[:80])
    before = request_key(shorter, "m", digests)
    data[1:] = b"GIF"
    assert request_key(shorter, "m", digests) == cold(shorter) != before
    assert request_key(longer, "m", digests) == cold(longer)
    data[1:] = b"JPG"
    assert request_key(longer, "m", digests) == cold(longer)
