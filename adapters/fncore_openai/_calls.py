"""Tool-call arguments as servers send them: text, or JSON already parsed.

Shared by the Chat Completions and Responses decoders, streaming or not, so a response
decodes to the same `ToolCallPart` values in every mode (ids: `fncore.adapter.usable_call_id`).
"""

from __future__ import annotations

import json


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
