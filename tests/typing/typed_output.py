"""Checked by ``mypy --strict``, with no plugin: typed structured output is exact.

``Agent(..., output_type=T)`` is an ``Agent[T]``; ``run``, ``stream`` (its `RunCompleted`
and ``result()``), ``resume`` and ``container.agent(output_type=T)`` all carry ``T``;
without ``output_type`` everything stays ``str``, spelled as before. ``output_errors.py``
holds the wrong code these types reject.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import assert_type

from pydantic import BaseModel
from returns.result import Failure, Result, Success
from typing_extensions import TypedDict

from fncore import (
    Agent,
    AgentError,
    Approve,
    Container,
    Registry,
    RunOutcome,
    RunResult,
    RunStream,
    cases,
    load_container,
)
from fncore.events import RunCompleted, TextDelta
from fncore.testing import FunctionModel, TestModel


class Weather(BaseModel):
    """A pydantic model."""

    city: str
    celsius: float


@dataclass
class Point:
    """A dataclass."""

    x: int
    y: int


class Person(TypedDict):
    """A TypedDict."""

    name: str
    age: int


async def main() -> None:
    """Each kind of output type, through each way of running."""
    plain = Agent(TestModel(), registry=Registry())
    assert_type(plain, Agent[str])
    assert_type(plain, Agent)
    assert_type(await plain.run("hi"), Result[RunResult[str], AgentError])
    assert_type((await plain.run("hi")).unwrap().output, str)

    weather = Agent(TestModel(), registry=Registry(), output_type=Weather)
    assert_type(weather, Agent[Weather])
    outcome = await weather.run("Paris")
    assert_type(outcome, Result[RunResult[Weather], AgentError])
    assert_type(outcome.unwrap().output, Weather)
    assert_type(outcome.map(lambda r: r.output.celsius), Result[float, AgentError])
    assert_type(outcome, RunOutcome[Weather])
    match cases(outcome):
        case Success(RunResult(output=Weather(celsius=celsius))):
            assert_type(celsius, float)
        case Failure(error):
            assert_type(error, AgentError)
    match cases(outcome):
        case Success(RunResult(output=output)):
            assert_type(output, Weather)
        case Failure(_):
            pass
    narrowed = cases(outcome)
    if isinstance(narrowed, Success):
        assert_type(narrowed.unwrap().output, Weather)

    stream = weather.stream("Paris")
    assert_type(stream, RunStream[Weather])
    async for event in stream:
        if isinstance(event, RunCompleted):
            assert_type(event, RunCompleted[Weather])
            assert_type(event.outcome, Result[RunResult[Weather], AgentError])
        elif isinstance(event, TextDelta):
            assert_type(event.text, str)
    assert_type(await weather.stream("Rome").result(), Result[RunResult[Weather], AgentError])
    assert_type(await weather.resume("cid", Approve()), Result[RunResult[Weather], AgentError])
    assert_type(weather.resume_stream("cid", Approve()), RunStream[Weather])

    point = Agent(FunctionModel(lambda r: '{"x": 1, "y": 2}'), output_type=Point)
    assert_type((await point.run("where")).unwrap().output, Point)
    person = Agent(TestModel(), output_type=Person, output_strategy="tool")
    assert_type((await person.run("who")).unwrap().output, Person)
    assert_type((await person.run("who")).unwrap().output["age"], int)
    number = Agent(TestModel(), output_type=int, output_retries=2)
    assert_type((await number.run("how many")).unwrap().output, int)
    numbers = Agent(TestModel(), output_type=list[float])
    assert_type((await numbers.run("which")).unwrap().output, list[float])
    async with Agent(TestModel(), output_type=Weather) as entered:  # connects, then closes
        assert_type(entered, Agent[Weather])

    container = load_container(environ={})
    assert_type(container.agent(), Agent[str])
    assert_type(container.agent(output_type=Weather), Agent[Weather])
    assert_type(
        await container.agent(output_type=Weather, name="w").run("Oslo"),
        Result[RunResult[Weather], AgentError],
    )
    assert_type(Container().agent(output_type=Point), Agent[Point])

    text: RunResult = (await plain.run("hi")).unwrap()
    assert_type(text.output, str)
    match cases(await plain.run("hi")):
        case Success(RunResult(output=answer)):
            assert_type(answer, str)
        case Failure(error):
            assert_type(error, AgentError)
