"""The records a session store writes: fncore's JSON forms, with a format version and errors.

A record is JSON text (ASCII, so any string survives any database's text type) of one form
of `fncore.session_stores._json`, the one codec, with its format version added (``"v"``): a
record from a newer fncore is refused, not misread.

* a message: ``{"v": 1, "role": ..., "parts": [...], "cache": true}`` (``cache`` only
  when set);
* session state: ``{"v": 1, "values": {name: value}}``, each value in the stored form;
* a checkpoint: ``{"v": 1, "id": ..., ...}``, its fields but its claim.

What cannot be written raises `NotSerializable` at save time, naming where it is; what does
not decode is `SessionStoreCorrupt`, and a record naming a class that is not registered
(`register_state_type`) is too: stored data never chooses code.
"""

from __future__ import annotations

import binascii
import json
from collections.abc import Mapping
from typing import Any

from fncore.core import Checkpoint, Message
from fncore.session_stores._errors import (
    NotSerializable,
    SessionStoreCorrupt,
    written_by_newer,
)
from fncore.session_stores._json import (
    Unregistered,
    checkpoint_doc,
    checkpoint_from_doc,
    dumps,
    message_doc,
    message_from_doc,
    value_from_doc,
    values_doc,
)

MESSAGE_FORMAT = 1
"""The format version of message records this fncore writes and reads."""
STATE_FORMAT = 1
"""The format version of state records this fncore writes and reads."""
CHECKPOINT_FORMAT = 1
"""The format version of checkpoint records this fncore writes and reads."""

_UNREADABLE = (
    ValueError,
    LookupError,  # KeyError, and IndexError for a short list
    TypeError,
    AttributeError,
    RecursionError,
    binascii.Error,
)
"""What a damaged record raises while it is read."""


def _record(text: str | bytes, what: str, known: int) -> dict[str, Any]:
    """The JSON object in ``text`` at a format version this fncore reads."""
    record = json.loads(text)
    if type(record) is not dict:
        msg = f"a {what} record must be a JSON object"
        raise ValueError(msg)
    version = record.get("v")
    if type(version) is not int:
        msg = f"a {what} record has no format version"
        raise ValueError(msg)
    if version > known:
        raise written_by_newer(f"a stored {what} record", version, known)
    return record


def _corrupt(what: str, exc: Exception) -> SessionStoreCorrupt:
    if isinstance(exc, Unregistered):
        msg = f"a stored {what} cannot be read: {exc}"
    else:
        msg = f"a stored {what} cannot be read ({type(exc).__name__}: {exc}); restore the store"
    return SessionStoreCorrupt(msg)


def encode_message(message: Message) -> str:
    """The JSON record of ``message``.

    Raises:
        NotSerializable: if a part is not one of fncore's part types.

    Example:
        >>> encode_message(Message.user("hi"))
        '{"v":1,"role":"user","parts":[{"type":"text","text":"hi"}]}'
    """
    try:
        return dumps({"v": MESSAGE_FORMAT, **message_doc(message, True)})
    except TypeError as exc:
        raise NotSerializable(str(exc)) from None


def decode_message(text: str | bytes) -> Message:
    """The message a record written by `encode_message` holds.

    Raises:
        SessionStoreCorrupt: if the record is not a message record.
        SessionSchemaTooNew: if a newer fncore wrote it.

    Example:
        >>> decode_message(encode_message(Message.assistant("hello"))).text
        'hello'
    """
    try:
        return message_from_doc(_record(text, "message", MESSAGE_FORMAT))
    except _UNREADABLE as exc:
        raise _corrupt("message", exc) from None


def encode_state(state: Mapping[str, object]) -> str:
    """The JSON record of a session's state.

    Raises:
        NotSerializable: naming the key and the place in its value that cannot be stored.

    Example:
        >>> encode_state({"seen": ("a", "b")})
        '{"v":1,"values":{"seen":{"$":"tuple","items":["a","b"]}}}'
    """
    try:
        return dumps({"v": STATE_FORMAT, "values": values_doc(state, "session state")})
    except TypeError as exc:
        raise NotSerializable(str(exc)) from None
    except RecursionError:
        msg = "session state is nested too deeply (or holds a value that contains itself)"
        raise NotSerializable(msg) from None


def decode_state(text: str | bytes) -> dict[str, object]:
    """The state a record written by `encode_state` holds.

    Raises:
        SessionStoreCorrupt: if the record does not decode (or names a class that is gone).
        SessionSchemaTooNew: if a newer fncore wrote it.

    Example:
        >>> decode_state(encode_state({"seen": ("a", "b"), "n": 2}))
        {'seen': ('a', 'b'), 'n': 2}
    """
    try:
        values = _record(text, "state", STATE_FORMAT)["values"]
        if type(values) is not dict:
            msg = "the state's values must be a JSON object"
            raise ValueError(msg)
        return {key: value_from_doc(value) for key, value in values.items()}
    except _UNREADABLE as exc:
        raise _corrupt("session state", exc) from None


def encode_checkpoint(checkpoint: Checkpoint) -> str:
    """The JSON record of ``checkpoint`` (all but its claim, which stores keep in columns).

    Raises:
        NotSerializable: naming what in the checkpoint's state, metadata or settings
            cannot be stored.
    """
    try:
        return dumps({"v": CHECKPOINT_FORMAT, **checkpoint_doc(checkpoint)})
    except (TypeError, ValueError) as exc:  # ValueError: a setting that is NaN or infinite
        raise NotSerializable(f"a checkpoint cannot be stored: {exc}") from None
    except RecursionError:
        msg = "a checkpoint's state is nested too deeply (or holds a value that contains itself)"
        raise NotSerializable(msg) from None


def decode_checkpoint(text: str | bytes, claim: str, claim_until: float) -> Checkpoint:
    """The checkpoint a record written by `encode_checkpoint` holds, with its claim.

    Raises:
        SessionStoreCorrupt: if the record does not decode.
        SessionSchemaTooNew: if a newer fncore wrote it.
    """
    try:
        record = _record(text, "checkpoint", CHECKPOINT_FORMAT)
        return checkpoint_from_doc(record, claim, claim_until)
    except _UNREADABLE as exc:
        raise _corrupt("checkpoint", exc) from None
