import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from fncore.core import (
    DataPart,
    InvalidHistory,
    MaxIterationsReached,
    Message,
    ModelResponse,
    ReasoningDelta,
    ReasoningPart,
    RequireTool,
    ResponseAssembler,
    Terminate,
    TextDelta,
    TextPart,
    Tool,
    ToolCallArgsDelta,
    ToolCallPart,
    ToolCallStarted,
    ToolResultPart,
    TooManyToolErrors,
    UnknownToolCalled,
    Usage,
    UsageReported,
    check_pairing,
)
from fncore.core._loop import (
    Fail,
    Finish,
    LoopSettings,
    LoopState,
    NextRound,
    Ready,
    Rejected,
    RunTools,
    on_response,
    on_terminate,
    on_tool_results,
    replace_history,
    start,
)
from fncore.core._pairing import open_calls, unanswered


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def echo(text: str) -> str:
    """Echo the text."""
    return text


TOOLS = {t.name: t for t in (Tool.from_function(add), Tool.from_function(echo))}
SETTINGS = LoopSettings()
USER = Message.user("what is 1 + 2?")


def calls(*parts: ToolCallPart) -> ModelResponse:
    return ModelResponse(Message("assistant", parts), Usage(3, 2, requests=1), "tool_calls")


def ok(call: ToolCallPart, content: str = "ok") -> ToolResultPart:
    return ToolResultPart(call.id, call.name, content)


def bad(call: ToolCallPart, content: str = "failed") -> ToolResultPart:
    return ToolResultPart(call.id, call.name, content, is_error=True)


def asked(state: LoopState, settings: LoopSettings = SETTINGS) -> LoopState:
    """The state after a response calling add (a round's results follow such a response)."""
    after, _ = on_response(state, calls(ADD), TOOLS, "auto", settings)
    return after


def started(*messages: Message) -> LoopState:
    state = start((USER, *messages))
    assert isinstance(state, LoopState)
    return state


ADD = ToolCallPart("c1", "add", '{"a": 1, "b": 2}')


def test_loop_settings_defaults() -> None:
    """LoopSettings carries the documented defaults."""
    s = LoopSettings()
    assert (s.max_iterations, s.max_consecutive_errors_per_request) == (40, 3)
    assert (s.terminate_on_unknown_calls, s.include_detailed_errors) == (False, False)
    assert (s.tool_timeout, s.max_concurrent_tools, s.hook_timeout) == (300.0, 8, 5.0)
    assert (s.enabled, s.max_tool_threads) == (True, 16)


@pytest.mark.parametrize(
    "field", ["max_iterations", "max_consecutive_errors_per_request", "max_concurrent_tools"]
)
def test_loop_settings_rejects_non_positive_limits(field: str) -> None:
    """LoopSettings refuses a limit below 1 with a ValueError naming the field."""
    with pytest.raises(ValueError, match=field):
        LoopSettings(**{field: 0})  # type: ignore[arg-type]


def test_start_accepts_paired_history() -> None:
    """start() on a well-paired history gives round 0, nothing new, no errors, no usage."""
    history = (USER, Message("assistant", (ADD,)), Message("tool", (ok(ADD),)))
    state = start(history)
    assert state == LoopState(history=history)
    assert isinstance(state, LoopState)
    assert (state.round, state.new, state.errors_in_a_row, state.usage) == (1, (), 0, Usage())


def test_start_rejects_unpaired_history() -> None:
    """start() fails with InvalidHistory naming the unanswered call and how to fix it."""
    decision = start((USER, Message("assistant", (ADD,))))
    assert isinstance(decision, Fail)
    assert isinstance(decision.error, InvalidHistory)
    assert "add (c1)" in decision.error.message
    assert "ToolResultPart" in decision.error.message


def test_start_begins_round_one() -> None:
    """A new run is in round 1 with the input as history and nothing new yet."""
    state = start((USER,))
    assert state == LoopState(history=(USER,), new=(), round=1, errors_in_a_row=0)


def test_tool_results_begin_the_next_round() -> None:
    """After a tool round the state counts the next round and keeps everything else."""
    state = LoopState(history=(USER,), new=(USER,), round=2, errors_in_a_row=0, usage=Usage(1))
    after, decision = on_tool_results(state, (ToolResultPart("c1", "add", "3"),), "auto", SETTINGS)
    assert isinstance(decision, NextRound)
    assert (after.round, after.errors_in_a_row, after.usage) == (3, 0, Usage(1))


