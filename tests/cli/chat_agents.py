"""Agents for the ``fncore chat`` tests, loaded with ``--agent chat_agents:NAME``.

Their model answers ``turn N: TEXT`` (N counts the user's messages it sees, so a reply
shows whether the conversation went on), and on ``block`` streams ``thinking`` and then
waits until it is cancelled; on ``fail`` it answers with an error.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from returns.result import Result, Success

from fncore import (
    Agent,
    Message,
    ModelError,
    ModelRequest,
    ModelResponse,
    SqliteSessionStore,
)
from fncore.core import ModelStreamItem
from fncore.events import TextDelta
from fncore.testing import deltas

BLOCK = "block"
"""The prompt whose answer never ends by itself."""
STARTED = "thinking"
"""What the model streams of that answer before it waits."""
FAIL = "fail"
"""The prompt the model answers with an error (the run fails)."""
DOWN = "the model is down"
"""That error's message."""
STORE = "chat_sessions.db"
"""The SQLite file, in the current directory, that `stored` keeps its sessions in."""


def _reply(request: ModelRequest) -> ModelResponse:
    turns = sum(message.role == "user" for message in request.messages)
    return ModelResponse(Message.assistant(f"turn {turns}: {request.messages[-1].text}"))


class TurnModel:
    """Answers each request with the turn it is on; `BLOCK` waits until cancelled."""

    name = "turns"

    async def request(self, request: ModelRequest) -> Result[ModelResponse, ModelError]:
        """The whole answer (`BLOCK` is not answered here: the chat streams)."""
        return Success(_reply(request))

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamItem]:
        """The answer four characters at a time; `BLOCK` streams `STARTED`, then waits."""
        if request.messages[-1].text == FAIL:
            yield ModelError(message=DOWN)
            return
        if request.messages[-1].text == BLOCK:
            yield TextDelta(STARTED)
            await asyncio.Event().wait()  # until the chat cancels the turn
        response = _reply(request)
        for delta in deltas(response, chunk=4):
            yield delta
        yield response


def memory() -> Agent:
    """The agent with its default (in-memory) session store."""
    return Agent(TurnModel())


def stored() -> Agent:
    """The agent with its sessions in the SQLite file `STORE` names."""
    return Agent(TurnModel(), sessions=SqliteSessionStore(STORE))
