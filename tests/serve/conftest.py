"""Fixtures: an agent with a tool to serve, and a real server with an OpenAI client."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import pytest
from openai import OpenAI
from served import add, running
from starlette.applications import Starlette

from fncore import Agent, Registry
from fncore.testing import TestModel


@pytest.fixture
def model() -> TestModel:
    """The offline model: it calls every tool offered, then answers from the results."""
    return TestModel()


@pytest.fixture
def agent(model: TestModel) -> Agent:
    """An agent whose one tool, ``add``, runs on the server."""
    return Agent(model, registry=Registry(), tools=[add])


@pytest.fixture
def serve() -> Iterator[Callable[[Starlette], OpenAI]]:
    """Start an app on a real server; an OpenAI SDK client talking to it."""
    with contextlib.ExitStack() as stack:

        def start(app: Starlette) -> OpenAI:
            base_url = stack.enter_context(running(app))
            return stack.enter_context(OpenAI(base_url=base_url, api_key="x"))

        yield start
