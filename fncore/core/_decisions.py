"""A resume's decisions: checked against what its checkpoint waits for, and keyed.

Pure: a resume checks the decisions it was given here before anything runs, and stores
their key, so a second resume with other decisions is refused (a decision is taken once).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

from fncore.core._checkpoint import Checkpoint
from fncore.core._errors import DecisionError, DecisionMissing, DecisionNotAllowed, UnknownRequest
from fncore.core._pause import Approve, Decision, Edit, Reject, Respond
from fncore.core._tools import Tool

DECISION_TYPES: tuple[type, ...] = (Approve, Edit, Reject, Respond)
"""The types a decision may have."""


def decision_doc(decision: Decision) -> dict[str, object]:
    """``decision`` as a JSON document: its kind, and what it carries.

    Example:
        >>> decision_doc(Reject("not now"))
        {'kind': 'reject', 'message': 'not now'}
    """
    if type(decision) is Edit:
        return {"kind": "edit", "arguments": dict(decision.arguments)}
    if type(decision) is Reject or type(decision) is Respond:
        return {"kind": decision.kind, "message": decision.message}
    return {"kind": decision.kind}


def decision_key(decided: Mapping[str, Decision]) -> str:
    """The idempotency key of a set of decisions: equal decisions, equal keys.

    Example:
        >>> decision_key({"a": Approve()}) == decision_key({"a": Approve()})
        True
        >>> decision_key({"a": Approve()}) == decision_key({"a": Reject()})
        False
    """
    doc = {call_id: decision_doc(d) for call_id, d in decided.items()}
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def decisions_for(
    checkpoint: Checkpoint,
    decisions: Mapping[str, Decision] | Decision,
    tools: Mapping[str, Tool],
) -> dict[str, Decision] | DecisionError:
    """``decisions`` by call id, checked against what ``checkpoint`` waits for.

    Args:
        checkpoint: The paused run's checkpoint.
        decisions: A decision per waiting call id, or one decision for every one.
        tools: The agent's tools, by name: an edit's arguments must fit its tool.

    Returns:
        The decisions by call id, or the first error found (nothing is decided then).
    """
    cid = checkpoint.id
    requests = {r.call_id: r for r in checkpoint.requests}
    waiting = ", ".join(map(repr, requests)) or "none"
    if isinstance(decisions, Mapping):
        decided: dict[str, Decision] = dict(decisions)
    else:
        decided = dict.fromkeys(requests, decisions)
    for call_id, decision in decided.items():
        request = requests.get(call_id)
        if request is None:
            return UnknownRequest(
                message=(
                    f"checkpoint {cid!r} does not wait for call {call_id!r} (it waits for: "
                    f"{waiting})"
                ),
                checkpoint_id=cid,
                call_id=call_id,
            )
        if not isinstance(decision, DECISION_TYPES):
            return DecisionNotAllowed(
                message=(
                    f"the decision for call {call_id!r} is a {type(decision).__name__}; "
                    "decide with Approve(), Edit(arguments), Reject(message) or "
                    "Respond(message)"
                ),
                checkpoint_id=cid,
                call_id=call_id,
            )
        if decision.kind not in request.allowed:
            return DecisionNotAllowed(
                message=(
                    f"call {call_id!r} allows {', '.join(request.allowed)}, not {decision.kind}"
                ),
                checkpoint_id=cid,
                call_id=call_id,
            )
        if type(decision) is Edit and request.tool is not None:
            tool = tools.get(request.tool)
            problem = None
            if tool is not None:
                try:
                    checked = tool.check(json.dumps(dict(decision.arguments)))
                except (TypeError, ValueError) as exc:
                    checked = f"they are not JSON values ({exc})"
                problem = checked if type(checked) is str else None
            if problem is not None:
                return DecisionNotAllowed(
                    message=(
                        f"the edited arguments of call {call_id!r} do not fit tool "
                        f"{request.tool!r}: {problem}"
                    ),
                    checkpoint_id=cid,
                    call_id=call_id,
                )
    missing = [call_id for call_id in requests if call_id not in decided]
    if missing:
        return DecisionMissing(
            message=(
                f"checkpoint {cid!r} waits for a decision on {', '.join(map(repr, missing))} "
                "too; decide every request (or pass one decision for all)"
            ),
            checkpoint_id=cid,
            call_id=missing[0],
        )
    return decided