def test_tool_results_fail_at_the_iteration_limit() -> None:
    """Once max_iterations rounds ran, the next tool round fails with MaxIterationsReached."""
    settings = LoopSettings(max_iterations=2)
    state = start((USER,))
    assert isinstance(state, LoopState)
    result = (ToolResultPart("c1", "add", "3"),)
    state, decision = on_tool_results(asked(state), result, "auto", settings)
    assert isinstance(decision, NextRound)
    assert state.round == 2
    state, decision = on_tool_results(asked(state), result, "auto", settings)
    assert isinstance(decision, Fail)
    assert isinstance(decision.error, MaxIterationsReached)
    assert "2 rounds" in decision.error.message
    assert "max_iterations" in decision.error.message
    assert decision.error.messages == state.new


def test_text_response_finishes_completed() -> None:
    """A response without tool calls finishes with its text, stop_reason 'completed'."""
    state = started()
    answer = Message("assistant", (ReasoningPart("hmm"), TextPart("3")))
    after, decision = on_response(
        state, ModelResponse(answer, Usage(5, 1)), TOOLS, "auto", SETTINGS
    )
    assert isinstance(decision, Finish)
    result = decision.result
    assert (result.output, result.stop_reason, result.rounds) == ("3", "completed", 1)
    assert result.messages == (answer,)
    assert result.usage == Usage(5, 1)
    assert after.new == (answer,)
    assert after.usage == Usage(5, 1)


def test_text_response_with_required_choice_still_completes() -> None:
    """Even with tool_choice='required', a plain text answer finishes as 'completed'."""
    _, decision = on_response(
        started(), ModelResponse(Message.assistant("no")), TOOLS, "required", SETTINGS
    )
    assert isinstance(decision, Finish)
    assert decision.result.stop_reason == "completed"


def test_tool_calls_become_ready_calls_with_validated_args() -> None:
    """Known tools with valid arguments become Ready with parsed args, in call order."""
    e = ToolCallPart("c2", "echo", '{"text": "hi"}')
    response = calls(ADD, e)
    after, decision = on_response(started(), response, TOOLS, "auto", SETTINGS)
    assert isinstance(decision, RunTools)
    first, second = decision.calls
    assert isinstance(first, Ready)
    assert isinstance(second, Ready)
    assert (first.call, first.tool) == (ADD, TOOLS["add"])
    assert isinstance(first.args, BaseModel)
    assert first.args.model_dump() == {"a": 1, "b": 2}
    assert second.args.model_dump() == {"text": "hi"}
    assert after.new == (response.message,)
    assert after.usage == Usage(3, 2, requests=1)


def test_unknown_tool_is_rejected_listing_available_tools() -> None:
    """An unknown tool gets an error result listing the available tools; others still run."""
    ghost = ToolCallPart("c0", "subtract", "{}")
    _, decision = on_response(started(), calls(ghost, ADD), TOOLS, "auto", SETTINGS)
    assert isinstance(decision, RunTools)
    rejected, ready = decision.calls
    assert isinstance(rejected, Rejected)
    assert isinstance(ready, Ready)
    result = rejected.result
    assert (result.call_id, result.name, result.is_error) == ("c0", "subtract", True)
    assert result.content == "Unknown tool 'subtract'. Available tools: add, echo."


def test_unknown_tool_with_no_tools_says_none() -> None:
    """With no tools offered, the unknown-tool message says none are available."""
    _, decision = on_response(started(), calls(ADD), {}, "auto", SETTINGS)
    assert isinstance(decision, RunTools)
    (rejected,) = decision.calls
    assert isinstance(rejected, Rejected)
    assert rejected.result.content.endswith("Available tools: none.")


def test_invalid_arguments_are_rejected_with_validation_message() -> None:
    """Arguments failing validation give an error result carrying the validation message."""
    broken = ToolCallPart("c1", "add", '{"a": "one"}')
    _, decision = on_response(started(), calls(broken), TOOLS, "auto", SETTINGS)
    assert isinstance(decision, RunTools)
    (rejected,) = decision.calls
    assert isinstance(rejected, Rejected)
    assert rejected.result.is_error
    assert rejected.result.content.startswith("Invalid arguments for tool 'add':")
    assert "b: Field required" in rejected.result.content


def test_tool_choice_none_rejects_every_call() -> None:
    """With tool_choice='none' every call, known or not, is rejected with an explanation."""
    ghost = ToolCallPart("c2", "ghost")
    _, decision = on_response(
        started(), calls(ADD, ghost), TOOLS, "none", LoopSettings(terminate_on_unknown_calls=True)
    )
    assert isinstance(decision, RunTools)
    assert all(isinstance(c, Rejected) for c in decision.calls)
    contents = [c.result.content for c in decision.calls if isinstance(c, Rejected)]
    assert all("tool_choice='none'" in text for text in contents)


