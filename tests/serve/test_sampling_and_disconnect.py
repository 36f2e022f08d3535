"""What a request gives its run: sampling settings, and cancellation when its client leaves."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import urllib.request
from collections.abc import Callable

import openai
import pytest
from openai import OpenAI
from served import running
from starlette.applications import Starlette

from fncore import Agent, ModelRequest, ModelSettings, Registry
from fncore.serve import create_app
from fncore.testing import FunctionModel, TestModel

Serve = Callable[[Starlette], OpenAI]
USER = [{"role": "user", "content": "hi"}]
SAFETY_SECONDS = 120
"""How long the server may take to notice (a hang guard; nothing waits for it)."""


def test_a_requests_sampling_fields_reach_the_model(serve: Serve, model: TestModel) -> None:
    """temperature, top_p, max tokens, stop and seed override the agent's own settings."""
    agent = Agent(model, registry=Registry(), model_settings=ModelSettings(seed=3, top_p=0.5))
    client = serve(create_app(agent))
    client.chat.completions.create(
        model="fncore",
        messages=USER,  # type: ignore[arg-type]
        temperature=0.25,
        max_completion_tokens=64,
        stop=["END", "STOP"],
    )
    assert model.requests[-1].settings == ModelSettings(
        temperature=0.25, max_tokens=64, top_p=0.5, stop=("END", "STOP"), seed=3
    )
    list(
        client.chat.completions.create(
            model="fncore",
            messages=USER,  # type: ignore[arg-type]
            stream=True,
            top_p=0.9,
            max_tokens=7,
            stop="END",
            seed=11,
        )
    )
    assert model.requests[-1].settings == ModelSettings(
        max_tokens=7, top_p=0.9, stop=("END",), seed=11
    )
    client.chat.completions.create(model="fncore", messages=USER)  # type: ignore[arg-type]
    assert model.requests[-1].settings == ModelSettings(seed=3, top_p=0.5)


def test_a_sampling_field_out_of_range_is_a_400_naming_it(serve: Serve) -> None:
    """A temperature above 2 is refused with the field named, as OpenAI does."""
    client = serve(create_app(Agent(TestModel(), registry=Registry())))
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model="fncore", messages=USER, temperature=3)  # type: ignore[arg-type]
    assert refused.value.status_code == 400
    assert isinstance(refused.value.body, dict)
    assert refused.value.body["param"] == "temperature"


class Blocking:
    """A model that answers its first request, then blocks until its run is cancelled."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.cancelled = threading.Event()
        self.model = FunctionModel(self.reply)

    async def reply(self, request: ModelRequest) -> str:
        """The first answer; later, wait forever, noting the cancellation that ends it."""
        if len(self.model.requests) == 1:
            return "first answer"
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        return "never"


def session(root: str, name: str) -> object:
    """The stored session ``name``, as ``GET /api/sessions/{id}`` answers."""
    with urllib.request.urlopen(f"{root}/api/sessions/{name}") as answer:
        return json.load(answer)


def test_a_client_that_leaves_mid_stream_cancels_its_run_and_the_session_stays() -> None:
    """Closing the connection cancels the run; the session is as it was before the request."""
    blocking = Blocking()
    app = create_app(Agent(blocking.model, registry=Registry()))
    with running(app) as base_url:
        root = base_url.removesuffix("/v1")
        with OpenAI(base_url=base_url, api_key="x") as client:
            client.chat.completions.create(
                model="fncore",
                messages=USER,  # type: ignore[arg-type]
                extra_headers={"fncore-session": "ada"},
            )
        before = session(root, "ada")
        host, port = root.removeprefix("http://").split(":")
        body = json.dumps({"model": "fncore", "messages": USER, "stream": True}).encode()
        head = (
            "POST /v1/chat/completions HTTP/1.1\r\nhost: test\r\n"
            "content-type: application/json\r\nfncore-session: ada\r\n"
            f"content-length: {len(body)}\r\n\r\n"
        )
        with socket.create_connection((host, int(port))) as sock:
            sock.sendall(head.encode() + body)
            received = b""
            while b"data:" not in received:  # the first chunk: the stream is under way
                part = sock.recv(4096)
                assert part, received
                received += part
            assert received.startswith(b"HTTP/1.1 200")
            assert blocking.started.wait(SAFETY_SECONDS)
        assert blocking.cancelled.wait(SAFETY_SECONDS)
        assert session(root, "ada") == before


def test_a_turn_that_loses_its_sessions_race_is_a_409_and_saves_nothing() -> None:
    """Two requests on one session: the one that commits second gets a 409 SessionConflict."""
    release, waiting = threading.Event(), threading.Event()

    async def reply(request: ModelRequest) -> str:
        if request.messages[-1].text == "slow":
            waiting.set()
            await asyncio.to_thread(release.wait, SAFETY_SECONDS)
        return f"answer to {request.messages[-1].text}"

    app = create_app(Agent(FunctionModel(reply), registry=Registry()))
    outcome: list[BaseException] = []

    def slow(client: OpenAI) -> None:
        try:
            client.chat.completions.create(
                model="fncore",
                messages=[{"role": "user", "content": "slow"}],
                extra_headers={"fncore-session": "ada"},
            )
        except openai.APIStatusError as exc:
            outcome.append(exc)

    with running(app) as base_url, OpenAI(base_url=base_url, api_key="x") as client:
        first = threading.Thread(target=slow, args=(client,))
        first.start()
        assert waiting.wait(SAFETY_SECONDS)  # the slow turn has loaded the session
        quick = client.chat.completions.create(
            model="fncore",
            messages=[{"role": "user", "content": "quick"}],
            extra_headers={"fncore-session": "ada"},
        )
        assert quick.choices[0].message.content == "answer to quick"
        release.set()
        first.join(SAFETY_SECONDS)
        stored = session(base_url.removesuffix("/v1"), "ada")
    [conflict] = outcome
    assert isinstance(conflict, openai.ConflictError)
    assert isinstance(conflict.body, dict)
    assert conflict.body["type"] == "session_conflict"
    assert conflict.body["code"] == "SessionConflict"
    assert "slow" not in json.dumps(stored)
    assert "answer to quick" in json.dumps(stored)
