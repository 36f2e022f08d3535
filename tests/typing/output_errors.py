"""Wrong code with typed output: mypy (strict, no plugin) must report each marked line.

``python tests/typing/check_expected_errors.py output_errors.py`` checks it in CI.
"""

from __future__ import annotations

from pydantic import BaseModel
from returns.result import Failure, Success

from fncore import Agent, RunResult, cases, load_container
from fncore.testing import TestModel


class Weather(BaseModel):
    """A pydantic model."""

    city: str


async def main() -> None:
    """Outputs used as what they are not."""
    weather = Agent(TestModel(), output_type=Weather)
    (await weather.run("Paris")).unwrap().output.upper()  # E: attr-defined
    plain = Agent(TestModel())
    print((await plain.run("Paris")).unwrap().output.city)  # E: attr-defined
    wrong: Agent[Weather] = Agent(TestModel(), output_type=int)  # E: arg-type
    also: RunResult[Weather] = (await plain.run("hi")).unwrap()  # E: assignment
    container = load_container(environ={})
    print(container.agent(output_type=Weather).stream("x").result().city)  # E: attr-defined
    Agent(TestModel(), output_type=Weather, output_strategy="json")  # E: arg-type
    print(wrong, also)
    match cases(await weather.run("Oslo")):  # what a case binds is typed, not Any
        case Success(RunResult(output=forecast)):
            forecast.upper()  # E: attr-defined
        case Failure(error):
            print(error.celsius)  # E: attr-defined
    match cases(await plain.run("Oslo")):
        case Success(RunResult(output=text)):
            print(text.celsius)  # E: attr-defined