def test_terminate_on_unknown_calls_fails_with_paired_transcript() -> None:
    """terminate_on_unknown_calls fails with UnknownToolCalled; its messages pair every call."""
    ghost = ToolCallPart("c2", "ghost")
    response = calls(ADD, ghost)
    state = started()
    after, decision = on_response(
        state, response, TOOLS, "auto", LoopSettings(terminate_on_unknown_calls=True)
    )
    assert isinstance(decision, Fail)
    error = decision.error
    assert isinstance(error, UnknownToolCalled)
    assert error.tool_name == "ghost"
    assert "'ghost'" in error.message
    assert "terminate_on_unknown_calls" in error.message
    assert check_pairing(error.messages) is None
    assert error.messages[0] == response.message
    closing = error.messages[-1]
    assert closing.role == "tool"
    assert [r.call_id for r in closing.tool_results] == ["c1", "c2"]
    assert all(r.is_error for r in closing.tool_results)
    assert after.usage == Usage(3, 2, requests=1)


def test_tool_results_append_a_tool_message_and_go_on() -> None:
    """Successful results are appended as one tool message and the loop goes to the next round."""
    after, _ = on_response(started(), calls(ADD), TOOLS, "auto", SETTINGS)
    results = (ok(ADD, "3"),)
    final, next_step = on_tool_results(after, results, "auto", SETTINGS)
    assert isinstance(next_step, NextRound)
    assert final.history[-1] == Message("tool", results)
    assert final.new[-1] == Message("tool", results)
    assert check_pairing(final.history) is None
    assert final.errors_in_a_row == 0


def test_consecutive_errors_count_and_reset() -> None:
    """A round with any error result counts; a clean round resets the count to zero."""
    state = started()
    state, _ = on_tool_results(asked(state), (bad(ADD),), "auto", SETTINGS)
    assert state.errors_in_a_row == 1
    state, _ = on_tool_results(asked(state), (ok(ADD), bad(ADD)), "auto", SETTINGS)
    assert state.errors_in_a_row == 2
    state, decision = on_tool_results(asked(state), (ok(ADD),), "auto", SETTINGS)
    assert state.errors_in_a_row == 0
    assert isinstance(decision, NextRound)


def test_too_many_tool_errors_at_the_limit() -> None:
    """The limit-th consecutive failing round fails with TooManyToolErrors carrying messages."""
    settings = LoopSettings(max_consecutive_errors_per_request=2)
    state = started()
    state, first = on_tool_results(asked(state), (bad(ADD),), "auto", settings)
    assert isinstance(first, NextRound)
    state, second = on_tool_results(asked(state), (bad(ADD),), "auto", settings)
    assert isinstance(second, Fail)
    assert isinstance(second.error, TooManyToolErrors)
    assert "2 rounds in a row" in second.error.message
    assert "max_consecutive_errors_per_request" in second.error.message
    assert second.error.messages == state.new


@pytest.mark.parametrize("choice", ["required", RequireTool("add")])
def test_required_tool_choice_finishes_after_the_calls(choice: object) -> None:
    """'required' or RequireTool finish after the tools ran: 'tool_required', results joined."""
    e = ToolCallPart("c2", "echo", '{"text": "hi"}')
    state, _ = on_response(started(), calls(ADD, e), TOOLS, choice, SETTINGS)  # type: ignore[arg-type]
    results = (ok(ADD, "3"), ok(e, "hi"))
    after, decision = on_tool_results(state, results, choice, SETTINGS)  # type: ignore[arg-type]
    assert isinstance(decision, Finish)
    result = decision.result
    assert (result.output, result.stop_reason, result.rounds) == ("3\nhi", "tool_required", 1)
    assert result.messages == after.new
    assert check_pairing(result.messages) is None
    assert result.usage == Usage(3, 2, requests=1)


def test_on_terminate_appends_results_and_assistant_message() -> None:
    """on_terminate closes the tool round with the results and ends with the text as assistant."""
    state, _ = on_response(started(), calls(ADD), TOOLS, "auto", SETTINGS)
    results = (ok(ADD, "blocked"),)
    result = on_terminate(state, Terminate("blocked"), results)
    assert result.stop_reason == "terminated"
    assert result.output == "blocked"
    assert result.messages[-2:] == (Message("tool", results), Message.assistant("blocked"))
    assert check_pairing(result.messages) is None
    assert (result.rounds, result.usage) == (1, Usage(3, 2, requests=1))


def test_on_terminate_without_results_or_text() -> None:
    """Without results nothing is closed, and an empty output adds no assistant message."""
    state = started()
    result = on_terminate(state, Terminate(""))
    assert result.messages == state.new
    assert (result.output, result.stop_reason) == ("", "terminated")


