"""The issue's "done when", as a newcomer runs it: ``fncore serve --agent myapp:agent``.

A module of their own in a directory of their own; the server on a free port; then the
official ``openai`` SDK, the AG-UI client of ``examples/``, and a paused call approved over
the approvals API. (Approving it in the browser is the console inbox's test.)
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import httpx2
import openai
import pytest
from openai import OpenAI
from processes import serving

ROOT = Path(__file__).resolve().parents[2]

MYAPP = '''
from fncore import Agent, ModelRequest, Registry
from fncore.middleware import approve
from fncore.testing import FunctionModel, tool_calls


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def refund(order: str, amount: int) -> str:
    """Refund an order."""
    return f"refunded {amount} EUR on order {order}"


def reply(request: ModelRequest):
    """Calls refund when asked to, add otherwise; then answers with the tool's result."""
    last = request.messages[-1]
    if last.role == "user":
        if "refund" in last.text:
            return tool_calls(("refund", {"order": "A-17", "amount": 20}))
        return tool_calls(("add", {"a": 2, "b": 3}))
    return "Done: " + " ".join(result.content for result in last.tool_results)


agent = Agent(FunctionModel(reply), registry=approve(["refund"]), tools=[add, refund])
'''


def test_a_newcomers_agent_answers_the_sdk_streams_ag_ui_and_waits_for_approval(
    tmp_path: Path,
) -> None:
    """``fncore serve --agent myapp:agent --port 0``, then each client; SIGTERM exits 0."""
    (tmp_path / "myapp.py").write_text(MYAPP)
    with serving(tmp_path, "--agent", "myapp:agent", "--port", "0") as server:
        url = server.url
        add = [{"role": "user", "content": "add 2 and 3"}]
        with OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0) as client:
            reply = client.chat.completions.create(model="fncore", messages=add)  # type: ignore[arg-type]
            assert reply.choices[0].message.content == "Done: 5"
            streamed = client.chat.completions.create(model="fncore", messages=add, stream=True)  # type: ignore[arg-type]
            assert "".join(c.choices[0].delta.content or "" for c in streamed if c.choices) == (
                "Done: 5"
            )

            agui = subprocess.run(
                [sys.executable, str(ROOT / "examples" / "agui_client.py"), url, "add 2 and 3"],
                capture_output=True,
                text=True,
                check=True,
            )
            kinds = [line.split(" ", 1)[0] for line in agui.stdout.splitlines()]
            assert kinds[0] == "RUN_STARTED"
            assert "TOOL_CALL_RESULT" in kinds
            assert kinds[-1] == "RUN_FINISHED"
            assert '"result":"Done: 5"' in agui.stdout.splitlines()[-1]

            refund = [{"role": "user", "content": "refund order A-17"}]
            with pytest.raises(openai.ConflictError) as paused:
                client.chat.completions.create(
                    model="fncore",
                    messages=refund,  # type: ignore[arg-type]
                    extra_headers={"fncore-session": "ada"},
                )
        body = paused.value.body
        assert isinstance(body, dict)
        checkpoint = body["checkpoint_id"]
        assert [call["tool"] for call in body["pending"]] == ["refund"]

        with httpx2.Client(base_url=url) as http:
            waiting = http.get("/api/approvals").json()["data"]
            assert [(c["id"], c["session_id"]) for c in waiting] == [(checkpoint, "ada")]
            assert waiting[0]["pending"][0]["arguments"] == {"order": "A-17", "amount": 20}
            decided = http.post(
                f"/api/approvals/{checkpoint}", json={"decision": {"kind": "approve"}}
            )
            assert decided.status_code == 200
            assert decided.json()["output"] == "Done: refunded 20 EUR on order A-17"
            assert http.get("/api/approvals").json()["data"] == []
            session = http.get("/api/sessions/ada").json()
        turn = [(m["role"], [p["type"] for p in m["parts"]]) for m in session["messages"]]
        assert turn == [
            ("user", ["text"]),
            ("assistant", ["tool_call"]),
            ("tool", ["tool_result"]),
            ("assistant", ["text"]),
        ]
        assert json.dumps(session["messages"][-1]).count("refunded 20 EUR") == 1
        assert server.stop(signal.SIGTERM) == (0, "")
