"""Tool calls as servers send them: ids that may be missing, arguments that may be parsed.

Shared by the Chat Completions and Responses decoders, streaming or not, so a response
decodes to the same `ToolCallPart` values in every mode.
"""

from __future__ import annotations

import json

from fncore.core import fallback_call_id


def usable_call_id(raw: object, index: int) -> str:
    """The id of the ``index``-th tool call of a response (0-based, in order).

    A non-empty string is kept as it is, even when another call of the response has it
    too (the agent loop renames duplicates). A missing, ``null`` or empty id, or one that
    is not a string, is replaced by `fallback_call_id` of ``index``.

    Example:
        >>> usable_call_id("call_abc", 3), usable_call_id(None, 1), usable_call_id("", 0)
        ('call_abc', 'call_1', 'call_0')
    """
    return raw if isinstance(raw, str) and raw else fallback_call_id(index)


def arguments_text(raw: object) -> str:
    """Tool-call arguments, or one streamed fragment of them, as JSON text.

    A string is kept as it is, and ``None`` (no arguments) is ``""``; the decoders turn
    an empty result into ``"{}"``. Any other value is JSON a server sent parsed instead
    of as a string (some OpenAI-compatible servers send an object): it is serialised with
    `json.dumps`, so the call goes back well-formed with the next request. A value that
    is not an object (a number, a list) is serialised too rather than dropped, so the
    tool is not run without arguments and the model is told its arguments were invalid.
    A streamed object is taken as the whole arguments, not as a fragment to merge.

    Example:
        >>> arguments_text('{"a": 1}'), arguments_text({"a": 1}), arguments_text(None)
        ('{"a": 1}', '{"a": 1}', '')
    """
    if raw is None:
        return ""
    if isinstance(raw, str):
        return raw
    return json.dumps(raw)