def test_replace_history_adopts_paired_history() -> None:
    """replace_history swaps the history and keeps round, new, errors and usage."""
    state = LoopState((USER, USER), (USER,), 3, 1, Usage(2))
    shorter = (Message.user("summary"),)
    assert replace_history(state, shorter) == LoopState(shorter, (USER,), 3, 1, Usage(2))


def test_replace_history_rejects_unpaired_history() -> None:
    """A compaction that drops a call's result is refused with InvalidHistory."""
    decision = replace_history(started(), (USER, Message("assistant", (ADD,))))
    assert isinstance(decision, Fail)
    assert isinstance(decision.error, InvalidHistory)


def test_assembler_builds_text_reasoning_calls_and_usage() -> None:
    """ResponseAssembler joins text, reasoning and argument fragments and sums usage."""
    a = ResponseAssembler()
    for delta in (
        ReasoningDelta("think "),
        TextDelta("Let me "),
        ReasoningDelta("hard"),
        ToolCallStarted("c1", "add"),
        ToolCallStarted("c2", "echo"),
        ToolCallArgsDelta("c1", '{"a": 1, '),
        TextDelta("add."),
        ToolCallArgsDelta("c2", '{"text": "x"}'),
        ToolCallArgsDelta("c1", '"b": 2}'),
        UsageReported(Usage(input_tokens=4)),
        UsageReported(Usage(output_tokens=6, requests=1)),
    ):
        a.add(delta)
    response = a.finish(model_name="m")
    assert response.message.parts == (
        ReasoningPart("think hard"),
        TextPart("Let me add."),
        ToolCallPart("c1", "add", '{"a": 1, "b": 2}'),
        ToolCallPart("c2", "echo", '{"text": "x"}'),
    )
    assert response.message.role == "assistant"
    assert response.usage == Usage(4, 6, requests=1)
    assert (response.finish_reason, response.model_name) == ("tool_calls", "m")


def test_assembler_defaults() -> None:
    """Text alone ends with 'stop', an argument-less call gets '{}', a given reason wins."""
    a = ResponseAssembler()
    a.add(TextDelta("hi"))
    assert a.finish().finish_reason == "stop"
    assert a.finish("length").finish_reason == "length"
    b = ResponseAssembler()
    b.add(ToolCallStarted("c1", "ping"))
    assert b.finish().tool_calls == (ToolCallPart("c1", "ping", "{}"),)
    assert ResponseAssembler().finish().message == Message("assistant", ())


# -- start's fast path for one plain message -------------------------------------------------

_parts = st.one_of(
    st.builds(TextPart, st.sampled_from(["hi", ""])),
    st.builds(ReasoningPart, st.just("thinking")),
    st.builds(DataPart, st.just(b"\x89PNG"), st.just("image/png")),
    st.builds(ToolCallPart, st.sampled_from(["c1", ""]), st.just("add")),
    st.builds(ToolResultPart, st.just("c1"), st.just("add"), st.just("3")),
)
_messages = st.builds(
    Message,
    st.sampled_from(["system", "user", "assistant", "tool"]),
    st.lists(_parts, max_size=3).map(tuple),
)
_histories = st.sampled_from(
    [(), (USER,), (USER, Message("assistant", (ToolCallPart("c1", "add"),)))]
)


def _scanned(messages: tuple[Message, ...], history: tuple[Message, ...]) -> object:
    """What `start` gives by the general scan of ``messages`` (no call left open before)."""
    found = open_calls(messages, (), offset=len(history))
    if isinstance(found, InvalidHistory):
        return Fail(found)
    if found:
        return Fail(unanswered(found))
    return LoopState(history + messages, (), 1)


@given(_messages, _histories)
def test_start_of_one_message_equals_the_general_scan(
    message: Message, history: tuple[Message, ...]
) -> None:
    """A run's usual input (one message, nothing pending) skips the scan with the same result."""
    assert start((message,), history) == _scanned((message,), history)


def test_start_of_one_message_still_refuses_a_call_or_a_result_out_of_place() -> None:
    """A result answering nothing, or a call outside an assistant message, still fails."""
    orphan = Message("tool", (ToolResultPart("c1", "add", "3"),))
    misplaced = Message("user", (ToolCallPart("c1", "add"),))
    for message in (orphan, misplaced):
        failed = start((message,))
        assert isinstance(failed, Fail)
        assert isinstance(failed.error, InvalidHistory)
    assert start((USER,), (USER,)) == LoopState((USER, USER), (), 1)
