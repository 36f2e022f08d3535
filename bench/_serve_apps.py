"""The ASGI apps ``serve.py`` measures, each run by uvicorn in a server process of its own.

uvicorn loads them by factory (``--app-dir bench --factory _serve_apps:NAME``):

* `overhead_app`: fncore's `create_app` on the reference workload, with one more route,
  ``POST /plain``, a plain Starlette endpoint that awaits the same agent's ``run`` and
  returns JSON: the floor ``/v1/chat/completions`` is measured against, in the same app;
* `streams_app`: fncore's app on `EchoModel`, whose answer depends on the prompt and is
  streamed in `CHUNKS` pieces, the model giving the event loop a turn before each;
* `pydantic_ai_app`: the reference workload on Pydantic AI's AG-UI endpoint (only in a venv
  that has ``pydantic-ai-slim[ag-ui]``; never fncore's).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from returns.result import Result, Success
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from fncore import Agent, Message, ModelError, ModelRequest, ModelResponse, Registry, Tool, Usage
from fncore.core import ModelStreamItem, TextDelta
from fncore.serve import create_app

if TYPE_CHECKING:  # mypy reads bench/ as a package (see bench/__init__.py)
    from bench import _measure
else:  # loaded by uvicorn with bench/ as its app dir
    import _measure

ANSWER = "1 + 2 = 3."
"""The reference workload's final text."""
CHUNKS = 8
"""How many pieces `EchoModel` streams an answer in."""


def echo_answer(prompt: str) -> str:
    """`EchoModel`'s answer to ``prompt``: made of the prompt, so that no two prompts share it.

    Example:
        >>> echo_answer("stream 7")[:24]
        '<stream 7:0> <stream 7:1'
    """
    return "".join(f"<{prompt}:{n}> " for n in range(CHUNKS))


class StreamingInstantModel(_measure.InstantModel):
    """The reference workload's model, streaming its final text as one delta."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamItem]:
        """The tool call unstreamed; the text as a delta, then the response."""
        response = (await self.request(request)).unwrap()
        if response.finish_reason == "stop":
            yield TextDelta(ANSWER)
        yield response


class EchoModel:
    """Streams `echo_answer` of the last user message in `CHUNKS` pieces, yielding before each."""

    name = "echo"

    async def request(self, request: ModelRequest) -> Result[ModelResponse, ModelError]:
        """The whole answer at once."""
        text = echo_answer(request.messages[-1].text)
        return Success(ModelResponse(Message.assistant(text), Usage(10, CHUNKS), "stop", "echo"))

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamItem]:
        """The answer piece by piece, the event loop getting a turn before each piece."""
        prompt = request.messages[-1].text
        for n in range(CHUNKS):
            await asyncio.sleep(0)
            yield TextDelta(f"<{prompt}:{n}> ")
        yield (await self.request(request)).unwrap()


def overhead_app() -> Starlette:
    """The fncore app on the reference workload, plus ``POST /plain`` awaiting the same agent."""
    tool = Tool.from_function(_measure.add, inline=True)
    agent = Agent(StreamingInstantModel(), registry=Registry(), tools=[tool])
    app = create_app(agent)

    async def plain(request: Request) -> Response:
        body = await request.json()
        result = (await agent.run(body["messages"][-1]["content"])).unwrap()
        usage = result.usage
        return JSONResponse(
            {
                "content": result.output,
                "usage": {"input": usage.input_tokens, "output": usage.output_tokens},
            }
        )

    app.add_route("/plain", plain, methods=["POST"])
    return app


def streams_app() -> Starlette:
    """The fncore app on `EchoModel`."""
    return create_app(Agent(EchoModel(), registry=Registry()))


def pydantic_ai_app() -> Starlette:
    """Pydantic AI's AG-UI endpoint at ``POST /ag-ui``, on the reference workload streamed.

    ``Agent.to_ag_ui()`` is gone from ``pydantic-ai-slim`` 2.68: its AG-UI app is
    ``AGUIAdapter.dispatch_request`` in a Starlette route.
    """
    from pydantic_ai import Agent as PydanticAgent
    from pydantic_ai.messages import ToolReturnPart
    from pydantic_ai.models.function import DeltaToolCall, FunctionModel
    from pydantic_ai.ui.ag_ui import AGUIAdapter

    async def answer(messages: list[Any], info: Any) -> AsyncIterator[Any]:
        if isinstance(messages[-1].parts[-1], ToolReturnPart):
            yield ANSWER
        else:
            yield {0: DeltaToolCall("add", '{"a": 1, "b": 2}', tool_call_id="call_0")}

    agent = PydanticAgent(FunctionModel(stream_function=answer))

    @agent.tool_plain
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    async def ag_ui(request: Request) -> Response:
        response: Response = await AGUIAdapter.dispatch_request(request, agent=agent)
        return response

    return Starlette(routes=[Route("/ag-ui", ag_ui, methods=["POST"])])
