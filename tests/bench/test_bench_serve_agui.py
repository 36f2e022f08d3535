"""bench/serve.py's check of an AG-UI stream: a run that errs or stops short is refused.

The side by side counts requests per second; a server that answered with errors (or
half a stream) quickly must not count, so each stream is checked whole.
"""

from __future__ import annotations

from bench_runs import run_code

CHECKS = """
import sys
sys.path.insert(0, sys.argv[1])
import serve

def run(*middle):
    return [{"type": "RUN_STARTED"}, *middle, {"type": "RUN_FINISHED"}]

call = [
    {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "add"},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "{}"},
    {"type": "TOOL_CALL_END", "toolCallId": "c"},
    {"type": "TOOL_CALL_RESULT", "toolCallId": "c", "content": "3"},
]
text = [
    {"type": "TEXT_MESSAGE_START", "messageId": "m"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "1 + 2 = 3."},
    {"type": "TEXT_MESSAGE_END", "messageId": "m"},
]
print(serve.agui_answer(run(*call, *text), "good"))
broken = {
    "unfinished": run(*call, *text)[:-1],
    "errored": [*run(*call, *text)[:-1], {"type": "RUN_ERROR", "message": "boom"}],
    "no call": run(*text),
    "wrong result": run(*call[:3], {**call[3], "content": "4"}, *text),
    "unended call": run(call[0], call[3], *text),
    "unended text": run(*call, *text[:2]),
}
for name, events in broken.items():
    try:
        serve.agui_answer(events, name)
    except RuntimeError:
        print("refused", name)
"""


def test_an_agui_stream_is_checked_whole() -> None:
    """A complete run gives its text; every broken one raises."""
    done = run_code(CHECKS)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "1 + 2 = 3.",
        "refused unfinished",
        "refused errored",
        "refused no call",
        "refused wrong result",
        "refused unended call",
        "refused unended text",
    ]
